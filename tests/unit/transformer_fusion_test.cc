// Transformer blocks (core/backend_api/transformer_fusion.h) as single candidates: decomposed
// and whole LayerNorm (with residual Add), erf/tanh GELU (with bias and MatMul) and
// the attention core. Each fused kernel is checked against the unfused native
// reference with the tuner's tolerance rule, on sample-like and odd shapes.
#include "core/backend_api/transformer_fusion.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "backends/native/transformer_kernels.h"
#include "backends/onednn/onednn_attention.h"
#include "backends/onednn/onednn_spec.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/search/tuner.h"
#include "core/tuning/measurer.h"
#include "resources/samples/zoo.h"
#include "sample_graph.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;
using testing::random_tensor_f32;

// The candidate of `spec` covering every node of `g`: compiles and agrees with the
// per-node native reference under the tuner's rule (rtol 1e-3, atol 1e-4, tensor-scaled).
void expect_whole_graph_candidate(const Graph& g, const BackendSpec& spec, const std::string& what) {
  SCOPED_TRACE(what + " on " + spec.name);
  IndexSet all(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) all.add(i);
  bool found = false;
  for (const Candidate& c : enumerate_candidates(g, {&spec})) {
    if (!(c.nodes == all)) continue;
    found = true;
    for (uint64_t seed : {3u, 11u}) {
      auto values = testing::reference_values(g, {}, seed);
      SubGraph sub = make_subgraph(g, c.nodes);
      auto kernel = spec.compile(g, sub, CompileOptions{});
      std::vector<const Tensor*> args;
      for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
      HeapAllocator alloc;
      EXPECT_EQ(compare_outputs(g, sub, kernel->run(args, alloc), values), "") << c.label;
    }
  }
  EXPECT_TRUE(found) << "no candidate covers all " << g.nodes.size() << " nodes";
}

// ---- layer normalisation ------------------------------------------------------------------
struct LnCase {
  Shape shape;
  bool residual, gamma, beta, pow, axes_input;
};

OnnxTestModel decomposed_ln(const LnCase& c) {
  OnnxTestModel m(c.axes_input ? 18 : 13);
  int64_t d = c.shape.back();
  m.input("a", c.shape);
  std::string x = "a";
  if (c.residual) {
    m.input("r", c.shape);
    m.node("Add", {"a", "r"}, {"x"});
    x = "x";
  }
  auto mean = [&](const std::string& in, const std::string& out) {
    if (c.axes_input) {
      m.node("ReduceMean", {in, "axes"}, {out});
    } else {
      OnnxTestModel::attr_ints(m.node("ReduceMean", {in}, {out}), "axes", {-1});
    }
  };
  if (c.axes_input) m.initializer("axes", Tensor::from_vector<int64_t>({1}, {-1}));
  mean(x, "mu");
  m.node("Sub", {x, "mu"}, {"dev"});
  if (c.pow) {
    m.initializer("two", Tensor::scalar<float>(2.0f));
    m.node("Pow", {"dev", "two"}, {"sq"});
  } else {
    m.node("Mul", {"dev", "dev"}, {"sq"});
  }
  mean("sq", "var");
  m.initializer("eps", Tensor::scalar<float>(1e-5f));
  m.node("Add", {"var", "eps"}, {"ve"});
  m.node("Sqrt", {"ve"}, {"sd"});
  m.node("Div", {"dev", "sd"}, {c.gamma ? "n" : "y"});
  if (c.gamma) {
    m.initializer("gamma", random_tensor_f32({d}, 5, 1.5f));
    m.node("Mul", {"n", "gamma"}, {c.beta ? "s" : "y"});
    if (c.beta) {
      m.initializer("beta", random_tensor_f32({d}, 6));
      m.node("Add", {"s", "beta"}, {"y"});
    }
  }
  m.output("y");
  return m;
}

// Opset-13 exports (ReduceMean axes as an attribute; the importer makes it an input, the
// opset-18 form, so both reach the matcher the same way).
TEST(TransformerFusion, DecomposedLayerNormIsOneCandidate) {
  const std::vector<LnCase> cases = {
      {{1, 32, 64}, false, true, true, true, false}, {{2, 5, 37}, true, true, true, true, false},
      {{7, 19}, false, true, false, false, false},   {{3, 4, 2, 9}, true, false, false, true, false},
      {{1, 32, 64}, true, true, true, false, false}, {{5, 256}, false, true, true, true, false},
  };
  for (const LnCase& c : cases) {
    Graph g = import_model(decomposed_ln(c));
    std::string what = "LN " + shape_to_string(c.shape) + (c.residual ? " +residual" : "") +
                       (c.gamma ? " gamma" : "") + (c.beta ? " beta" : "") + (c.pow ? " Pow" : " Mul");
    expect_whole_graph_candidate(g, native_backend(), what);
    expect_whole_graph_candidate(g, onednn_backend(), what);
    auto ln = layer_norm_at(g, g.value(g.outputs[0]).producer);
    ASSERT_TRUE(ln.has_value()) << what;
    EXPECT_FLOAT_EQ(ln->epsilon, 1e-5f);
  }
}

TEST(TransformerFusion, LayerNormNodeWithResidual) {
  for (Shape shape : {Shape{1, 32, 64}, Shape{3, 13}, Shape{2, 3, 45}}) {
    OnnxTestModel m(17);
    m.input("a", shape);
    m.input("r", shape);
    m.initializer("g", random_tensor_f32({shape.back()}, 2, 1.5f));
    m.initializer("b", random_tensor_f32({shape.back()}, 3));
    m.node("Add", {"a", "r"}, {"x"});
    auto& n = m.node("LayerNormalization", {"x", "g", "b"}, {"y"});
    OnnxTestModel::attr_float(n, "epsilon", 1e-3f);
    m.output("y");
    Graph g = import_model(m);
    expect_whole_graph_candidate(g, native_backend(), "Add+LayerNormalization " + shape_to_string(shape));
    expect_whole_graph_candidate(g, onednn_backend(), "Add+LayerNormalization " + shape_to_string(shape));
  }
}

// A row far from zero: the one-pass statistics must not cancel.
TEST(TransformerFusion, LayerNormOfRowsFarFromZero) {
  OnnxTestModel m(17);
  m.input("x", {4, 300});
  m.initializer("g", random_tensor_f32({300}, 2, 1.5f));
  m.node("LayerNormalization", {"x", "g"}, {"y"});
  m.output("y");
  Graph g = import_model(m);
  Tensor x = random_tensor_f32({4, 300}, 9, 0.01f);
  for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] += 1000.0f;
  auto values = testing::reference_values(g, {x});
  IndexSet node(g.nodes.size());
  node.add(0);
  SubGraph sub = make_subgraph(g, node);
  auto kernel = native_backend().compile(g, sub, CompileOptions{});
  std::vector<const Tensor*> args = {&values[static_cast<size_t>(g.inputs[0])]};
  HeapAllocator alloc;
  EXPECT_EQ(compare_outputs(g, sub, kernel->run(args, alloc), values), "");
}

// ---- GELU --------------------------------------------------------------------------------
enum class GeluForm { ErfZoo, ErfHalfFirst, ErfHalfLast, ErfMulRsqrt2, TanhPow, TanhCube };

// y = GELU(MatMul(a, W) + bias) (or of `a` / `a + bias` alone).
OnnxTestModel gelu_model(GeluForm f, const Shape& shape, bool bias, bool matmul) {
  OnnxTestModel m(17);
  int64_t d = shape.back();
  std::string x = "a";
  if (matmul) {
    Shape in = shape;
    in.back() = 11;
    m.input("a", in);
    m.initializer("w", random_tensor_f32({11, d}, 4));
    m.node("MatMul", {"a", "w"}, {"h"});
    x = "h";
  } else {
    m.input("a", shape);
  }
  if (bias) {
    m.initializer("bias", random_tensor_f32({d}, 5));
    m.node("Add", {"bias", x}, {"x"});
    x = "x";
  }
  auto c = [&](const std::string& name, float v) {
    m.initializer(name, Tensor::scalar<float>(v));
    return name;
  };
  switch (f) {
    case GeluForm::ErfZoo:
    case GeluForm::ErfHalfFirst:
    case GeluForm::ErfHalfLast:
    case GeluForm::ErfMulRsqrt2:
      if (f == GeluForm::ErfMulRsqrt2)
        m.node("Mul", {x, c("r2", 0.70710678f)}, {"t"});
      else
        m.node("Div", {x, c("s2", 1.41421356f)}, {"t"});
      m.node("Erf", {"t"}, {"e"});
      m.node("Add", {"e", c("one", 1.0f)}, {"A"});
      break;
    case GeluForm::TanhPow:
    case GeluForm::TanhCube:
      if (f == GeluForm::TanhPow) {
        m.node("Pow", {x, c("three", 3.0f)}, {"x3"});
      } else {
        m.node("Mul", {x, x}, {"x2"});
        m.node("Mul", {x, "x2"}, {"x3"});
      }
      m.node("Mul", {c("k", 0.044715f), "x3"}, {"kx3"});
      m.node("Add", {x, "kx3"}, {"u"});
      m.node("Mul", {c("c", 0.7978845608f), "u"}, {"t"});
      m.node("Tanh", {"t"}, {"e"});
      m.node("Add", {c("one", 1.0f), "e"}, {"A"});
      break;
  }
  if (f == GeluForm::ErfHalfLast || f == GeluForm::ErfZoo) {
    m.node("Mul", {x, "A"}, {"xa"});
    m.node("Mul", {"xa", c("half", 0.5f)}, {"y"});
  } else if (f == GeluForm::ErfHalfFirst || f == GeluForm::TanhPow) {
    m.node("Mul", {x, c("half", 0.5f)}, {"hx"});
    m.node("Mul", {"hx", "A"}, {"y"});
  } else {
    m.node("Mul", {"A", c("half", 0.5f)}, {"ha"});
    m.node("Mul", {x, "ha"}, {"y"});
  }
  m.output("y");
  return m;
}

TEST(TransformerFusion, GeluFormsWithBiasAndMatMul) {
  for (GeluForm f : {GeluForm::ErfZoo, GeluForm::ErfHalfFirst, GeluForm::ErfHalfLast, GeluForm::ErfMulRsqrt2,
                     GeluForm::TanhPow, GeluForm::TanhCube})
    for (Shape shape : {Shape{3, 37}, Shape{1, 32, 256}, Shape{2, 5, 24}})
      for (int variant = 0; variant < 3; ++variant) {
        Graph g = import_model(gelu_model(f, shape, variant >= 1, variant == 2));
        std::string what = "GELU form " + std::to_string(static_cast<int>(f)) + " " + shape_to_string(shape) +
                           (variant >= 1 ? " +bias" : "") + (variant == 2 ? " +MatMul" : "");
        expect_whole_graph_candidate(g, native_backend(), what);
        auto b = gelu_at(g, g.value(g.outputs[0]).producer);
        ASSERT_TRUE(b.has_value()) << what;
        EXPECT_EQ(b->tanh, f == GeluForm::TanhPow || f == GeluForm::TanhCube) << what;
        if (b->tanh && variant == 1) expect_whole_graph_candidate(g, onednn_backend(), what);
      }
}

// ---- attention ---------------------------------------------------------------------------
struct AttnCase {
  int64_t batch, seq, heads, dh;
  bool layout;   // [B, S, H*Dh] projections reshaped and transposed as exporters write
  bool mask;     // additive [B, 1, 1, S] mask
  bool mul;      // Mul by 1/sqrt(dh) instead of Div by sqrt(dh)
  int rank = 4;  // without layout: rank of Q/K/V (2, 3 or 4)
};

OnnxTestModel attention_model(const AttnCase& c) {
  OnnxTestModel m(17);
  std::string q = "q", k = "k", v = "v";
  if (c.layout) {
    Shape in = {c.batch, c.seq, c.heads, c.dh};
    for (const char* n : {"q", "k", "v"}) m.input(std::string(n) + "in", in);
    auto t = [&](const std::string& in, const std::string& out, std::vector<int64_t> perm) {
      OnnxTestModel::attr_ints(m.node("Transpose", {in}, {out}), "perm", perm);
    };
    t("qin", "q", {0, 2, 1, 3});
    t("kin", "k", {0, 2, 3, 1});
    t("vin", "v", {0, 2, 1, 3});
  } else {
    Shape qs = {c.batch, c.heads, c.seq, c.dh}, ks = {c.batch, c.heads, c.dh, c.seq};
    qs.erase(qs.begin(), qs.begin() + (4 - c.rank));
    ks.erase(ks.begin(), ks.begin() + (4 - c.rank));
    m.input("q", qs);
    m.input("k", ks);
    m.input("v", qs);
  }
  m.node("MatMul", {q, k}, {"s"});
  float sc = std::sqrt(static_cast<float>(c.dh));
  if (c.mul) {
    m.initializer("scale", Tensor::scalar<float>(1.0f / sc));
    m.node("Mul", {"scale", "s"}, {"ss"});
  } else {
    m.initializer("scale", Tensor::scalar<float>(sc));
    m.node("Div", {"s", "scale"}, {"ss"});
  }
  std::string logits = "ss";
  if (c.mask) {
    m.input("mask", {c.batch, 1, 1, c.seq});
    m.node("Add", {"ss", "mask"}, {"sm"});
    logits = "sm";
  }
  OnnxTestModel::attr_int(m.node("Softmax", {logits}, {"p"}), "axis", -1);
  m.node("MatMul", {"p", v}, {c.layout ? "ctx" : "y"});
  if (c.layout) {
    OnnxTestModel::attr_ints(m.node("Transpose", {"ctx"}, {"ct"}), "perm", {0, 2, 1, 3});
    m.initializer("shape", Tensor::from_vector<int64_t>({3}, {c.batch, c.seq, c.heads * c.dh}));
    m.node("Reshape", {"ct", "shape"}, {"y"});
  }
  m.output("y");
  return m;
}

// torch.nn.MultiheadAttention as torchvision's ViT exports it: one packed [S, B, 3E] projection
// sliced into Q, K and V, each reshaped to [S, B*H, Dh] and transposed (K to [B*H, Dh, S]), Q
// divided by sqrt(Dh) before the product, and the context transposed back and reshaped to [S*B, E].
OnnxTestModel packed_attention_model(int64_t seq, int64_t batch, int64_t heads, int64_t dh) {
  OnnxTestModel m(17);
  const int64_t e = heads * dh;
  m.input("x", {seq, batch, 3 * e});
  m.initializer("axes", Tensor::from_vector<int64_t>({1}, {-1}));
  m.initializer("heads", Tensor::from_vector<int64_t>({3}, {seq, batch * heads, dh}));
  const char* names[] = {"q", "k", "v"};
  for (int64_t i = 0; i < 3; ++i) {
    std::string n = names[i];
    m.initializer(n + "0", Tensor::from_vector<int64_t>({1}, {i * e}));
    m.initializer(n + "1", Tensor::from_vector<int64_t>({1}, {(i + 1) * e}));
    m.node("Slice", {"x", n + "0", n + "1", "axes"}, {n + "s"});
    m.node("Reshape", {n + "s", "heads"}, {n + "r"});
    OnnxTestModel::attr_ints(m.node("Transpose", {n + "r"}, {n + "t"}), "perm",
                             n == "k" ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{1, 0, 2});
  }
  m.initializer("scale", Tensor::scalar<float>(std::sqrt(static_cast<float>(dh))));
  m.node("Div", {"qt", "scale"}, {"qd"});
  m.node("MatMul", {"qd", "kt"}, {"s"});
  OnnxTestModel::attr_int(m.node("Softmax", {"s"}, {"p"}), "axis", -1);
  m.node("MatMul", {"p", "vt"}, {"ctx"});
  OnnxTestModel::attr_ints(m.node("Transpose", {"ctx"}, {"ct"}), "perm", {1, 0, 2});
  m.initializer("shape", Tensor::from_vector<int64_t>({2}, {seq * batch, e}));
  m.node("Reshape", {"ct", "shape"}, {"y"});
  m.output("y");
  return m;
}

TEST(TransformerFusion, AttentionCore) {
  const std::vector<AttnCase> cases = {
      {1, 32, 4, 16, true, false, false},      // transformer_small
      {1, 128, 4, 64, true, false, false},     // bert_encoder
      {2, 13, 3, 7, true, true, true},         // odd sizes, mask, Mul scale
      {1, 67, 2, 16, true, true, false},       // rows of eight-lane blocks and a tail, mask
      {2, 9, 2, 5, false, true, false},        // no layout nodes, rank 4
      {1, 11, 3, 6, false, false, true, 3},    // rank 3
      {1, 19, 1, 10, false, false, false, 2},  // rank 2
  };
  for (const AttnCase& c : cases) {
    Graph g = import_model(attention_model(c));
    std::string what = "attention B" + std::to_string(c.batch) + " S" + std::to_string(c.seq) + " H" +
                       std::to_string(c.heads) + " Dh" + std::to_string(c.dh) + (c.layout ? " layout" : "") +
                       (c.mask ? " mask" : "") + " rank" + std::to_string(c.rank);
    expect_whole_graph_candidate(g, native_backend(), what);
    expect_whole_graph_candidate(g, onednn_backend(), what);
  }
}

// The packed form is one block whose operands are strided views of the projection: Slice offsets,
// the head split and both Transposes in the strides, the Div in the scale.
TEST(TransformerFusion, AttentionReadsAPackedProjectionInPlace) {
  for (auto [seq, batch, heads, dh] : {std::array<int64_t, 4>{197, 1, 12, 64}, {13, 1, 3, 5}}) {
    Graph g = import_model(packed_attention_model(seq, batch, heads, dh));
    std::string what = "packed attention S" + std::to_string(seq) + " B" + std::to_string(batch);
    NodeId root = g.value(g.outputs.at(0)).producer;
    auto b = attention_at(g, root, true);
    ASSERT_TRUE(b) << what;
    EXPECT_EQ(b->nodes.size(), 15u);
    EXPECT_NEAR(b->scale, 1.0f / std::sqrt(static_cast<float>(dh)), 1e-7f);
    const int64_t e = heads * dh;
    EXPECT_EQ(b->q.value, g.inputs.at(0));
    EXPECT_EQ(b->q.shape, (Shape{batch * heads, seq, dh}));
    EXPECT_EQ(b->q.strides, (std::vector<int64_t>{dh, batch * 3 * e, 1}));
    EXPECT_EQ(b->k.shape, (Shape{batch * heads, dh, seq}));
    EXPECT_EQ(b->k.strides, (std::vector<int64_t>{dh, 1, batch * 3 * e}));
    EXPECT_EQ(std::vector<int64_t>({b->q.offset, b->k.offset, b->v.offset}),
              (std::vector<int64_t>{0, e, 2 * e}));
    expect_whole_graph_candidate(g, native_backend(), what);
    expect_whole_graph_candidate(g, onednn_backend(), what);
  }
}

// GPT-2 as transformers exports it: the packed [B, S, 3E] projection cut by one Split, the heads
// reshaped and transposed, the scores scaled by a Mul, the causal mask a Where filling the
// lowest float (masked_fill), the context transposed back and reshaped to [B, S, E].
OnnxTestModel split_causal_attention_model(int64_t batch, int64_t seq, int64_t heads, int64_t dh) {
  OnnxTestModel m(17);
  const int64_t e = heads * dh;
  m.input("x", {batch, seq, 3 * e});
  m.initializer("sizes", Tensor::from_vector<int64_t>({3}, {e, e, e}));
  OnnxTestModel::attr_int(m.node("Split", {"x", "sizes"}, {"qs", "ks", "vs"}), "axis", 2);
  m.initializer("heads", Tensor::from_vector<int64_t>({4}, {batch, seq, heads, dh}));
  for (std::string n : {"q", "k", "v"}) {
    m.node("Reshape", {n + "s", "heads"}, {n + "r"});
    OnnxTestModel::attr_ints(m.node("Transpose", {n + "r"}, {n + "t"}), "perm",
                             n == "k" ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3});
  }
  m.node("MatMul", {"qt", "kt"}, {"s"});
  m.initializer("scale", Tensor::scalar<float>(1.0f / std::sqrt(static_cast<float>(dh))));
  m.node("Mul", {"s", "scale"}, {"ss"});
  std::vector<bool> future;
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t j = 0; j < seq; ++j) future.push_back(j > i);
  m.initializer("future", Tensor::from_vector<bool>({1, 1, seq, seq}, future));
  m.initializer("lowest", Tensor::scalar<float>(std::numeric_limits<float>::lowest()));
  m.node("Where", {"future", "lowest", "ss"}, {"sm"});
  OnnxTestModel::attr_int(m.node("Softmax", {"sm"}, {"p"}), "axis", -1);
  m.node("MatMul", {"p", "vt"}, {"ctx"});
  OnnxTestModel::attr_ints(m.node("Transpose", {"ctx"}, {"ct"}), "perm", {0, 2, 1, 3});
  m.initializer("shape", Tensor::from_vector<int64_t>({3}, {batch, seq, e}));
  m.node("Reshape", {"ct", "shape"}, {"y"});
  m.output("y");
  return m;
}

TEST(TransformerFusion, AttentionTakesASplitProjectionAndACausalWhere) {
  for (auto [batch, seq, heads, dh] : {std::array<int64_t, 4>{1, 64, 12, 64}, {1, 13, 3, 5}}) {
    Graph g = import_model(split_causal_attention_model(batch, seq, heads, dh));
    std::string what = "split attention S" + std::to_string(seq);
    auto b = attention_at(g, g.value(g.outputs.at(0)).producer, true);
    ASSERT_TRUE(b) << what;
    EXPECT_EQ(b->nodes.size(), g.nodes.size());  // 14: the Split once
    ASSERT_TRUE(b->mask_constant.has_value());
    const Tensor& mask = *b->mask_constant;
    EXPECT_EQ(mask.data<float>()[1], std::numeric_limits<float>::lowest());  // row 0 may not see key 1
    EXPECT_EQ(mask.data<float>()[seq], 0.0f);                                // row 1 sees key 0
    EXPECT_EQ(std::vector<int64_t>({b->q.offset, b->k.offset, b->v.offset}),
              (std::vector<int64_t>{0, heads * dh, 2 * heads * dh}));
    expect_whole_graph_candidate(g, native_backend(), what);
    expect_whole_graph_candidate(g, onednn_backend(), what);
  }
}

// A Where whose fill a score could reach is a replacement, not a mask: the block stops before it.
TEST(TransformerFusion, AttentionLeavesAWhereThatIsNoMask) {
  OnnxTestModel m = split_causal_attention_model(1, 8, 2, 4);
  Graph g = import_model(m);
  for (Node& n : g.nodes)
    if (n.op_type == "Where") g.value(n.inputs[1]).constant = Tensor::scalar<float>(-5.0f);
  EXPECT_FALSE(attention_at(g, g.value(g.outputs.at(0)).producer, true).has_value());
}

// A Reshape that is no view of the sliced tensor (it would mix Q's columns with K's) stays outside.
TEST(TransformerFusion, AttentionLeavesAReshapeThatIsNoView) {
  OnnxTestModel m(17);
  m.input("x", {4, 12});
  m.initializer("axes", Tensor::from_vector<int64_t>({1}, {1}));
  m.initializer("s0", Tensor::from_vector<int64_t>({1}, {0}));
  m.initializer("s1", Tensor::from_vector<int64_t>({1}, {6}));
  m.node("Slice", {"x", "s0", "s1", "axes"}, {"qs"});
  m.initializer("flat", Tensor::from_vector<int64_t>({2}, {6, 4}));
  m.node("Reshape", {"qs", "flat"}, {"q"});  // [4, 6] sliced from rows of 12 -> [6, 4]: no strides do it
  m.input("k", {4, 5});
  m.input("v", {5, 3});
  m.node("MatMul", {"q", "k"}, {"s"});
  OnnxTestModel::attr_int(m.node("Softmax", {"s"}, {"p"}), "axis", -1);
  m.node("MatMul", {"p", "v"}, {"y"});
  m.output("y");
  Graph g = import_model(m);
  auto b = attention_at(g, g.value(g.outputs.at(0)).producer, true);
  ASSERT_TRUE(b);
  EXPECT_EQ(g.value(b->q.value).name, "qs");  // the Reshape's input, a dense tensor
  EXPECT_EQ(b->nodes.size(), 4u);             // Reshape, MatMul, Softmax, MatMul
  EXPECT_EQ(b->q.strides, (std::vector<int64_t>{4, 1}));
}

// The cores' row softmaxes, every version, against a double-precision softmax: row lengths with and
// without an eight-lane tail, with and without a mask (BERT's -10000 for padding included).
TEST(TransformerFusion, SoftmaxRowsAgreeWithDoublePrecision) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> logit(-12.0f, 12.0f);
  for (int64_t n : {1, 5, 8, 13, 64, 67, 256}) {
    for (bool masked : {false, true}) {
      std::vector<float> x(static_cast<size_t>(n)), mask(static_cast<size_t>(n));
      for (auto& v : x) v = logit(rng);
      for (int64_t j = 0; j < n; ++j) mask[static_cast<size_t>(j)] = j % 5 == 4 ? -10000.0f : logit(rng) / 4;
      std::vector<double> want(static_cast<size_t>(n));
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < n; ++j)
        mx = std::max(mx, double{x[static_cast<size_t>(j)]} + (masked ? mask[static_cast<size_t>(j)] : 0.0));
      for (int64_t j = 0; j < n; ++j) {
        size_t i = static_cast<size_t>(j);
        want[i] = std::exp(double{x[i]} + (masked ? mask[i] : 0.0) - mx);
        sum += want[i];
      }
      for (double& w : want) w /= sum;
      auto check = [&](const char* which, void (*softmax)(float*, const float*, int64_t)) {
        SCOPED_TRACE(std::string(which) + " n=" + std::to_string(n) + (masked ? " masked" : ""));
        std::vector<float> row = x;
        softmax(row.data(), masked ? mask.data() : nullptr, n);
        for (size_t i = 0; i < row.size(); ++i)
          EXPECT_NEAR(row[i], want[i], 1e-6 + 1e-5 * want[i]) << "at " << i;
      };
      check("portable", native::softmax_row);
      if (native::avx2_fma()) check("avx2", native::softmax_row_avx2);
      // oneDNN's attention kernel: softmax(scale * x + mask), with x pre-divided so the logits agree.
      auto scaled = [&](const char* which, void (*softmax)(float*, int64_t, float, const float*)) {
        SCOPED_TRACE(std::string("onednn ") + which + " n=" + std::to_string(n) + (masked ? " masked" : ""));
        std::vector<float> row = x;
        for (float& v : row) v /= 0.125f;
        softmax(row.data(), n, 0.125f, masked ? mask.data() : nullptr);
        for (size_t i = 0; i < row.size(); ++i)
          EXPECT_NEAR(row[i], want[i], 1e-6 + 1e-5 * want[i]) << "at " << i;
      };
      scaled("portable", onednn::softmax_row_portable);
      if (native::avx2_fma()) scaled("avx2", onednn::softmax_row_avx2);
      if (__builtin_cpu_supports("avx512f")) scaled("avx512", onednn::softmax_row_avx512);
    }
  }
}

// The GELU kernel shared between threads (large tensors only) computes what it computes alone,
// bitwise, whichever bias it adds: none, a constant row, a full-shaped runtime tensor.
TEST(TransformerFusion, GeluKernelOnTwoThreadsMatchesOneBitwise) {
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    OnnxTestModel m(17);
    const Shape shape = {2, 67, 1000};  // 134,000 floats: four shares of 2^15, rows of 1000
    m.input("a", shape);
    std::string x = "a";
    if (variant == 1) m.initializer("bias", random_tensor_f32({shape.back()}, 5));
    if (variant == 2) m.input("bias", shape);
    if (variant > 0) {
      m.node("Add", {"a", "bias"}, {"x"});
      x = "x";
    }
    erf_gelu(m, x, "y");
    m.output("y");
    Graph g = import_model(m);
    IndexSet all(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) all.add(i);
    SubGraph sub = make_subgraph(g, all);
    auto values = testing::reference_values(g, {}, 7);
    std::vector<const Tensor*> args;
    for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
    HeapAllocator alloc;
    CompileOptions two;
    two.threads = 2;
    std::vector<Tensor> one = native_backend().compile(g, sub, CompileOptions{})->run(args, alloc);
    std::vector<Tensor> shared = native_backend().compile(g, sub, two)->run(args, alloc);
    EXPECT_EQ(compare_outputs(g, sub, shared, values), "");
    ASSERT_EQ(one[0].size(), shared[0].size());
    EXPECT_EQ(std::memcmp(one[0].raw(), shared[0].raw(), one[0].bytes()), 0);
  }
}

// The GELU kernel's pass in every width this CPU runs, against double precision: lengths around the
// vector widths (tails), no bias, a bias row, one bias for all, in place, by erf and by tanh.
TEST(TransformerFusion, GeluSpansMatchDoublePrecision) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-6.0f, 6.0f);
  for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 33, 100}) {
    std::vector<float> x(static_cast<size_t>(n)), row(static_cast<size_t>(n));
    for (auto& v : x) v = value(rng);
    for (auto& v : row) v = value(rng) / 4;
    for (bool tanh : {false, true})
      for (int64_t bstride : {-1, 0, 1}) {  // -1: no bias
        const float* b = bstride < 0 ? nullptr : row.data();
        auto want = [&](size_t i) {
          const double v = double{x[i]} + (b ? double{b[bstride > 0 ? i : 0]} : 0.0);
          if (tanh) return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
          return 0.5 * v * std::erfc(-v / std::sqrt(2.0));
        };
        auto check = [&](const char* which, native::GeluSpan span) {
          SCOPED_TRACE(std::string(which) + " n=" + std::to_string(n) + (tanh ? " tanh" : " erf") +
                       " bias stride " + std::to_string(bstride));
          std::vector<float> y(static_cast<size_t>(n) + 1, 12345.0f);  // one guard after the end
          span(x.data(), b, std::max<int64_t>(bstride, 0), y.data(), n, tanh);
          for (size_t i = 0; i < x.size(); ++i)
            EXPECT_NEAR(y[i], want(i), 2e-6 * (1.0 + std::fabs(want(i)))) << i;
          EXPECT_EQ(y.back(), 12345.0f) << "wrote past the end";
          std::vector<float> inplace = x;
          span(inplace.data(), b, std::max<int64_t>(bstride, 0), inplace.data(), n, tanh);
          for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(inplace[i], y[i]) << "in place, at " << i;
        };
        check("portable", native::gelu_span);
        if (native::avx2_fma()) check("avx2", native::gelu_span_avx2);
        if (__builtin_cpu_supports("avx512f")) check("avx512", native::gelu_span_avx512);
      }
  }
}

// ---- the zoo's encoder --------------------------------------------------------------------
using testing::sample_graph;

TEST(TransformerFusion, PatternsMatchTheZooEncoder) {
  Graph g = sample_graph("transformer_small");          // 2 layers
  std::map<std::string, std::set<std::string>> labels;  // backend -> labels
  for (const Candidate& c : enumerate_candidates(g, {&native_backend(), &onednn_backend()}))
    labels[c.backend].insert(c.label);
  auto has = [&](const std::string& backend, const std::string& label) {
    return labels[backend].count(label) != 0;
  };
  EXPECT_TRUE(has("native", "Add+LayerNormalization"));
  EXPECT_TRUE(has("onednn", "Add+LayerNormalization"));
  EXPECT_TRUE(has("native", "Div+Erf+Add+Mul+Mul"));
  EXPECT_TRUE(has("native", "MatMul+Add+Div+Erf+Add+Mul+Mul"));
  int attention = 0, layout_attention = 0;
  for (const Candidate& c : enumerate_candidates(g, {&native_backend()})) {
    SubGraph sub = make_subgraph(g, c.nodes);
    auto b = attention_of(g, sub);
    if (!b) continue;
    ++attention;
    // The largest form takes the operands' Reshapes and Transposes and the Transpose + Reshape after:
    // Q, K and V are read in place from the projections' outputs.
    if (b->out_perm == std::vector<int64_t>{0, 2, 1, 3} && b->reshape) {
      ++layout_attention;
      std::map<std::string, int> ops;
      for (NodeId n : b->nodes) ++ops[g.node(n).op_type];
      EXPECT_EQ(ops["Transpose"], 4) << c.label;
      EXPECT_EQ(ops["Reshape"], 4) << c.label;
      for (const AttentionOperand* o : {&b->q, &b->k, &b->v})
        EXPECT_EQ(g.node(g.value(o->value).producer).op_type, "Add") << c.label;  // the projection's bias
      EXPECT_EQ(b->k.strides.back(), b->q.strides[b->q.strides.size() - 2]) << "K^T read across rows";
    }
  }
  EXPECT_EQ(attention, 4);  // per layer: the core alone and the largest form
  EXPECT_EQ(layout_attention, 2);
}

TEST(TransformerFusion, TunedEncoderUsesFusedKernelsAndMatchesReference) {
  Graph g = sample_graph("transformer_small");
  TuneOptions options;
  options.measure.min_time_ms = 0.5;
  options.measure.min_samples = 3;
  options.measure.warmup_runs = 1;
  TuneResult r = tune(g, all_backends(), native::node_evaluator(), options, nullptr);
  std::vector<std::string> fused;
  for (const PlacedKernel& k : r.placement.kernels) {
    IndexSet s(g.nodes.size());
    for (NodeId n : k.nodes) s.add(static_cast<size_t>(n));
    SubGraph sub = make_subgraph(g, s);
    if (layer_norm_of(g, sub) || gelu_of(g, sub) || attention_of(g, sub))
      fused.push_back(k.backend + ":" + k.label);
  }
  EXPECT_FALSE(fused.empty());
  for (const std::string& f : fused) std::cout << "  placed " << f << "\n";
  Executor placed(g, placement_steps(g, r.placement, all_backends(), CompileOptions{}));
  Executor reference(g, native::native_steps(g));
  auto got = placed.run(r.inputs), want = reference.run(r.inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    auto a = got[o].to_double_vector(), b = want[o].to_double_vector();
    double scale = 0;
    for (double v : b) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_LE(std::fabs(a[i] - b[i]), 1e-4 + 1e-3 * scale + 1e-3 * std::fabs(b[i])) << "output " << o;
  }
}

}  // namespace
}  // namespace collage
