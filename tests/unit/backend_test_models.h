// Small models exercising the patterns the library backends claim; shared by
// the per-backend tests so each backend is checked on the same shapes.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "onnx_test_model.h"

namespace collage::testing {

inline Tensor random_tensor_f32(const Shape& shape, uint32_t seed, float scale = 0.5f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

struct ConvCase {
  std::string name;
  int64_t n, c, h, w, m, k, stride, pad_begin, pad_end, dilation, group;
  bool bias, one_d = false;
};

inline const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {"3x3_pad1", 1, 5, 7, 9, 8, 3, 1, 1, 1, 1, 1, true},
      {"stride2_asym_pad", 2, 3, 9, 7, 4, 3, 2, 0, 1, 1, 1, false},
      {"dilated", 1, 4, 11, 10, 6, 3, 1, 2, 2, 2, 1, true},
      {"grouped", 1, 6, 8, 8, 9, 3, 1, 1, 1, 1, 3, true},
      {"depthwise", 2, 8, 9, 9, 8, 3, 2, 1, 1, 1, 8, true},
      {"pointwise", 1, 16, 6, 5, 12, 1, 1, 0, 0, 1, 1, true},
      {"1d", 2, 3, 1, 17, 5, 5, 2, 2, 2, 1, 1, true, true},
  };
  return cases;
}

inline int64_t conv_out(int64_t in, const ConvCase& cc) {
  return (in + cc.pad_begin + cc.pad_end - ((cc.k - 1) * cc.dilation + 1)) / cc.stride + 1;
}

// Two convolutions of x with the same geometry: Conv -> Clip(0, 0.3) and
// Conv -> Add(residual input r) -> Relu.
inline Graph conv_model(const ConvCase& cc, uint32_t seed = 1) {
  OnnxTestModel m(17);
  Shape xs = cc.one_d ? Shape{cc.n, cc.c, cc.w} : Shape{cc.n, cc.c, cc.h, cc.w};
  Shape rs = cc.one_d ? Shape{cc.n, cc.m, conv_out(cc.w, cc)}
                      : Shape{cc.n, cc.m, conv_out(cc.h, cc), conv_out(cc.w, cc)};
  m.input("x", xs);
  m.input("r", rs);
  Shape ws = cc.one_d ? Shape{cc.m, cc.c / cc.group, cc.k} : Shape{cc.m, cc.c / cc.group, cc.k, cc.k};
  int64_t sp = cc.one_d ? 1 : 2;
  std::vector<int64_t> pads;
  for (int64_t i = 0; i < sp; ++i) pads.push_back(cc.pad_begin);
  for (int64_t i = 0; i < sp; ++i) pads.push_back(cc.pad_end);
  for (int branch = 0; branch < 2; ++branch) {
    std::string w = "w" + std::to_string(branch), b = "b" + std::to_string(branch),
                c = "c" + std::to_string(branch);
    m.initializer(w, random_tensor_f32(ws, seed + 2 * static_cast<uint32_t>(branch)));
    std::vector<std::string> ins = {"x", w};
    if (cc.bias) {
      m.initializer(b, random_tensor_f32({cc.m}, seed + 7));
      ins.push_back(b);
    }
    auto& conv = m.node("Conv", ins, {c});
    OnnxTestModel::attr_ints(conv, "strides", std::vector<int64_t>(static_cast<size_t>(sp), cc.stride));
    OnnxTestModel::attr_ints(conv, "dilations", std::vector<int64_t>(static_cast<size_t>(sp), cc.dilation));
    OnnxTestModel::attr_ints(conv, "pads", pads);
    OnnxTestModel::attr_int(conv, "group", cc.group);
  }
  m.initializer("lo", Tensor::scalar<float>(0.0f));
  m.initializer("hi", Tensor::scalar<float>(0.3f));
  m.node("Clip", {"c0", "lo", "hi"}, {"z"});
  m.node("Add", {"c1", "r"}, {"a"});
  m.node("Relu", {"a"}, {"y"});
  m.output("y");
  m.output("z");
  return import_model(m);
}

// Gemm(transB) + Relu; MatMul (batched, constant B) + Add(bias) + Tanh; MatMul of two activations.
inline Graph dense_model(int64_t batch, int64_t in, int64_t out, uint32_t seed = 3) {
  OnnxTestModel m(17);
  m.input("x", {batch, in});
  m.input("s", {2, batch, in});
  m.initializer("w", random_tensor_f32({out, in}, seed));
  m.initializer("bias", random_tensor_f32({out}, seed + 1));
  auto& gemm = m.node("Gemm", {"x", "w", "bias"}, {"g"});
  OnnxTestModel::attr_int(gemm, "transB", 1);
  m.node("Relu", {"g"}, {"y1"});
  m.initializer("wt", random_tensor_f32({in, out}, seed + 2));
  m.node("MatMul", {"s", "wt"}, {"mm"});
  m.node("Add", {"mm", "bias"}, {"mb"});
  m.node("Tanh", {"mb"}, {"y2"});
  m.initializer("perm", Tensor(DType::Int64, {0}));
  auto& tr = m.node("Transpose", {"s"}, {"st"});
  OnnxTestModel::attr_ints(tr, "perm", {0, 2, 1});
  m.node("MatMul", {"s", "st"}, {"y3"});  // [2, batch, batch]: both operands at run time
  m.output("y1");
  m.output("y2");
  m.output("y3");
  return import_model(m);
}

// y = GELU(x) as torch.onnx.export writes the erf form: Div by sqrt(2), Erf, Add 1, Mul by x, Mul by
// 0.5 (the constants and intermediate values named after y).
inline void erf_gelu(OnnxTestModel& m, const std::string& x, const std::string& y) {
  m.initializer(y + "_sqrt2", Tensor::scalar<float>(1.4142135f));
  m.initializer(y + "_one", Tensor::scalar<float>(1.0f));
  m.initializer(y + "_half", Tensor::scalar<float>(0.5f));
  m.node("Div", {x, y + "_sqrt2"}, {y + "_d"});
  m.node("Erf", {y + "_d"}, {y + "_e"});
  m.node("Add", {y + "_e", y + "_one"}, {y + "_e1"});
  m.node("Mul", {x, y + "_e1"}, {y + "_p"});
  m.node("Mul", {y + "_p", y + "_half"}, {y});
}

// A BERT feed-forward block as torch.onnx.export writes it, from input "x" [1, tokens, width] to "y":
// MatMul, bias Add (bias first), erf GELU, MatMul to width, bias Add, residual Add of x. Not marked
// as an output, so a test can add more to the model.
inline void feed_forward_block(OnnxTestModel& m, int64_t tokens, int64_t width, int64_t hidden) {
  m.input("x", {1, tokens, width});
  m.initializer("w1", random_tensor_f32({width, hidden}, 21));
  m.initializer("b1", random_tensor_f32({hidden}, 22));
  m.initializer("w2", random_tensor_f32({hidden, width}, 23));
  m.initializer("b2", random_tensor_f32({width}, 24));
  m.node("MatMul", {"x", "w1"}, {"mm"});
  m.node("Add", {"b1", "mm"}, {"h"});
  erf_gelu(m, "h", "g");
  m.node("MatMul", {"g", "w2"}, {"mm2"});
  m.node("Add", {"mm2", "b2"}, {"h2"});
  m.node("Add", {"h2", "x"}, {"y"});
}

}  // namespace collage::testing
