// Control flow (If, Loop, Scan): bodies imported as graphs of their own with the outer values
// they read captured as the node's last inputs, run by the native kernels, carried by
// artifacts; bad bodies refused naming the node. Expected values are computed here, element by
// element, from the inputs.
#include <gtest/gtest.h>

#include "core/runtime/artifact.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;
using testing::run_native;

Tensor floats(Shape shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), v); }

// A body: OnnxTestModel's graph, inputs typed [dims] (empty dims: a scalar).
struct Body {
  OnnxTestModel m{17};
  void input(const std::string& name, std::vector<int64_t> dims, int type = onnx::TensorProto::FLOAT) {
    m.input(name, dims, type);
  }
};

// y = cond ? x + one : x * w, `one` a constant of the then-branch, `w` an outer initializer.
OnnxTestModel if_model() {
  OnnxTestModel model(17);
  model.input("cond", {}, onnx::TensorProto::BOOL);
  model.input("x", {2, 3});
  model.initializer("w", floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  Body then_b, else_b;
  then_b.m.initializer("one", Tensor::scalar<float>(1.0f));
  then_b.m.node("Add", {"x", "one"}, {"t"});
  then_b.m.output("t");
  else_b.m.node("Mul", {"x", "w"}, {"e"});
  else_b.m.output("e");
  auto& n = model.node("If", {"cond"}, {"y"});
  OnnxTestModel::attr_graph(n, "then_branch", then_b.m.graph());
  OnnxTestModel::attr_graph(n, "else_branch", else_b.m.graph());
  model.output("y");
  return model;
}

TEST(ControlFlow, IfCapturesTheOuterValuesItsBranchesReadAndRunsTheChosenOne) {
  Graph g = import_model(if_model());
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& n = g.nodes[0];
  ASSERT_EQ(n.captured, 2);  // x (then and else), w (else): their union, once each
  std::vector<std::string> captured;
  for (size_t i = n.inputs.size() - 2; i < n.inputs.size(); ++i)
    captured.push_back(g.value(n.inputs[i]).name);
  EXPECT_EQ(captured, (std::vector<std::string>{"x", "w"}));
  for (const char* key : {"then_branch", "else_branch"}) {
    const Graph& b = n.body(key);
    ASSERT_EQ(b.inputs.size(), 2u) << key << ": each body ends with every captured value";
    EXPECT_EQ(b.value(b.inputs[0]).name, "x");
    EXPECT_EQ(b.value(b.inputs[1]).name, "w");
  }
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{2, 3}));
  const std::vector<float> x = {-1, 0.5f, 2, 3, -4, 10}, w = {1, 2, 3, 4, 5, 6};
  for (bool cond : {true, false}) {
    std::vector<Tensor> out = run_native(g, {Tensor::scalar<bool>(cond), floats({2, 3}, x)});
    ASSERT_EQ(out[0].shape(), (Shape{2, 3}));
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(out[0].data<float>()[i], cond ? x[i] + 1 : x[i] * w[i]) << cond << " " << i;
  }
}

// for i in 0..M-1: acc = acc + x * i; each acc is also a scan output row.
OnnxTestModel loop_model(int64_t trips) {
  OnnxTestModel model(17);
  model.input("x", {3});
  model.initializer("m", Tensor::scalar<int64_t>(trips));
  model.initializer("go", Tensor::scalar<bool>(true));
  model.initializer("zero", floats({3}, {0, 0, 0}));
  Body b;
  b.input("i", {}, onnx::TensorProto::INT64);
  b.input("c", {}, onnx::TensorProto::BOOL);
  b.input("acc", {3});
  auto& cast = b.m.node("Cast", {"i"}, {"fi"});
  OnnxTestModel::attr_int(cast, "to", onnx::TensorProto::FLOAT);
  b.m.node("Mul", {"x", "fi"}, {"xi"});
  b.m.node("Add", {"acc", "xi"}, {"acc_out"});
  b.m.node("Identity", {"c"}, {"c_out"});
  b.m.node("Identity", {"acc_out"}, {"row"});
  b.m.output("c_out");
  b.m.output("acc_out");
  b.m.output("row");
  auto& n = model.node("Loop", {"m", "go", "zero"}, {"final", "rows"});
  OnnxTestModel::attr_graph(n, "body", b.m.graph());
  model.output("final");
  model.output("rows");
  return model;
}

TEST(ControlFlow, LoopCarriesValuesAndStacksItsScanOutputs) {
  const int64_t trips = 4;
  Graph g = import_model(loop_model(trips));
  EXPECT_EQ(g.value(g.outputs[1]).shape, (Shape{trips, 3}));
  const std::vector<float> x = {1.5f, -2, 0.25f};
  std::vector<Tensor> out = run_native(g, {floats({3}, x)});
  std::vector<float> acc(3, 0);
  for (int64_t i = 0; i < trips; ++i)
    for (size_t k = 0; k < 3; ++k) {
      acc[k] += x[k] * static_cast<float>(i);
      EXPECT_EQ(out[1].data<float>()[i * 3 + static_cast<int64_t>(k)], acc[k]) << i << "," << k;
    }
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(out[0].data<float>()[k], acc[k]);
}

// Scan over the rows of x [4, 2] (and backwards over the rows of r): a running sum as state,
// each step's sum as a scan output, stacked along axis 1.
TEST(ControlFlow, ScanWalksItsInputsInEitherDirectionAndStacksAlongTheGivenAxis) {
  OnnxTestModel model(17);
  model.input("s0", {2});
  model.input("x", {4, 2});
  model.input("r", {4, 2});
  Body b;
  b.input("s", {2});
  b.input("row", {2});
  b.input("rrow", {2});
  b.m.node("Add", {"s", "row"}, {"s1"});
  b.m.node("Sub", {"s1", "rrow"}, {"s2"});
  b.m.node("Identity", {"s2"}, {"out"});
  b.m.output("s2");
  b.m.output("out");
  auto& n = model.node("Scan", {"s0", "x", "r"}, {"sum", "steps"});
  OnnxTestModel::attr_graph(n, "body", b.m.graph());
  OnnxTestModel::attr_int(n, "num_scan_inputs", 2);
  OnnxTestModel::attr_ints(n, "scan_input_directions", {0, 1});
  OnnxTestModel::attr_ints(n, "scan_output_axes", {1});
  model.output("sum");
  model.output("steps");
  Graph g = import_model(model);
  ASSERT_EQ(g.value(g.outputs[1]).shape, (Shape{2, 4}));
  const std::vector<float> s0 = {1, -1}, x = {1, 2, 3, 4, 5, 6, 7, 8},
                           r = {0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4};
  std::vector<Tensor> out = run_native(g, {floats({2}, s0), floats({4, 2}, x), floats({4, 2}, r)});
  std::vector<float> s = s0;
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t k = 0; k < 2; ++k) {
      s[static_cast<size_t>(k)] +=
          x[static_cast<size_t>(t * 2 + k)] - r[static_cast<size_t>((3 - t) * 2 + k)];
      EXPECT_FLOAT_EQ(out[1].data<float>()[k * 4 + t], s[static_cast<size_t>(k)]) << t << "," << k;
    }
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], s[0]);
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], s[1]);
}

TEST(ControlFlow, ArtifactsCarryBodies) {
  Graph g = import_model(if_model());
  Artifact a = parse_artifact(serialize_artifact(native_artifact(g)), "test");
  const Node& n = a.graph.nodes.at(0);
  EXPECT_EQ(n.captured, 2);
  EXPECT_EQ(n.body("then_branch").nodes.size(), 1u);
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  for (bool cond : {true, false}) {
    std::vector<Tensor> want = run_native(g, {Tensor::scalar<bool>(cond), floats({2, 3}, x)});
    std::vector<Tensor> got = run_native(a.graph, {Tensor::scalar<bool>(cond), floats({2, 3}, x)});
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(got[0].data<float>()[i], want[0].data<float>()[i]);
  }
}

TEST(ControlFlow, ABodyReadingANameNoEnclosingGraphDefinesIsRefusedNamingIt) {
  OnnxTestModel model = if_model();
  auto* else_branch = model.proto().mutable_graph()->mutable_node(0)->mutable_attribute(1)->mutable_g();
  else_branch->mutable_node(0)->set_input(1, "nowhere");
  try {
    import_model(model);
    FAIL() << "imported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidModel);
    EXPECT_NE(std::string(e.what()).find("'nowhere'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("If"), std::string::npos) << e.what();
  }
}

// No trip count and a condition that stays true: a clear error after the trip budget, not a hang.
TEST(ControlFlow, ALoopWithoutBoundOrEndingConditionStopsWithAClearError) {
  OnnxTestModel model = loop_model(1);
  auto* loop = model.proto().mutable_graph()->mutable_node(0);
  loop->set_input(0, "");                // no M
  loop->mutable_output()->RemoveLast();  // no scan output: shapes stay static
  model.proto().mutable_graph()->mutable_output()->RemoveLast();
  try {  // at import already, where shape completion runs the loop on placeholders
    Graph g = import_model(model);
    run_native(g, {floats({3}, {0, 0, 0})});
    FAIL() << "the loop ended";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("without a trip count"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collage
