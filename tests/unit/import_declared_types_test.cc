// The run path's hostile models (found by tests/fuzz/mutate_models.py): what a model declares about its
// values, output counts beyond the op's, omitted required inputs, flags outside {0, 1} and
// sizes past the limits are refused at import with a message naming value and node, so
// that execution never meets a kernel output the graph contradicts (an Internal error).
#include <gtest/gtest.h>

#include "tests/unit/cli_fixture.h"
#include "tests/unit/onnx_test_model.h"

namespace collage {
namespace {

using testing::CliResult;
using testing::CliTest;
using testing::import_model;
using testing::OnnxTestModel;
using testing::run_native;

void declare(onnx::ValueInfoProto* vi, const std::string& name, int elem_type,
             const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0)
      shape->add_dim()->set_dim_param("n");
    else
      shape->add_dim()->set_dim_value(d);
  }
}

std::string import_error(const OnnxTestModel& m, ErrorKind kind = ErrorKind::InvalidModel) {
  try {
    import_model(m);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "imported";
  return "";
}

// A Transpose of an int16 input whose output the model declares float32 (the mutation run's
// "output 'transposed' is int16 [4,3,2], the graph says float32" at run time).
OnnxTestModel transpose_declared(int elem_type, const std::vector<int64_t>& dims) {
  OnnxTestModel m(21);
  m.input("data", {2, 3, 4}, onnx::TensorProto::INT16);
  m.node("Transpose", {"data"}, {"transposed"});
  declare(m.proto().mutable_graph()->add_output(), "transposed", elem_type, dims);
  return m;
}

TEST(DeclaredTypes, GraphOutputOfAnotherTypeIsRefused) {
  EXPECT_EQ(import_error(transpose_declared(onnx::TensorProto::FLOAT, {4, 3, 2})),
            "graph output 'transposed' is declared float32 [4,3,2] but node 'Transpose_transposed' "
            "(Transpose, opset 21) computes int16 [4,3,2]");
}

TEST(DeclaredTypes, GraphOutputOfAnotherShapeIsRefused) {
  EXPECT_EQ(import_error(transpose_declared(onnx::TensorProto::INT16, {6})),
            "graph output 'transposed' is declared int16 [6] but node 'Transpose_transposed' "
            "(Transpose, opset 21) computes int16 [4,3,2]");
}

TEST(DeclaredTypes, AgreeingAndSymbolicDeclarationsImport) {
  Graph g = import_model(transpose_declared(onnx::TensorProto::INT16, {4, -1, 2}));
  const Value& out = g.value(g.outputs[0]);
  EXPECT_EQ(out.dtype, DType::Int16);
  EXPECT_EQ(out.shape, (Shape{4, 3, 2}));
}

TEST(DeclaredTypes, ValueInfoOfAnIntermediateIsChecked) {
  OnnxTestModel m(13);
  m.input("x", {2, 3});
  m.node("Relu", {"x"}, {"r"});
  m.node("Neg", {"r"}, {"y"});
  m.output("y");
  declare(m.proto().mutable_graph()->add_value_info(), "r", onnx::TensorProto::DOUBLE, {2, 3});
  EXPECT_EQ(
      import_error(m),
      "value_info 'r' is declared float64 [2,3] but node 'Relu_r' (Relu, opset 13) computes float32 [2,3]");
  m.proto().mutable_graph()->mutable_value_info(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  Graph g = import_model(m);
  auto out = run_native(g, {Tensor::from_vector<float>({2, 3}, {1, -2, 3, -4, 5, -6})});
  EXPECT_EQ(out[0].data<float>()[1], 0.f);
}

// Opsets past libonnx 1.12's schemas (18-21) are checked against its newest schema:
// outputs and required inputs did not change since (the mutation run's "node 'Cast_0' (Cast,
// opset 21) returned 1 outputs, expected 2" and the ConvTranspose that lost its weight).
TEST(DeclaredTypes, OutputsBeyondTheOpAreRefusedAtNewerOpsets) {
  OnnxTestModel m(21);
  m.input("x", {2, 3});
  auto& cast = m.node("Cast", {"x"}, {"y", "extra"});
  OnnxTestModel::attr_int(cast, "to", onnx::TensorProto::DOUBLE);
  m.output("y");
  EXPECT_EQ(import_error(m), "node 'Cast_y' (Cast, opset 21) has 2 outputs; the op has at most 1");
}

TEST(DeclaredTypes, OmittedRequiredInputIsRefusedAtNewerOpsets) {
  OnnxTestModel m(20);
  m.input("x", {1, 1, 3, 3});
  m.node("ConvTranspose", {"x", ""}, {"y"});
  m.output("y");
  EXPECT_EQ(import_error(m),
            "node 'ConvTranspose_y' (ConvTranspose, opset 20): input 1 (W) is required but left empty");
}

TEST(DeclaredTypes, OpsNewerThanLibonnxHaveTheirArityChecked) {
  OnnxTestModel m(18);
  m.input("a", {4}, onnx::TensorProto::INT32);
  m.node("BitwiseAnd", {"a", "a", "a"}, {"y"});
  m.output("y");
  EXPECT_EQ(import_error(m),
            "node 'BitwiseAnd_y' (BitwiseAnd, opset 18) has 3 inputs; the op takes at most 2");
}

TEST(DeclaredTypes, FlagOutsideZeroOneIsRefused) {
  OnnxTestModel m(13);
  m.input("x", {3, 4});
  m.initializer("axes", Tensor::from_vector<int64_t>({1}, {1}));
  auto& sum = m.node("ReduceSum", {"x", "axes"}, {"y"});
  OnnxTestModel::attr_int(sum, "keepdims", -1);
  m.output("y");
  EXPECT_EQ(import_error(m),
            "node 'ReduceSum_y' (ReduceSum, opset 13): attribute keepdims is -1; it is a flag (0 or 1)");
}

// The weight's rank is known only once ONNX's inference ran (a SEGV in libonnx 1.12's
// ConvTranspose inference before its inference function was guarded).
TEST(DeclaredTypes, RankOnlyInferenceKnowsIsCheckedWithoutCrashing) {
  OnnxTestModel m(13);
  m.input("x", {1, 2, 3, 3});
  m.node("Shape", {"x"}, {"s"});
  auto& cast = m.node("Cast", {"s"}, {"w"});
  OnnxTestModel::attr_int(cast, "to", onnx::TensorProto::FLOAT);
  m.node("ConvTranspose", {"x", "w"}, {"y"});
  m.output("y");
  EXPECT_EQ(import_error(m),
            "node 'ConvTranspose_y' (ConvTranspose, opset 13): weight W has rank 1; it needs M, C and a "
            "spatial dim");
}

// ONNX's Expand inference makes one dimension per value of the shape input: a [2^20] shape
// was minutes of system time before anything could check it.
TEST(DeclaredTypes, ShapeInputBeyondTheRankLimitIsRefused) {
  OnnxTestModel m(13);
  m.input("x", {1, 3, 1});
  m.input("shape", {1 << 20}, onnx::TensorProto::INT64);
  m.node("Expand", {"x", "shape"}, {"y"});
  m.output("y");
  EXPECT_EQ(import_error(m),
            "node 'Expand_y' (Expand, opset 13): shape input 'shape' has 1048576 values, an output of rank "
            "1048576; the limit is 64");
}

TEST(DeclaredTypes, GraphInputBeyondTheBudgetIsRefusedBeforeInference) {
  OnnxTestModel m(13);
  m.input("x", {int64_t{1} << 40});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  std::string message = import_error(m);
  EXPECT_NE(message.find("graph input 'x' of shape [1099511627776] needs 4.1e+03 GiB"), std::string::npos)
      << message;
}

TEST_F(CliTest, DeclaredTypeMismatchExitsTwoOnInfoAndRun) {
  std::string path = write("transpose.onnx", transpose_declared(onnx::TensorProto::FLOAT, {4, 3, 2}).bytes());
  for (const char* command : {"info ", "run --repeat 1 "}) {
    CliResult r = cli(std::string(command) + path);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(
        r.err.find("invalid model: " + path +
                   ": graph output 'transposed' is declared float32 [4,3,2] but node 'Transpose_transposed' "
                   "(Transpose, opset 21) computes int16 [4,3,2]"),
        std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace collage

namespace collage {
namespace {

// Import-time evaluation has a time budget (Settings::import_evaluation_budget_s): spent,
// import refuses the model naming the node it reached; within it, the node is folded.
TEST(ImportEvaluationBudget, ASpentBudgetRefusesTheModelNamingTheNode) {
  testing::OnnxTestModel m(17);
  m.input("x", {2});
  Tensor c(DType::Float32, {2});
  m.initializer("c", c);
  m.node("Relu", {"c"}, {"folded"});  // constant input: folded at import
  m.node("Add", {"x", "folded"}, {"y"});
  m.output("y");
  ImportOptions options;
  options.evaluator = native::node_evaluator();
  Graph g = import_onnx_bytes(m.bytes(), ".", options);
  EXPECT_EQ(testing::count_ops(g, "Relu"), 0);  // folded within the default budget
  options.evaluation_budget_s = 0;
  try {
    import_onnx_bytes(m.bytes(), ".", options);
    ADD_FAILURE() << "imported with a spent evaluation budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidModel);
    EXPECT_NE(std::string(e.what()).find("budget evaluating nodes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Relu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collage
