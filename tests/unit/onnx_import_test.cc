#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::count_ops;
using testing::import_bytes;
using testing::import_model;
using testing::OnnxTestModel;
using testing::run_native;

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

Tensor iota(const Shape& shape, float start = 0.0f, float step = 1.0f) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

const Node& only_node(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op_type == op) return n;
  throw std::runtime_error("no " + op + " node");
}

TEST(Import, Opset6PadAttributesBecomeInputs) {
  OnnxTestModel m(6);
  m.input("x", {1, 2});
  auto& pad = m.node("Pad", {"x"}, {"y"});
  OnnxTestModel::attr_ints(pad, "pads", {0, 1, 0, 2});
  OnnxTestModel::attr_float(pad, "value", 7.0f);
  m.output("y");
  Graph g = import_model(m);
  const Node& n = only_node(g, "Pad");
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_FALSE(n.has_attr("pads"));
  EXPECT_EQ(g.value(n.inputs[1]).constant->to_int64_vector(), (std::vector<int64_t>{0, 1, 0, 2}));
  auto out = run_native(g, {Tensor::from_vector<float>({1, 2}, {1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 5}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{7, 1, 2, 7, 7}));
}

TEST(Import, Opset9SliceAndOpset11SqueezeAttributesBecomeInputs) {
  OnnxTestModel m(9);
  m.input("x", {3, 4});
  auto& s = m.node("Slice", {"x"}, {"s"});
  OnnxTestModel::attr_ints(s, "starts", {1});
  OnnxTestModel::attr_ints(s, "ends", {2});
  OnnxTestModel::attr_ints(s, "axes", {0});
  auto& q = m.node("Squeeze", {"s"}, {"y"});
  OnnxTestModel::attr_ints(q, "axes", {0});
  m.output("y");
  Graph g = import_model(m);
  EXPECT_EQ(only_node(g, "Slice").inputs.size(), 4u);
  EXPECT_EQ(only_node(g, "Squeeze").inputs.size(), 2u);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{4}));
  auto out = run_native(g, {iota({3, 4})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{4, 5, 6, 7}));
}

TEST(Import, Opset11ReduceAndSplitAndClipNormalised) {
  OnnxTestModel m(6);
  m.input("x", {2, 4});
  auto& r = m.node("ReduceSum", {"x"}, {"r"});
  OnnxTestModel::attr_ints(r, "axes", {1});
  OnnxTestModel::attr_int(r, "keepdims", 0);
  auto& sp = m.node("Split", {"x"}, {"a", "b"});
  OnnxTestModel::attr_int(sp, "axis", 1);
  OnnxTestModel::attr_ints(sp, "split", {1, 3});
  auto& c = m.node("Clip", {"b"}, {"c"});
  OnnxTestModel::attr_float(c, "min", 2.0f);
  OnnxTestModel::attr_float(c, "max", 5.0f);
  m.output("r");
  m.output("a");
  m.output("c");
  Graph g = import_model(m);
  EXPECT_EQ(only_node(g, "ReduceSum").inputs.size(), 2u);
  EXPECT_EQ(only_node(g, "Split").inputs.size(), 2u);
  EXPECT_EQ(only_node(g, "Clip").inputs.size(), 3u);
  auto out = run_native(g, {iota({2, 4})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{0 + 1 + 2 + 3, 4 + 5 + 6 + 7}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{0, 4}));
  EXPECT_EQ(values(out[2]), (std::vector<float>{2, 2, 3, 5, 5, 5}));
}

TEST(Import, UpsampleBecomesAsymmetricNearestResize) {
  OnnxTestModel m(9);
  m.input("x", {1, 1, 1, 2});
  m.initializer("scales", Tensor::from_vector<float>({4}, {1, 1, 2, 2}));
  m.node("Upsample", {"x", "scales"}, {"y"});
  m.output("y");
  Graph g = import_model(m);
  const Node& n = only_node(g, "Resize");
  EXPECT_EQ(n.attr_string("coordinate_transformation_mode", ""), "asymmetric");
  auto out = run_native(g, {Tensor::from_vector<float>({1, 1, 1, 2}, {1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 2, 4}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
}

TEST(Import, LegacySoftmaxCoercesTo2D) {
  // Opset 11 Softmax(axis=1) on [2,3,4] normalises over the 12 trailing elements.
  OnnxTestModel m(11);
  m.input("x", {2, 3, 4});
  auto& s = m.node("Softmax", {"x"}, {"y"});
  OnnxTestModel::attr_int(s, "axis", 1);
  m.output("y");
  Graph g = import_model(m);
  EXPECT_EQ(only_node(g, "Softmax").attr_int("axis", 0), -1);
  Tensor x = iota({2, 3, 4}, -1.0f, 0.1f);
  auto out = run_native(g, {x});
  ASSERT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  for (int b = 0; b < 2; ++b) {
    double denom = 0;
    for (int i = 0; i < 12; ++i) denom += std::exp(x.data<float>()[b * 12 + i]);
    for (int i = 0; i < 12; ++i)
      EXPECT_NEAR(out[0].data<float>()[b * 12 + i], std::exp(x.data<float>()[b * 12 + i]) / denom, 1e-6);
  }
}

TEST(Import, Opset6BroadcastWithAxisAlignsFromTheAxis) {
  OnnxTestModel m(6);
  m.input("a", {2, 3, 2});
  m.input("b", {3});
  auto& add = m.node("Add", {"a", "b"}, {"y"});
  OnnxTestModel::attr_int(add, "broadcast", 1);
  OnnxTestModel::attr_int(add, "axis", 1);
  m.output("y");
  Graph g = import_model(m);
  auto out = run_native(g, {iota({2, 3, 2}, 0, 0), Tensor::from_vector<float>({3}, {10, 20, 30})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{10, 10, 20, 20, 30, 30, 10, 10, 20, 20, 30, 30}));
}

TEST(Import, Opset6PReluSlopeIsPerChannel) {
  OnnxTestModel m(6);
  m.input("x", {1, 2, 2});
  m.initializer("slope", Tensor::from_vector<float>({2}, {0.5f, 0.25f}));
  m.node("PRelu", {"x", "slope"}, {"y"});
  m.output("y");
  Graph g = import_model(m);
  auto out = run_native(g, {Tensor::from_vector<float>({1, 2, 2}, {-1, 2, -3, 4})});
  EXPECT_EQ(values(out[0]), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
}

// The chain PyTorch emits for x.view(x.size(0), -1) with a dynamic batch.
OnnxTestModel pytorch_view_model() {
  OnnxTestModel m(13);
  m.input("x", {-1, 2, 3});
  m.node("Shape", {"x"}, {"shape"});
  m.initializer("zero", Tensor::scalar<int64_t>(0));
  m.node("Gather", {"shape", "zero"}, {"batch"});
  m.initializer("axes0", Tensor::from_vector<int64_t>({1}, {0}));
  m.node("Unsqueeze", {"batch", "axes0"}, {"batch1"});
  m.initializer("minus1", Tensor::from_vector<int64_t>({1}, {-1}));
  auto& cat = m.node("Concat", {"batch1", "minus1"}, {"target"});
  OnnxTestModel::attr_int(cat, "axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"});
  m.output("y");
  return m;
}

TEST(Import, FoldsShapeChainsToStaticReshape) {
  ImportReport report;
  Graph g = import_model(pytorch_view_model(), {{"batch", 3}}, &report);
  EXPECT_EQ(g.num_nodes(), 1);
  EXPECT_EQ(g.nodes[0].op_type, "Reshape");
  EXPECT_EQ(g.value(g.nodes[0].inputs[1]).constant->to_int64_vector(), (std::vector<int64_t>{3, -1}));
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{3, 6}));
  EXPECT_EQ(report.folded_nodes, 4);
  Graph g1 = import_model(pytorch_view_model());
  EXPECT_EQ(g1.value(g1.inputs[0]).shape, (Shape{1, 2, 3}));  // dynamic dims default to 1
}

TEST(Import, UnknownDimNameIsRejected) {
  try {
    import_model(pytorch_view_model(), {{"seq", 3}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("seq"), std::string::npos);
  }
}

TEST(Import, NodesAreInPostDfsOrderEvenWhenFileIsNot) {
  OnnxTestModel m(13);
  m.input("x", {4});
  m.node("Relu", {"t"}, {"y"});  // consumer listed first
  m.node("Neg", {"x"}, {"t"});
  m.output("y");
  Graph g = import_model(m);
  ASSERT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(g.nodes[0].op_type, "Neg");
  EXPECT_EQ(g.nodes[1].op_type, "Relu");
  EXPECT_NO_THROW(g.validate());
}

ErrorKind import_error_kind(const std::string& bytes, std::string* message = nullptr) {
  try {
    import_bytes(bytes);
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "import succeeded";
  return ErrorKind::Internal;
}

TEST(ImportErrors, EmptyAndRandomAndTruncatedBytes) {
  std::string msg;
  EXPECT_EQ(import_error_kind("", &msg), ErrorKind::InvalidModel);
  EXPECT_NE(msg.find("empty"), std::string::npos);
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::string junk(static_cast<size_t>(1 + rng() % 4096), '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    try {
      import_bytes(junk);
      ADD_FAILURE() << "random bytes imported";
    } catch (const Error&) {
    }
  }
  std::string full = pytorch_view_model().bytes();
  for (size_t cut = 1; cut < full.size(); cut += 7) {
    try {
      import_bytes(full.substr(0, cut));
    } catch (const Error&) {
    }  // either a clean error or a (still valid) prefix model; never a crash
  }
}

TEST(ImportErrors, DanglingInputNamesTheNodeAndValue) {
  OnnxTestModel m(13);
  m.input("x", {4});
  m.node("Add", {"x", "ghost"}, {"y"});
  m.output("y");
  std::string msg;
  EXPECT_EQ(import_error_kind(m.bytes(), &msg), ErrorKind::InvalidModel);
  EXPECT_NE(msg.find("ghost"), std::string::npos);
  EXPECT_NE(msg.find("Add"), std::string::npos);
}

TEST(ImportErrors, CycleIsRejected) {
  OnnxTestModel m(13);
  m.input("x", {4});
  m.node("Add", {"x", "b"}, {"a"});
  m.node("Relu", {"a"}, {"b"});
  m.output("b");
  std::string msg;
  EXPECT_EQ(import_error_kind(m.bytes(), &msg), ErrorKind::InvalidModel);
  EXPECT_NE(msg.find("cycle"), std::string::npos);
}

TEST(ImportErrors, OpsetOutOfRange) {
  OnnxTestModel m(5);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  std::string msg;
  EXPECT_EQ(import_error_kind(m.bytes(), &msg), ErrorKind::Unsupported);
  EXPECT_NE(msg.find("opset 5"), std::string::npos);
}

TEST(ImportErrors, AbsurdShapeGivesCleanError) {
  OnnxTestModel m(13);
  m.input("x", {1 << 30, 1 << 30, 1 << 30});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  std::string absurd;
  EXPECT_EQ(import_error_kind(m.bytes(), &absurd), ErrorKind::InvalidModel);  // refused before any allocation
  EXPECT_NE(absurd.find("memory budget"), std::string::npos) << absurd;
  OnnxTestModel big(13);
  big.input("x", {1 << 30, 1 << 30, 1 << 30});
  big.initializer("shape", Tensor::from_vector<int64_t>({1}, {-1}));
  big.node("Shape", {"x"}, {"s"});
  big.node("ConstantOfShape", {"s"}, {"y"});  // would fold into 2^90 elements
  big.output("y");
  std::string msg;
  EXPECT_EQ(import_error_kind(big.bytes(), &msg), ErrorKind::InvalidModel);
}

TEST(ImportErrors, UnsupportedOpNamesNodeOpAndOpset) {
  OnnxTestModel m(13);  // a well-formed node of an ONNX op no kernel here implements
  m.input("x", {1, 1, 4, 4});
  m.input("rois", {1, 5});
  OnnxTestModel::attr_ints(m.node("MaxRoiPool", {"x", "rois"}, {"y"}), "pooled_shape", {2, 2});
  m.output("y");
  // Refused at import or, where ONNX inference gives its shapes, when its kernel is made.
  std::string msg;
  ErrorKind kind = ErrorKind::Internal;
  try {
    Graph g = import_bytes(m.bytes());
    native::native_steps(g);
  } catch (const Error& e) {
    msg = e.what();
    kind = e.kind();
  }
  EXPECT_EQ(kind, ErrorKind::Unsupported) << msg;
  EXPECT_NE(msg.find("MaxRoiPool"), std::string::npos) << msg;
  EXPECT_NE(msg.find("opset 13"), std::string::npos) << msg;
}

// What libonnx 1.12's inference would have crashed on is refused first, naming the problem.
TEST(ImportErrors, MalformedNodesAreRefusedBeforeOnnxInference) {
  struct Case {
    const char* what;
    OnnxTestModel model;
    ErrorKind kind;
  };
  std::vector<Case> cases;
  {
    OnnxTestModel m(11);  // X of rank 2 for a 2-D convolution
    m.input("x", {3, 3});
    m.input("w", {1, 2, 3, 3});
    m.node("ConvTranspose", {"x", "w"}, {"y"});
    m.output("y");
    cases.push_back({"input X has rank 2", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(11);
    m.input("x", {1, 1, 5});
    m.input("w", {1, 1, 3, 3});
    m.node("Conv", {"x", "w"}, {"y"});
    m.output("y");
    cases.push_back({"input X has rank 3 but weight W rank 4", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(11);
    m.input("x", {1, 1, 5, 5});
    m.input("w", {1, 1, 3, 3});
    OnnxTestModel::attr_ints(m.node("Conv", {"x", "w"}, {"y"}), "pads", {1, 1});
    m.output("y");
    cases.push_back({"attribute pads has 2 values; the node has 2 spatial dims, so it needs 4", m,
                     ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(13);  // a node reading its own output
    m.input("a", {2, 2});
    m.node("Add", {"a", "s"}, {"s"});
    m.output("s");
    cases.push_back({"the graph has a cycle through node 'Add_s' (Add)", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(6);
    m.input("a", {4, 10});
    m.input("b", {8, 10});
    m.node("Gemm", {"a", "b"}, {"y"});
    m.output("y");
    cases.push_back({"has 2 inputs; the op needs at least 3", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(17);
    m.input("x", {3, 4});
    m.input("s", {4});
    OnnxTestModel::attr_int(m.node("LayerNormalization", {"x", "s"}, {"y"}), "axis", -65);
    m.output("y");
    cases.push_back({"axis -65 is outside [-2, 1]", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(17);  // the default axis -1 of a scalar
    m.input("x", {});
    m.input("s", {1});
    m.node("LayerNormalization", {"x", "s"}, {"y"});
    m.output("y");
    cases.push_back({"axis -1 is outside [-0, -1]", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(13);
    m.input("x", {2});
    m.input("x", {3});
    m.node("Relu", {"x"}, {"y"});
    m.output("y");
    cases.push_back({"graph input 'x' is declared twice", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(6);
    m.input("a", {2, 3});
    m.input("b", {3});
    m.input("c", {4});
    m.node("Gemm", {"a", "b", "c"}, {"y"});
    m.output("y");
    cases.push_back({"input B has rank 1; Gemm multiplies matrices (rank 2)", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(12);  // a misspelt attribute would be ignored and stop ONNX's inference
    m.input("x", {1, 1, 8, 8});
    auto& pool = m.node("MaxPool", {"x"}, {"y"});
    OnnxTestModel::attr_ints(pool, "kernel_shape", {2, 2});
    OnnxTestModel::attr_ints(pool, "stride", {2, 2});
    m.output("y");
    cases.push_back({"MaxPool has no attribute 'stride'", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(13);
    m.input("x", {2});
    m.node("Relu", {"x"}, {"y"});
    m.node("Neg", {"x"}, {"y"});
    m.output("y");
    cases.push_back({"value 'y' is defined twice", m, ErrorKind::InvalidModel});
  }
  {
    OnnxTestModel m(17);
    m.input("x", {4});
    m.node("Caqt", {"x"}, {"y"});
    m.output("y");
    cases.push_back({"Caqt is not an ONNX operator at opset 17", m, ErrorKind::Unsupported});
  }
  for (const Case& c : cases) {
    std::string msg;
    EXPECT_EQ(import_error_kind(c.model.bytes(), &msg), c.kind) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
  }
}

// Exporters are not all strict about node order: an unsorted graph is put in order.
TEST(Import, NodesOutOfTopologicalOrderAreSorted) {
  OnnxTestModel m(13);
  m.input("a", {2});
  m.node("Neg", {"r"}, {"y"});
  m.node("Relu", {"a"}, {"r"});
  m.output("y");
  Graph g = import_model(m);
  ASSERT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(g.node(0).op_type, "Relu");
}

// auto_pad is resolved once, at import (core/ir/conv_geometry.h): the nodes carry explicit
// pads, and the result is ONNX's SAME rule (odd padding at the start for SAME_LOWER, at
// the end for SAME_UPPER), computed here by hand.
TEST(Import, AutoPadBecomesExplicitPads) {
  OnnxTestModel m(17);
  m.input("x", {1, 1, 6, 6});
  m.initializer("w", Tensor::from_vector<float>({1, 1, 3, 3}, std::vector<float>(9, 1.0f)));
  auto& conv = m.node("Conv", {"x", "w"}, {"c"});
  OnnxTestModel::attr_ints(conv, "strides", {2, 2});
  OnnxTestModel::attr_string(conv, "auto_pad", "SAME_LOWER");
  auto& pool = m.node("MaxPool", {"x"}, {"p"});
  OnnxTestModel::attr_ints(pool, "kernel_shape", {3, 3});
  OnnxTestModel::attr_ints(pool, "strides", {4, 4});
  OnnxTestModel::attr_int(pool, "ceil_mode", 1);
  OnnxTestModel::attr_string(pool, "auto_pad", "SAME_UPPER");
  m.output("c");
  m.output("p");
  Graph g = import_model(m);
  // Conv: out = ceil(6 / 2) = 3, total = (3 - 1) * 2 + 3 - 6 = 1, LOWER puts it first.
  const Node& c = only_node(g, "Conv");
  EXPECT_FALSE(c.has_attr("auto_pad"));
  EXPECT_EQ(c.attr_ints("pads"), (std::vector<int64_t>{1, 1, 0, 0}));
  // MaxPool: out = ceil(6 / 4) = 2, total = (2 - 1) * 4 + 3 - 6 = 1, UPPER puts it last;
  // ceil_mode, which SAME ignores, is dropped (with it the explicit pads would give 3).
  const Node& p = only_node(g, "MaxPool");
  EXPECT_FALSE(p.has_attr("auto_pad"));
  EXPECT_FALSE(p.has_attr("ceil_mode"));
  EXPECT_EQ(p.attr_ints("pads"), (std::vector<int64_t>{0, 0, 1, 1}));

  std::vector<float> x(36);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
  auto out = run_native(g, {Tensor::from_vector<float>({1, 1, 6, 6}, x)});
  ASSERT_EQ(out[0].shape(), (Shape{1, 1, 3, 3}));
  ASSERT_EQ(out[1].shape(), (Shape{1, 1, 2, 2}));
  for (int oh = 0; oh < 3; ++oh)
    for (int ow = 0; ow < 3; ++ow) {
      float want = 0;
      for (int ih = 2 * oh - 1; ih <= 2 * oh + 1; ++ih)
        for (int iw = 2 * ow - 1; iw <= 2 * ow + 1; ++iw)
          if (ih >= 0 && ih < 6 && iw >= 0 && iw < 6) want += x[static_cast<size_t>(ih * 6 + iw)];
      EXPECT_EQ(out[0].data<float>()[oh * 3 + ow], want) << oh << "," << ow;
    }
  for (int oh = 0; oh < 2; ++oh)
    for (int ow = 0; ow < 2; ++ow) {
      float want = -1e30f;
      for (int ih = 4 * oh; ih <= std::min(4 * oh + 2, 5); ++ih)
        for (int iw = 4 * ow; iw <= std::min(4 * ow + 2, 5); ++iw)
          want = std::max(want, x[static_cast<size_t>(ih * 6 + iw)]);
      EXPECT_EQ(out[1].data<float>()[oh * 2 + ow], want) << oh << "," << ow;
    }
}

TEST(ImportErrors, AnUnknownAutoPadIsRefusedNamingTheNode) {
  OnnxTestModel m(17);
  m.input("x", {1, 1, 6, 6});
  auto& pool = m.node("MaxPool", {"x"}, {"p"});
  OnnxTestModel::attr_ints(pool, "kernel_shape", {3, 3});
  OnnxTestModel::attr_string(pool, "auto_pad", "SAME_SIDEWAYS");
  m.output("p");
  try {
    import_model(m);
    FAIL() << "imported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidModel) << e.what();
    EXPECT_NE(std::string(e.what()).find("SAME_SIDEWAYS"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collage
