// Edge cases for the oneDNN backend: every candidate the spec claims on these
// graphs must compile (Supported) and match the native reference.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_spec.h"
#include "core/ir/tensor_compare.h"

namespace collage {
namespace {

using namespace collage::testing;

const BackendSpec& spec() { return onednn_backend(); }

std::set<std::string> check(const Graph& g, const std::string& what, double tol = 1e-4) {
  auto values = reference_values(g);
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&spec()})) {
    CandidateCheck r = check_candidate(g, spec(), c.nodes, values, tol, tol);
    EXPECT_TRUE(r.supported) << what << " " << c.label << ": " << r.mismatch;
    EXPECT_TRUE(r.mismatch.empty()) << what << " " << c.label << ": " << r.mismatch;
    labels.insert(c.label);
  }
  return labels;
}

using M = OnnxTestModel;

TEST(OnednnEdgeCases, ConvAutoPadAnd3DGrouped) {
  for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    M m(17);
    m.input("x", {2, 4, 7, 9});
    m.initializer("w", random_tensor_f32({6, 2, 3, 2}, 1));
    auto& c = m.node("Conv", {"x", "w"}, {"c"});
    M::attr_string(c, "auto_pad", ap);
    M::attr_ints(c, "strides", {2, 2});
    M::attr_int(c, "group", 2);
    m.node("Relu", {"c"}, {"y"});
    m.output("y");
    EXPECT_TRUE(check(import_model(m), ap).count("Conv+Relu"));
  }
  M m(17);
  m.input("x", {1, 6, 5, 6, 7});
  m.initializer("w", random_tensor_f32({6, 1, 3, 3, 3}, 2));
  m.initializer("b", random_tensor_f32({6}, 3));
  auto& c = m.node("Conv", {"x", "w", "b"}, {"c"});
  M::attr_int(c, "group", 6);
  M::attr_ints(c, "dilations", {2, 1, 2});
  M::attr_ints(c, "pads", {2, 0, 1, 1, 1, 2});
  m.initializer("lo", Tensor::scalar<float>(0.0f));
  m.initializer("hi", Tensor::scalar<float>(6.0f));
  m.node("Clip", {"c", "lo", "hi"}, {"y"});
  m.output("y");
  EXPECT_TRUE(check(import_model(m), "3d depthwise").count("Conv+Clip"));
}

// Residual operand on either side, non-commutative ops, per-channel constants.
TEST(OnednnEdgeCases, ConvBinaryPostOps) {
  for (const char* op : {"Sub", "Div", "Add", "Mul", "Max"}) {
    for (bool conv_first : {true, false}) {
      M m(17);
      m.input("x", {1, 3, 6, 5});
      m.input("r", {1, 4, 6, 5});
      m.initializer("w", random_tensor_f32({4, 3, 3, 3}, 4));
      auto& c = m.node("Conv", {"x", "w"}, {"c"});
      M::attr_ints(c, "pads", {1, 1, 1, 1});
      m.node("Abs", {"r"}, {"ra"});  // keep Div away from tiny divisors
      m.initializer("one", Tensor::scalar<float>(0.5f));
      m.node("Add", {"ra", "one"}, {"rp"});
      if (conv_first)
        m.node(op, {"c", "rp"}, {"a"});
      else
        m.node(op, {"rp", "c"}, {"a"});
      m.node("Relu", {"a"}, {"y"});
      m.output("y");
      check(import_model(m), std::string(op) + (conv_first ? " conv,r" : " r,conv"), 2e-4);
    }
  }
  M m(17);
  m.input("x", {2, 3, 6, 5});
  m.initializer("w", random_tensor_f32({4, 3, 1, 1}, 5));
  m.initializer("s", random_tensor_f32({4, 1, 1}, 6));
  m.initializer("t", random_tensor_f32({1}, 7));
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("Mul", {"s", "c"}, {"cs"});
  m.node("Add", {"cs", "t"}, {"ct"});
  m.node("Sigmoid", {"ct"}, {"y"});
  m.output("y");
  EXPECT_TRUE(check(import_model(m), "per-channel").count("Conv+Mul+Add+Sigmoid"));
}

TEST(OnednnEdgeCases, ConvBatchNormFolding) {
  M m(17);
  m.input("x", {2, 3, 7, 7});
  m.input("r", {2, 5, 4, 4});
  m.initializer("w", random_tensor_f32({5, 3, 3, 3}, 8));
  auto& c = m.node("Conv", {"x", "w"}, {"c"});
  M::attr_ints(c, "strides", {2, 2});
  M::attr_ints(c, "pads", {1, 1, 1, 1});
  m.initializer("sc", random_tensor_f32({5}, 9));
  m.initializer("bi", random_tensor_f32({5}, 10));
  m.initializer("mu", random_tensor_f32({5}, 11));
  Tensor var = random_tensor_f32({5}, 12);
  for (int i = 0; i < 5; ++i) var.data<float>()[i] = 0.3f + std::fabs(var.data<float>()[i]);
  m.initializer("var", var);
  m.node("BatchNormalization", {"c", "sc", "bi", "mu", "var"}, {"n"});
  m.node("Add", {"n", "r"}, {"a"});
  m.node("Relu", {"a"}, {"y"});
  m.output("y");
  auto labels = check(import_model(m), "conv+bn");
  EXPECT_TRUE(labels.count("Conv+BatchNormalization+Add+Relu"));
}

TEST(OnednnEdgeCases, ConvTransposeVariants) {
  struct Case {
    const char* name;
    Shape x, w;
    std::vector<int64_t> strides, pads, dil, out_pad, out_shape;
    int64_t group;
    const char* auto_pad;
    bool bias;
  };
  std::vector<Case> cases = {
      {"grouped_outpad",
       {2, 4, 5, 6},
       {4, 3, 3, 3},
       {2, 2},
       {1, 0, 0, 1},
       {1, 1},
       {1, 0},
       {},
       2,
       "NOTSET",
       true},
      {"dilated_nobias",
       {1, 3, 4, 5},
       {3, 2, 3, 2},
       {1, 2},
       {0, 1, 1, 0},
       {2, 2},
       {},
       {},
       1,
       "NOTSET",
       false},
      {"same_upper", {1, 2, 5, 5}, {2, 3, 3, 3}, {2, 2}, {}, {1, 1}, {}, {}, 1, "SAME_UPPER", true},
      {"same_lower", {1, 2, 5, 5}, {2, 3, 4, 4}, {2, 2}, {}, {1, 1}, {}, {}, 1, "SAME_LOWER", true},
      {"output_shape", {1, 2, 4, 4}, {2, 3, 3, 3}, {2, 2}, {}, {1, 1}, {}, {8, 7}, 1, "NOTSET", true},
      {"1d", {2, 3, 7}, {3, 2, 4}, {3}, {1, 2}, {1}, {}, {}, 1, "NOTSET", true},
      {"depthwise", {1, 4, 5, 5}, {4, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {}, {}, 4, "NOTSET", true},
  };
  for (const Case& cs : cases) {
    M m(17);
    m.input("x", cs.x);
    m.initializer("w", random_tensor_f32(cs.w, 13));
    std::vector<std::string> ins = {"x", "w"};
    if (cs.bias) {
      m.initializer("b", random_tensor_f32({cs.w[1] * cs.group}, 14));
      ins.push_back("b");
    }
    auto& c = m.node("ConvTranspose", ins, {"c"});
    M::attr_ints(c, "strides", cs.strides);
    if (!cs.pads.empty()) M::attr_ints(c, "pads", cs.pads);
    M::attr_ints(c, "dilations", cs.dil);
    if (!cs.out_pad.empty()) M::attr_ints(c, "output_padding", cs.out_pad);
    if (!cs.out_shape.empty()) M::attr_ints(c, "output_shape", cs.out_shape);
    M::attr_int(c, "group", cs.group);
    M::attr_string(c, "auto_pad", cs.auto_pad);
    m.node("Elu", {"c"}, {"y"});
    m.output("y");
    EXPECT_TRUE(check(import_model(m), cs.name).count("ConvTranspose+Elu")) << cs.name;
  }
}

TEST(OnednnEdgeCases, MatMulShapes) {
  struct Case {
    const char* name;
    Shape a, b;
    bool b_const, a_const;
  };
  std::vector<Case> cases = {
      {"4d_x_2d_const", {2, 3, 5, 7}, {7, 4}, true, false},
      {"batched_runtime", {3, 5, 7}, {3, 7, 4}, false, false},
      {"bcast_batch_b1", {3, 5, 7}, {1, 7, 4}, false, false},
      {"bcast_batch_a1", {1, 5, 7}, {3, 7, 4}, false, false},
      {"const_a", {5, 7}, {7, 4}, false, true},
      {"lower_rank_a", {5, 7}, {2, 7, 4}, true, false},
      {"vec_b", {2, 5, 7}, {7}, true, false},
  };
  for (const Case& cs : cases) {
    M m(17);
    if (cs.a_const)
      m.initializer("a", random_tensor_f32(cs.a, 15));
    else
      m.input("a", cs.a);
    if (cs.b_const)
      m.initializer("b", random_tensor_f32(cs.b, 16));
    else
      m.input("b", cs.b);
    m.node("MatMul", {"a", "b"}, {"mm"});
    m.initializer("bias", random_tensor_f32({cs.b.size() > 1 ? cs.b.back() : 1}, 17));
    m.node("Add", {"mm", "bias"}, {"mb"});
    m.node("Gelu", {"mb"}, {"y"});
    m.output("y");
    check(import_model(m), cs.name);
  }
}

TEST(OnednnEdgeCases, GemmVariants) {
  struct Case {
    const char* name;
    int64_t ta, tb;
    float alpha, beta;
    Shape c;
  };
  std::vector<Case> cases = {
      {"bias_N", 0, 1, 1, 1, {4}},     {"bias_1N", 0, 0, 1, 1, {1, 4}},       {"bias_MN", 0, 1, 1, 1, {5, 4}},
      {"bias_M1", 0, 0, 1, 1, {5, 1}}, {"bias_scalar", 0, 0, 1, 1, {}},       {"no_bias", 0, 1, 1, 1, {0}},
      {"transA", 1, 0, 1, 1, {4}},     {"alpha_beta", 0, 1, 0.5f, 2.0f, {4}},
  };
  for (const Case& cs : cases) {
    M m(17);
    m.input("a", cs.ta ? Shape{7, 5} : Shape{5, 7});
    m.initializer("b", random_tensor_f32(cs.tb ? Shape{4, 7} : Shape{7, 4}, 18));
    std::vector<std::string> ins = {"a", "b"};
    if (!(cs.c.size() == 1 && cs.c[0] == 0)) {
      m.initializer("c", random_tensor_f32(cs.c, 19));
      ins.push_back("c");
    }
    auto& g = m.node("Gemm", ins, {"g"});
    M::attr_int(g, "transA", cs.ta);
    M::attr_int(g, "transB", cs.tb);
    M::attr_float(g, "alpha", cs.alpha);
    M::attr_float(g, "beta", cs.beta);
    m.node("Relu", {"g"}, {"y"});
    m.output("y");
    check(import_model(m), cs.name);
  }
}

TEST(OnednnEdgeCases, PoolingEdgeCases) {
  struct Case {
    const char* op;
    Shape x;
    std::vector<int64_t> k, s, pads, dil;
    int64_t ceil, include;
    const char* auto_pad;
  };
  std::vector<Case> cases = {
      {"MaxPool", {1, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 0, "NOTSET"},  // negative right pad
      {"AveragePool", {1, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 1, "NOTSET"},  // ditto, include
                                                                                            // pad
      {"AveragePool", {1, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 0, "NOTSET"},
      {"MaxPool", {2, 2, 9, 8}, {3, 2}, {2, 3}, {1, 0, 1, 1}, {2, 1}, 0, 0, "NOTSET"},  // dilation
      {"MaxPool", {1, 2, 6, 6}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, 0, "NOTSET"},  // ceil: window in pad
      {"MaxPool", {1, 2, 7, 6}, {3, 3}, {2, 2}, {}, {1, 1}, 0, 0, "SAME_UPPER"},
      {"AveragePool", {1, 2, 7, 6}, {3, 3}, {2, 2}, {}, {1, 1}, 0, 0, "SAME_LOWER"},
      {"AveragePool", {1, 2, 7, 6}, {3, 3}, {2, 2}, {}, {1, 1}, 0, 1, "SAME_UPPER"},
      {"AveragePool", {1, 2, 8, 7}, {3, 2}, {2, 2}, {1, 0, 0, 1}, {1, 1}, 0, 1, "NOTSET"},
      {"MaxPool", {2, 3, 11}, {3}, {2}, {1, 1}, {1}, 1, 0, "NOTSET"},
      {"AveragePool", {1, 2, 5, 6, 7}, {2, 3, 2}, {1, 2, 2}, {0, 1, 1, 1, 0, 0}, {1, 1, 1}, 0, 0, "NOTSET"},
  };
  int i = 0;
  for (const Case& cs : cases) {
    M m(17);
    m.input("x", cs.x);
    auto& p = m.node(cs.op, {"x"}, {"p"});
    M::attr_ints(p, "kernel_shape", cs.k);
    M::attr_ints(p, "strides", cs.s);
    if (!cs.pads.empty()) M::attr_ints(p, "pads", cs.pads);
    if (std::string(cs.op) == "MaxPool") M::attr_ints(p, "dilations", cs.dil);
    M::attr_int(p, "ceil_mode", cs.ceil);
    if (std::string(cs.op) == "AveragePool") M::attr_int(p, "count_include_pad", cs.include);
    M::attr_string(p, "auto_pad", cs.auto_pad);
    m.output("p");
    check(import_model(m), std::string(cs.op) + "#" + std::to_string(i++));
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
    for (Shape x : {Shape{2, 3, 7}, Shape{1, 5, 7, 9}, Shape{1, 2, 3, 4, 5}}) {
      M m(17);
      m.input("x", x);
      m.node(op, {"x"}, {"p"});
      m.output("p");
      check(import_model(m), op);
    }
}

TEST(OnednnEdgeCases, NormsAndSoftmax) {
  for (Shape x : {Shape{4, 3}, Shape{2, 3, 5}, Shape{1, 2, 3, 4, 5}}) {
    M m(17);
    m.input("x", x);
    int64_t c = x[1];
    m.initializer("sc", random_tensor_f32({c}, 20));
    m.initializer("bi", random_tensor_f32({c}, 21));
    m.initializer("mu", random_tensor_f32({c}, 22));
    Tensor var = random_tensor_f32({c}, 23);
    for (int64_t i = 0; i < c; ++i) var.data<float>()[i] = 0.3f + std::fabs(var.data<float>()[i]);
    m.initializer("var", var);
    auto& bn = m.node("BatchNormalization", {"x", "sc", "bi", "mu", "var"}, {"n"});
    M::attr_float(bn, "epsilon", 1e-3f);
    m.initializer("ls", random_tensor_f32({x.back()}, 24));
    auto& ln = m.node("LayerNormalization", {"x", "ls"}, {"l"});
    M::attr_float(ln, "epsilon", 1e-3f);
    for (int64_t axis = 0; axis < static_cast<int64_t>(x.size()); ++axis) {
      std::string a = std::to_string(axis);
      auto& sm = m.node("Softmax", {"x"}, {"sm" + a});
      M::attr_int(sm, "axis", axis);
      auto& lsm = m.node("LogSoftmax", {"x"}, {"lsm" + a});
      M::attr_int(lsm, "axis", axis - static_cast<int64_t>(x.size()));
      m.output("sm" + a);
      m.output("lsm" + a);
    }
    m.output("n");
    m.output("l");
    check(import_model(m), "norms rank " + std::to_string(x.size()), 2e-4);
  }
}

TEST(OnednnEdgeCases, EltwiseOps) {
  M m(17);
  m.input("x", {2, 5, 7});
  m.node("Abs", {"x"}, {"ax"});
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "HardSwish", "Gelu", "HardSigmoid",
                         "Softplus", "Reciprocal", "Softsign", "Floor", "Round"})
    m.output(m.node(op, {"x"}, {std::string("o_") + op}).output(0));
  for (const char* op : {"Log", "Sqrt"}) m.output(m.node(op, {"ax"}, {std::string("o_") + op}).output(0));
  m.output(m.node("Reciprocal", {"ax"}, {"o_rec"}).output(0));
  auto& lr = m.node("LeakyRelu", {"x"}, {"o_lr"});
  M::attr_float(lr, "alpha", 0.3f);
  auto& elu = m.node("Elu", {"x"}, {"o_elu"});
  M::attr_float(elu, "alpha", 0.7f);
  auto& gt = m.node("Gelu", {"x"}, {"o_gt"});
  M::attr_string(gt, "approximate", "tanh");
  auto& hs = m.node("HardSigmoid", {"x"}, {"o_hs"});
  M::attr_float(hs, "alpha", 0.3f);
  M::attr_float(hs, "beta", 0.4f);
  m.initializer("lo", Tensor::scalar<float>(-0.2f));
  m.initializer("hi", Tensor::scalar<float>(0.4f));
  m.node("Clip", {"x", "lo", "hi"}, {"o_clip"});
  m.node("Clip", {"x", "", "hi"}, {"o_clip_hi"});
  m.node("Clip", {"x", "lo"}, {"o_clip_lo"});
  m.node("Clip", {"x"}, {"o_clip_none"});
  m.initializer("e", Tensor::scalar<float>(2.0f));
  m.node("Pow", {"ax", "e"}, {"o_pow"});
  for (const char* o :
       {"o_lr", "o_elu", "o_gt", "o_hs", "o_clip", "o_clip_hi", "o_clip_lo", "o_clip_none", "o_pow"})
    m.output(o);
  check(import_model(m), "eltwise");
}

TEST(OnednnEdgeCases, BinaryBroadcasts) {
  struct Case {
    Shape a, b;
  };
  std::vector<Case> cases = {
      {{2, 5, 6}, {6}}, {{6}, {2, 5, 6}}, {{2, 5, 6}, {2, 1, 6}}, {{2, 1, 6}, {1, 5, 1}},
      {{2, 5, 6}, {}},  {{}, {2, 5, 6}},  {{3, 1}, {3, 4}},       {{7}, {7}},
      {{7}, {1}},       {{}, {}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"})
    for (const Case& cs : cases) {
      M m(17);
      m.input("a", cs.a);
      m.input("b", cs.b);
      m.node("Abs", {"b"}, {"ab"});
      m.initializer("h", Tensor::scalar<float>(0.25f));
      m.node("Add", {"ab", "h"}, {"bp"});  // Div by >= 0.25
      m.node(op, {"a", "bp"}, {"y"});
      m.node("Tanh", {"y"}, {"t"});
      m.output("t");
      check(import_model(m), std::string(op) + " " + shape_to_string(cs.a) + shape_to_string(cs.b));
    }
}

TEST(OnednnEdgeCases, GeluErfSubgraph) {
  M m(17);
  m.input("x", {3, 8});
  m.initializer("w", random_tensor_f32({8, 6}, 25));
  m.initializer("b", random_tensor_f32({6}, 26));
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "b"}, {"h"});
  m.initializer("sqrt2", Tensor::scalar<float>(1.4142135f));
  m.initializer("one", Tensor::scalar<float>(1.0f));
  m.initializer("half", Tensor::scalar<float>(0.5f));
  m.node("Div", {"h", "sqrt2"}, {"d"});
  m.node("Erf", {"d"}, {"e"});
  m.node("Add", {"e", "one"}, {"e1"});
  m.node("Mul", {"h", "e1"}, {"p"});
  m.node("Mul", {"p", "half"}, {"y"});
  m.output("y");
  check(import_model(m), "gelu-erf");
}

// Exporter variants of GELU and swish, SE gating, HardSigmoid/HardSwish heads, BN+Relu.
TEST(OnednnEdgeCases, FusionBlocks) {
  for (int form = 0; form < 3; ++form) {
    M m(17);
    m.input("x", {2, 3, 5, 6});
    m.initializer("w", random_tensor_f32({4, 3, 3, 3}, 27));
    auto& c = m.node("Conv", {"x", "w"}, {"h"});
    M::attr_ints(c, "pads", {1, 1, 1, 1});
    m.initializer("rs2", Tensor::scalar<float>(0.70710678f));
    m.initializer("one", Tensor::scalar<float>(1.0f));
    m.initializer("half", Tensor::scalar<float>(0.5f));
    m.node("Mul", {"rs2", "h"}, {"d"});
    m.node("Erf", {"d"}, {"e"});
    m.node("Add", {"one", "e"}, {"e1"});
    if (form == 0) {
      m.node("Mul", {"e1", "h"}, {"p"});
      m.node("Mul", {"half", "p"}, {"y"});
    } else if (form == 1) {
      m.node("Mul", {"h", "half"}, {"p"});
      m.node("Mul", {"p", "e1"}, {"y"});
    } else {
      m.node("Mul", {"e1", "half"}, {"p"});
      m.node("Mul", {"h", "p"}, {"y"});
    }
    m.output("y");
    auto labels = check(import_model(m), "gelu form " + std::to_string(form));
    EXPECT_EQ(labels.count(form == 1 ? "Conv+Mul+Mul+Erf+Add+Mul" : "Conv+Mul+Erf+Add+Mul+Mul"), 1u) << form;
  }
  M m(17);
  m.input("x", {1, 4, 6, 7});
  m.initializer("w", random_tensor_f32({4, 4, 1, 1}, 28));
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("Sigmoid", {"c"}, {"s"});
  m.node("Mul", {"s", "c"}, {"sw"});  // swish
  m.node("GlobalAveragePool", {"sw"}, {"gp"});
  m.initializer("w2", random_tensor_f32({4, 4, 1, 1}, 29));
  m.node("Conv", {"gp", "w2"}, {"g"});
  m.node("HardSigmoid", {"g"}, {"gs"});
  m.node("Mul", {"sw", "gs"}, {"se"});  // SE gating: the chain is the small operand
  m.node("HardSwish", {"se"}, {"hs"});
  m.initializer("sc", random_tensor_f32({4}, 30));
  m.initializer("bi", random_tensor_f32({4}, 31));
  m.initializer("mu", random_tensor_f32({4}, 32));
  Tensor var = random_tensor_f32({4}, 33);
  for (int i = 0; i < 4; ++i) var.data<float>()[i] = 0.3f + std::fabs(var.data<float>()[i]);
  m.initializer("var", var);
  m.node("BatchNormalization", {"hs", "sc", "bi", "mu", "var"}, {"n"});
  m.node("Relu", {"n"}, {"r"});
  auto& sl = m.node("Selu", {"r"}, {"y"});
  M::attr_float(sl, "alpha", 1.5f);
  m.output("y");
  auto labels = check(import_model(m), "swish/se");
  EXPECT_EQ(labels.count("Conv+Sigmoid+Mul"), 1u);
  EXPECT_EQ(labels.count("Conv+HardSigmoid"), 1u);
  EXPECT_EQ(labels.count("BatchNormalization+Relu"), 1u);
  EXPECT_EQ(labels.count("BatchNormalization+Relu+Selu"), 0u);  // one post-op only in 2.6
}

TEST(OnednnEdgeCases, PowGemmRuntimeAvgCeil) {
  M m(17);
  m.input("x", {3, 4});
  m.input("b", {4, 5});
  for (float e : {2.0f, 3.0f, 0.5f, -2.0f}) {
    std::string n = std::to_string(static_cast<int>(e * 10));
    m.initializer("e" + n, Tensor::scalar<float>(e));
    std::string base = e == 0.5f || e == -2.0f ? "ax" : "x";
    m.node("Pow", {base, "e" + n}, {"p" + n});
    m.output("p" + n);
  }
  m.node("Abs", {"x"}, {"ax"});
  m.node("Gemm", {"x", "b"}, {"g"});
  m.node("Relu", {"g"}, {"gr"});
  m.output("gr");
  check(import_model(m), "pow/gemm runtime");
  for (int64_t include : {0, 1}) {
    M p(17);
    p.input("x", {1, 2, 7, 8});
    auto& ap = p.node("AveragePool", {"x"}, {"a"});
    M::attr_ints(ap, "kernel_shape", {3, 3});
    M::attr_ints(ap, "strides", {2, 2});
    M::attr_ints(ap, "pads", {1, 1, 1, 1});
    M::attr_int(ap, "ceil_mode", 1);
    M::attr_int(ap, "count_include_pad", include);
    p.output("a");
    check(import_model(p), "avg ceil incl " + std::to_string(include));
  }
}

// Channel counts that make oneDNN pick blocked layouts: the residual operand is
// then read in the convolution's own layout (reordered inside the kernel).
TEST(OnednnEdgeCases, BlockedResidual) {
  for (int64_t ch : {16, 32, 40}) {
    M m(17);
    m.input("x", {2, ch, 9, 7});
    m.input("r", {2, ch, 5, 4});
    m.initializer("w", random_tensor_f32({ch, ch, 3, 3}, 34, 0.1f));
    m.initializer("b", random_tensor_f32({ch}, 35));
    auto& c = m.node("Conv", {"x", "w", "b"}, {"c"});
    M::attr_ints(c, "pads", {1, 1, 1, 1});
    M::attr_ints(c, "strides", {2, 2});
    m.node("Sub", {"r", "c"}, {"s"});
    m.node("Add", {"s", "r"}, {"a"});
    m.node("Relu", {"a"}, {"y"});
    m.output("y");
    auto labels = check(import_model(m), "blocked residual " + std::to_string(ch));
    EXPECT_EQ(labels.count("Conv+Sub+Add+Relu"), 1u);
  }

  M m(17);  // deconvolution with a full-shape residual
  m.input("x", {1, 16, 5, 6});
  m.input("r", {1, 24, 10, 12});
  m.initializer("w", random_tensor_f32({16, 24, 2, 2}, 36, 0.2f));
  auto& t = m.node("ConvTranspose", {"x", "w"}, {"t"});
  M::attr_ints(t, "strides", {2, 2});
  m.node("Add", {"r", "t"}, {"y"});
  m.output("y");
  EXPECT_EQ(check(import_model(m), "deconv residual").count("ConvTranspose+Add"), 1u);
}

// 3x3 stride-1 layers run as Winograd (DenseNet's 128 -> 32 at 28x28, a 64 -> 64 residual
// layer); the rule's exclusions (stride 2, 7x7 with 16 outputs) run direct. All agree with
// the native reference under the tuner's own rule, post-ops included.
TEST(OnednnEdgeCases, WinogradLayersMatchTheReference) {
  struct Case {
    int64_t cin, cout, hw, stride;
    bool residual, winograd;
  };
  for (const Case& k : {Case{128, 32, 28, 1, false, true}, Case{64, 64, 14, 1, true, true},
                        Case{32, 16, 7, 1, false, false}, Case{32, 32, 14, 2, true, false}}) {
    M m(17);
    int64_t out_hw = k.hw / k.stride;
    m.input("x", {1, k.cin, k.hw, k.hw});
    m.input("r", {1, k.cout, out_hw, out_hw});
    m.initializer("w", random_tensor_f32({k.cout, k.cin, 3, 3}, 37, 0.1f));
    m.initializer("b", random_tensor_f32({k.cout}, 38));
    auto& c = m.node("Conv", {"x", "w", "b"}, {"c"});
    M::attr_ints(c, "pads", {1, 1, 1, 1});
    M::attr_ints(c, "strides", {k.stride, k.stride});
    std::string pre = "c";
    if (k.residual) {
      m.node("Add", {"c", "r"}, {"a"});
      pre = "a";
    }
    m.node("Relu", {pre}, {"y"});
    m.output("y");
    Graph g = import_model(m);
    std::string what = std::to_string(k.cin) + "->" + std::to_string(k.cout) + " at " + std::to_string(k.hw);
    const Node& conv = g.nodes[0];
    onednn::ConvGeometry geo =
        onednn::conv_geometry(conv, g.value(conv.inputs[0]).shape, g.value(conv.inputs[1]).shape,
                              g.value(conv.outputs[0]).shape, false);
    EXPECT_EQ(onednn::winograd_pays(g.value(conv.inputs[1]).shape, g.value(conv.outputs[0]).shape, geo),
              k.winograd)
        << what;
    auto values = reference_values(g);
    for (const Candidate& cand : enumerate_candidates(g, {&spec()})) {
      CandidateCheck r =
          check_candidate(g, spec(), cand.nodes, values, kKernelTolerance.rtol, kKernelTolerance.atol);
      EXPECT_TRUE(r.supported && r.mismatch.empty()) << what << " " << cand.label << ": " << r.mismatch;
    }
  }
}

// A kernel must give the same answer when run concurrently from several threads.
TEST(OnednnEdgeCases, ConcurrentRuns) {
  const ConvCase& cc = conv_cases()[1];
  Graph g = conv_model(cc);
  auto values = reference_values(g);
  for (const Candidate& c : enumerate_candidates(g, {&spec()})) {
    SubGraph sub = make_subgraph(g, c.nodes);
    auto k = spec().compile(g, sub, {});
    std::vector<const Tensor*> args;
    for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
    std::vector<std::thread> threads;
    std::atomic<int> bad{0};
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        HeapAllocator alloc;
        for (int rep = 0; rep < 20; ++rep) {
          auto outs = k->run(args, alloc);
          auto a = outs[0].to_double_vector(),
               b = values[static_cast<size_t>(sub.outputs[0])].to_double_vector();
          for (size_t i = 0; i < a.size(); ++i)
            if (std::fabs(a[i] - b[i]) > 1e-4 + 1e-4 * std::fabs(b[i])) {
              ++bad;
              break;
            }
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(bad.load(), 0) << c.label;
  }
}

}  // namespace
}  // namespace collage
