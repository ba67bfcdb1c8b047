// Edge cases of the native compute kernels, checked against identities and
// hand-computed values (ONNX's own cases run in the conformance runner).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/native/native_ops.h"

namespace collage {
namespace {

Node make(const std::string& op, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.name = "t";
  n.op_type = op;
  n.opset = 17;
  n.attrs = std::move(attrs);
  return n;
}

std::vector<Tensor> run(const Node& n, std::vector<const Tensor*> in) {
  HeapAllocator alloc;
  return native::evaluate_node(n, in, alloc);
}

Tensor random(Shape s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += static_cast<double>(a.data<float>()[i]) * b.data<float>()[i];
  return s;
}

// Direct definition of a 2-D convolution, written independently of the kernel's loop order.
float conv_at(const Tensor& x, const Tensor& w, int64_t n, int64_t oc, int64_t oh, int64_t ow, int64_t group,
              int64_t stride, int64_t pad_t, int64_t pad_l, int64_t dil) {
  int64_t cg = w.dim(1), mg = w.dim(0) / group, g = oc / mg;
  double s = 0;
  for (int64_t c = 0; c < cg; ++c)
    for (int64_t kh = 0; kh < w.dim(2); ++kh)
      for (int64_t kw = 0; kw < w.dim(3); ++kw) {
        int64_t ih = oh * stride - pad_t + kh * dil, iw = ow * stride - pad_l + kw * dil;
        if (ih < 0 || iw < 0 || ih >= x.dim(2) || iw >= x.dim(3)) continue;
        s += x.data<float>()[((n * x.dim(1) + g * cg + c) * x.dim(2) + ih) * x.dim(3) + iw] *
             w.data<float>()[((oc * cg + c) * w.dim(2) + kh) * w.dim(3) + kw];
      }
  return static_cast<float>(s);
}

TEST(NativeCompute, ConvGroupsStridesDilationAsymmetricPads) {
  Tensor x = random({2, 6, 9, 7}, 1), w = random({4, 3, 3, 2}, 2);
  Node n = make("Conv", {{"group", Attribute::of_int(2)},
                         {"strides", Attribute::of_ints({2, 2})},
                         {"dilations", Attribute::of_ints({2, 1})},
                         {"pads", Attribute::of_ints({1, 0, 2, 1})}});
  Tensor y = run(n, {&x, &w})[0];
  // Output extent: (9 + 1 + 2 - 5) / 2 + 1 = 4, (7 + 0 + 1 - 2) / 2 + 1 = 4.
  ASSERT_EQ(y.shape(), (Shape{2, 4, 4, 4}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t oc = 0; oc < 4; ++oc)
      for (int64_t oh = 0; oh < 4; ++oh)
        for (int64_t ow = 0; ow < 4; ++ow) {
          // Dilation differs per axis: compute with the height dilation only on H.
          double s = 0;
          int64_t g = oc / 2;
          for (int64_t c = 0; c < 3; ++c)
            for (int64_t kh = 0; kh < 3; ++kh)
              for (int64_t kw = 0; kw < 2; ++kw) {
                int64_t ih = oh * 2 - 1 + kh * 2, iw = ow * 2 - 0 + kw;
                if (ih < 0 || iw < 0 || ih >= 9 || iw >= 7) continue;
                s += x.data<float>()[((b * 6 + g * 3 + c) * 9 + ih) * 7 + iw] *
                     w.data<float>()[((oc * 3 + c) * 3 + kh) * 2 + kw];
              }
          EXPECT_NEAR(y.data<float>()[((b * 4 + oc) * 4 + oh) * 4 + ow], s, 1e-5);
        }
}

TEST(NativeCompute, ConvAutoPadSameUpperAndLowerAndDepthwise) {
  Tensor x = random({1, 3, 6, 5}, 3), w = random({3, 1, 4, 4}, 4);
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    Node n = make("Conv", {{"group", Attribute::of_int(3)}, {"auto_pad", Attribute::of_string(mode)}});
    Tensor y = run(n, {&x, &w})[0];
    ASSERT_EQ(y.shape(), (Shape{1, 3, 6, 5}));
    // Total pad 3 per axis: SAME_UPPER puts 1 before, SAME_LOWER 2 before.
    int64_t before = std::string(mode) == "SAME_UPPER" ? 1 : 2;
    for (int64_t oc = 0; oc < 3; ++oc)
      for (int64_t oh = 0; oh < 6; ++oh)
        for (int64_t ow = 0; ow < 5; ++ow)
          EXPECT_NEAR(y.data<float>()[(oc * 6 + oh) * 5 + ow],
                      conv_at(x, w, 0, oc, oh, ow, 3, 1, before, before, 1), 1e-5)
              << mode;
  }
  Node bad = make("Conv", {{"auto_pad", Attribute::of_string("SAME_SIDEWAYS")}});
  EXPECT_THROW(run(bad, {&x, &w}), Error);
}

TEST(NativeCompute, ConvTransposeIsTheAdjointOfConv) {
  // <conv(x), y> == <x, convT(y)> with the same weights, strides, pads and dilations.
  for (int64_t spatial = 1; spatial <= 3; ++spatial) {
    Shape xs = {2, 4}, ws = {6, 4}, ys = {2, 6};
    std::vector<int64_t> strides, pads, dils;
    for (int64_t d = 0; d < spatial; ++d) {
      xs.push_back(7 - d);
      ws.push_back(3);
      strides.push_back(2);
      dils.push_back(d == 0 ? 2 : 1);
      pads.push_back(1);
    }
    pads.insert(pads.end(), pads.begin(), pads.end());
    Tensor x = random(xs, 5), w = random(ws, 6);
    std::map<std::string, Attribute> attrs = {{"strides", Attribute::of_ints(strides)},
                                              {"pads", Attribute::of_ints(pads)},
                                              {"dilations", Attribute::of_ints(dils)}};
    Tensor cx = run(make("Conv", attrs), {&x, &w})[0];
    Tensor y = random(cx.shape(), 7);
    // ConvTranspose weights are [C_in_of_transpose = conv's M, M_out/g = conv's C, k...]: the same tensor.
    Shape out_shape(xs.begin() + 2, xs.end());
    attrs["output_shape"] = Attribute::of_ints(out_shape);
    Tensor ty = run(make("ConvTranspose", attrs), {&y, &w})[0];
    ASSERT_EQ(ty.shape(), x.shape());
    EXPECT_NEAR(dot(cx, y), dot(x, ty), 1e-3) << spatial << "-D";
  }
}

TEST(NativeCompute, MatMulBroadcastAnd1DOperands) {
  Tensor a = random({2, 1, 3, 4}, 8), b = random({5, 4, 2}, 9);
  Tensor y = run(make("MatMul"), {&a, &b})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 5, 3, 2}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 2; ++c) {
          double s = 0;
          for (int64_t k = 0; k < 4; ++k)
            s += a.data<float>()[(i * 3 + r) * 4 + k] * b.data<float>()[(j * 4 + k) * 2 + c];
          EXPECT_NEAR(y.data<float>()[((i * 5 + j) * 3 + r) * 2 + c], s, 1e-5);
        }
  Tensor v = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  Tensor m = Tensor::from_vector<float>({4, 2}, {1, 0, 0, 1, 1, 0, 0, 1});
  Tensor vm = run(make("MatMul"), {&v, &m})[0];
  EXPECT_EQ(vm.shape(), (Shape{2}));
  EXPECT_EQ(vm.data<float>()[0], 4);  // 1 + 3
  EXPECT_EQ(vm.data<float>()[1], 6);  // 2 + 4
  Tensor bad = random({3, 5}, 1);
  EXPECT_THROW(run(make("MatMul"), {&a, &bad}), Error);
}

TEST(NativeCompute, GemmTransposesAlphaBetaAndBiasBroadcast) {
  Tensor a = random({4, 3}, 10), b = random({5, 4}, 11), c = random({5}, 12);
  Node n = make("Gemm", {{"transA", Attribute::of_int(1)},
                         {"transB", Attribute::of_int(1)},
                         {"alpha", Attribute::of_float(0.5f)},
                         {"beta", Attribute::of_float(2.0f)}});
  Tensor y = run(n, {&a, &b, &c})[0];
  ASSERT_EQ(y.shape(), (Shape{3, 5}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      double s = 0;
      for (int64_t k = 0; k < 4; ++k) s += a.data<float>()[k * 3 + i] * b.data<float>()[j * 4 + k];
      EXPECT_NEAR(y.data<float>()[i * 5 + j], 0.5 * s + 2.0 * c.data<float>()[j], 1e-5);
    }
}

TEST(NativeCompute, EinsumMatchesMatMulAndTranspose) {
  Tensor a = random({2, 3, 4}, 13), b = random({2, 4, 5}, 14);
  Tensor e = run(make("Einsum", {{"equation", Attribute::of_string("bij,bjk->bik")}}), {&a, &b})[0];
  Tensor m = run(make("MatMul"), {&a, &b})[0];
  ASSERT_EQ(e.shape(), m.shape());
  for (int64_t i = 0; i < e.size(); ++i) EXPECT_NEAR(e.data<float>()[i], m.data<float>()[i], 1e-5);
  Tensor t = run(make("Einsum", {{"equation", Attribute::of_string("bij->bji")}}), {&a})[0];
  EXPECT_EQ(t.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(t.data<float>()[1 * 3 + 2], a.data<float>()[2 * 4 + 1]);
  Tensor ell = run(make("Einsum", {{"equation", Attribute::of_string("...ij,...jk->...ik")}}), {&a, &b})[0];
  EXPECT_EQ(ell.to_double_vector(), e.to_double_vector());
  EXPECT_THROW(run(make("Einsum", {{"equation", Attribute::of_string("bij,bjk")}}), {&a}), Error);
}

TEST(NativeCompute, MaxPoolCeilModeAndIndices) {
  // 1x1x5 input, kernel 2, stride 2, ceil_mode: windows [0,1], [2,3], [4] -> 3 outputs.
  Tensor x = Tensor::from_vector<float>({1, 1, 5}, {1, 5, 2, 4, 3});
  Node n = make("MaxPool", {{"kernel_shape", Attribute::of_ints({2})},
                            {"strides", Attribute::of_ints({2})},
                            {"ceil_mode", Attribute::of_int(1)}});
  n.outputs = {0, 1};
  auto out = run(n, {&x});
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(out[0].to_double_vector(), (std::vector<double>{5, 4, 3}));
  EXPECT_EQ(out[1].to_int64_vector(), (std::vector<int64_t>{1, 3, 4}));
  n.attrs["ceil_mode"] = Attribute::of_int(0);
  EXPECT_EQ(run(n, {&x})[0].shape(), (Shape{1, 1, 2}));
  // With pad 1 and ceil_mode, a window starting in the right padding is dropped.
  Node p = make("MaxPool", {{"kernel_shape", Attribute::of_ints({2})},
                            {"strides", Attribute::of_ints({2})},
                            {"pads", Attribute::of_ints({1, 1})},
                            {"ceil_mode", Attribute::of_int(1)}});
  Tensor x4 = Tensor::from_vector<float>({1, 1, 4}, {1, 2, 3, 4});
  EXPECT_EQ(run(p, {&x4})[0].to_double_vector(), (std::vector<double>{1, 3, 4}));
}

TEST(NativeCompute, AveragePoolCountIncludePad) {
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  std::map<std::string, Attribute> attrs = {{"kernel_shape", Attribute::of_ints({2, 2})},
                                            {"pads", Attribute::of_ints({1, 1, 1, 1})}};
  Tensor excl = run(make("AveragePool", attrs), {&x})[0];
  attrs["count_include_pad"] = Attribute::of_int(1);
  Tensor incl = run(make("AveragePool", attrs), {&x})[0];
  ASSERT_EQ(excl.shape(), (Shape{1, 1, 3, 3}));
  EXPECT_FLOAT_EQ(excl.data<float>()[0], 1.0f);      // only x[0,0] is inside
  EXPECT_FLOAT_EQ(incl.data<float>()[0], 1.0f / 4);  // divided by the full window
  EXPECT_FLOAT_EQ(excl.data<float>()[4], 2.5f);      // centre window covers all four
  EXPECT_FLOAT_EQ(incl.data<float>()[4], 2.5f);
}

TEST(NativeCompute, SoftmaxNegativeAxisAndLogSoftmax) {
  Tensor x = random({2, 3, 4}, 15);
  Tensor s = run(make("Softmax", {{"axis", Attribute::of_int(-2)}}), {&x})[0];
  Tensor l = run(make("LogSoftmax", {{"axis", Attribute::of_int(1)}}), {&x})[0];
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t k = 0; k < 4; ++k) {
      double sum = 0;
      for (int64_t j = 0; j < 3; ++j) {
        int64_t i = (b * 3 + j) * 4 + k;
        sum += s.data<float>()[i];
        EXPECT_NEAR(l.data<float>()[i], std::log(s.data<float>()[i]), 1e-5);
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);
    }
  Tensor big = Tensor::from_vector<float>({2}, {1000, 1000});  // stable: no overflow
  EXPECT_FLOAT_EQ(run(make("Softmax"), {&big})[0].data<float>()[0], 0.5f);
}

TEST(NativeCompute, ReductionsKeepdimsNegativeAxesAndInt64) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor axes = Tensor::from_vector<int64_t>({1}, {-1});
  Node mean = make("ReduceMean", {{"keepdims", Attribute::of_int(0)}});
  EXPECT_EQ(run(mean, {&x, &axes})[0].to_double_vector(), (std::vector<double>{2, 5}));
  Tensor all = run(make("ReduceSum"), {&x})[0];
  EXPECT_EQ(all.shape(), (Shape{1, 1}));
  EXPECT_EQ(all.data<float>()[0], 21);
  Tensor none = Tensor(DType::Int64, {0});
  EXPECT_EQ(run(make("ReduceProd", {{"noop_with_empty_axes", Attribute::of_int(1)}}), {&x, &none})[0].shape(),
            (Shape{2, 3}));
  Tensor xi = Tensor::from_vector<int64_t>({3}, {4, -2, 7});
  EXPECT_EQ(run(make("ReduceMax"), {&xi})[0].to_int64_vector(), (std::vector<int64_t>{7}));
  EXPECT_EQ(run(make("ReduceMin"), {&xi})[0].dtype(), DType::Int64);
  Tensor bad_axes = Tensor::from_vector<int64_t>({1}, {2});
  EXPECT_THROW(run(mean, {&x, &bad_axes}), Error);
}

TEST(NativeCompute, NormalisationsAgainstFormulas) {
  Tensor x = random({2, 3, 4}, 16);
  Tensor scale = random({4}, 17), bias = random({4}, 18);
  Tensor y =
      run(make("LayerNormalization", {{"epsilon", Attribute::of_float(1e-5f)}}), {&x, &scale, &bias})[0];
  for (int64_t r = 0; r < 6; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < 4; ++i) m += x.data<float>()[r * 4 + i] / 4.0;
    for (int64_t i = 0; i < 4; ++i) v += std::pow(x.data<float>()[r * 4 + i] - m, 2) / 4.0;
    for (int64_t i = 0; i < 4; ++i)
      EXPECT_NEAR(y.data<float>()[r * 4 + i],
                  (x.data<float>()[r * 4 + i] - m) / std::sqrt(v + 1e-5) * scale.data<float>()[i] +
                      bias.data<float>()[i],
                  1e-5);
  }
  Tensor c = random({3}, 19), mean = random({3}, 20), var = Tensor::from_vector<float>({3}, {0.5f, 1, 2});
  EXPECT_THROW(run(make("BatchNormalization"), {&x, &c, &bias, &mean, &var}),
               Error);  // 4 biases for 3 channels
  EXPECT_THROW(run(make("BatchNormalization"), {&x, &c, &bias, &mean}), Error);
  Tensor b3 = random({3}, 21);
  Tensor bn = run(make("BatchNormalization"), {&x, &c, &b3, &mean, &var})[0];
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t ch = (i / 4) % 3;
    EXPECT_NEAR(bn.data<float>()[i],
                (x.data<float>()[i] - mean.data<float>()[ch]) / std::sqrt(var.data<float>()[ch] + 1e-5) *
                        c.data<float>()[ch] +
                    b3.data<float>()[ch],
                1e-5);
  }
}

TEST(NativeCompute, ResizeLinearHalfPixelAndAlignCorners) {
  Tensor x = Tensor::from_vector<float>({1, 1, 1, 2}, {0, 10});
  Tensor scales = Tensor::from_vector<float>({4}, {1, 1, 1, 2});
  Tensor roi(DType::Float32, {0});
  Node n = make("Resize", {{"mode", Attribute::of_string("linear")}});
  // half_pixel: output coords map to -0.25, 0.25, 0.75, 1.25 -> clamped 0, 0.25, 0.75, 1.
  EXPECT_EQ(run(n, {&x, &roi, &scales})[0].to_double_vector(), (std::vector<double>{0, 2.5, 7.5, 10}));
  n.attrs["coordinate_transformation_mode"] = Attribute::of_string("align_corners");
  auto ac = run(n, {&x, &roi, &scales})[0].to_double_vector();
  EXPECT_NEAR(ac[1], 10.0 / 3, 1e-5);
  EXPECT_NEAR(ac[2], 20.0 / 3, 1e-5);
  n.attrs["coordinate_transformation_mode"] = Attribute::of_string("tf_crop_and_resize");
  EXPECT_THROW(run(n, {&x, &roi, &scales}), Error);  // tf_crop_and_resize needs a roi
}

}  // namespace
}  // namespace collage
