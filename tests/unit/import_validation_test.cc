// Import refuses hostile models with a clear InvalidModel error naming the node or
// value: zero strides, tensors beyond the memory budget (checked before anything is
// allocated), declared shapes that disagree with the op, surplus outputs.
#include <gtest/gtest.h>

#include <string>

#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

void expect_invalid_model(const OnnxTestModel& m, const std::string& must_mention,
                          ImportOptions* given = nullptr) {
  ImportOptions options;
  if (given) options = *given;
  options.evaluator = native::node_evaluator();
  try {
    import_onnx_bytes(m.bytes(), ".", options);
    FAIL() << "expected InvalidModel mentioning '" << must_mention << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidModel) << e.what();
    EXPECT_NE(std::string(e.what()).find(must_mention), std::string::npos) << e.what();
  }
}

TEST(ImportValidation, ZeroStridesAreRefused) {
  for (const char* op : {"Conv", "MaxPool", "AveragePool"}) {
    OnnxTestModel m(17);
    m.input("x", {1, 2, 8, 8});
    std::vector<std::string> ins = {"x"};
    if (std::string(op) == "Conv") {
      m.initializer("w", Tensor(DType::Float32, {2, 2, 3, 3}));
      ins.push_back("w");
    }
    auto& n = m.node(op, ins, {"y"});
    n.set_name("the_node");
    OnnxTestModel::attr_ints(n, "strides", {0, 1});
    if (std::string(op) != "Conv") OnnxTestModel::attr_ints(n, "kernel_shape", {3, 3});
    m.output("y");
    SCOPED_TRACE(op);
    expect_invalid_model(m, "the_node");
  }
}

TEST(ImportValidation, ZeroDilationsAndKernelsAreRefused) {
  OnnxTestModel m(17);
  m.input("x", {1, 2, 8, 8});
  auto& n = m.node("MaxPool", {"x"}, {"y"});
  OnnxTestModel::attr_ints(n, "kernel_shape", {0, 3});
  m.output("y");
  expect_invalid_model(m, "kernel_shape");
  OnnxTestModel d(17);
  d.input("x", {1, 2, 8, 8});
  d.initializer("w", Tensor(DType::Float32, {2, 2, 3, 3}));
  auto& c = d.node("Conv", {"x", "w"}, {"y"});
  OnnxTestModel::attr_ints(c, "dilations", {0, 1});
  d.output("y");
  expect_invalid_model(d, "dilations");
}

TEST(ImportValidation, AnInputBeyondTheMemoryBudgetIsRefusedBeforeAllocating) {
  OnnxTestModel m(17);
  m.input("x", {1 << 20, 1 << 20});  // 4 TiB of float32
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  expect_invalid_model(m, "memory budget");
}

TEST(ImportValidation, APadBeyondTheMemoryBudgetIsRefusedBeforeAllocating) {
  OnnxTestModel m(17);
  m.input("x", {1, 4});
  m.initializer("pads", Tensor::from_vector<int64_t>({4}, {0, 0, 0, int64_t{1} << 31}));
  m.node("Pad", {"x", "pads"}, {"y"});
  m.output("y");
  ImportOptions options;
  options.memory_budget_bytes = int64_t{1} << 30;
  expect_invalid_model(m, "memory budget", &options);
}

TEST(ImportValidation, ADeclaredOutputShapeThatDisagreesWithTheOpIsRefused) {
  OnnxTestModel m(17);
  m.input("x", {2, 3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  auto* tt = m.proto().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(5);
  expect_invalid_model(
      m,
      "graph output 'y' is declared float32 [5] but node 'Relu_y' (Relu, opset 17) computes float32 [2,3]");
  tt->mutable_shape()->mutable_dim(0)->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  EXPECT_EQ(import_model(m).value(0).shape, (Shape{2, 3}));
}

TEST(ImportValidation, ANodeWithMoreOutputsThanItsOpIsRefused) {
  OnnxTestModel m(17);
  m.input("x", {2, 3});
  m.node("Relu", {"x"}, {"y", "extra"}).set_name("two_outputs");
  m.output("y");
  m.output("extra");
  expect_invalid_model(m, "two_outputs");
}

}  // namespace
}  // namespace collage
