// Models whose shapes depend on input VALUES (Range's limit, Pad's pads fed by graph
// inputs): import refuses them naming those inputs (exit 2 in the CLI); bound to a value
// (ImportOptions::bound_inputs, --bind, or `collage run`'s --input) they import and run.
#include <gtest/gtest.h>

#include "backends/native/native_kernel.h"
#include "cli_fixture.h"
#include "core/import/onnx_import.h"
#include "core/runtime/executor.h"
#include "core/tensor_io/tensor_proto.h"
#include "resources/samples/onnx_builder.h"

namespace collage {
namespace {

using testing::CliResult;
using testing::CliTest;

// y = Range(0, limit, 1) * scale: the length of y is the VALUE of 'limit'.
std::string range_model() {
  OnnxBuilder b("range_model", 17);
  b.input("limit", DType::Float32, {});
  b.input("scale", DType::Float32, {1});
  std::string r = b.op("Range", {b.scalar("start", 0), "limit", b.scalar("delta", 1)});
  std::string y = b.op("Mul", {r, "scale"});
  b.output(y, "y", {std::string("n")});
  return b.build().SerializeAsString();
}

// y = Pad(x, p + 1): the pads are computed from the graph input 'p'.
std::string pad_model() {
  OnnxBuilder b("pad_model", 17);
  b.input("x", DType::Float32, {3});
  b.input("p", DType::Int64, {2});
  std::string pads = b.op("Add", {"p", b.ints("one", {1, 1})});
  std::string y = b.op("Pad", {"x", pads});
  b.output(y, "y", {std::string("n")});
  return b.build().SerializeAsString();
}

ImportOptions options(std::map<std::string, Tensor> bound = {}) {
  ImportOptions o;
  o.evaluator = native::node_evaluator();
  o.bound_inputs = std::move(bound);
  return o;
}

std::vector<std::string> refused_inputs(const std::string& bytes, std::string* message = nullptr) {
  try {
    import_onnx_bytes(bytes, ".", options());
  } catch (const ValueDependentShapeError& e) {
    if (message) *message = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    return e.inputs();
  }
  ADD_FAILURE() << "the import was not refused";
  return {};
}

TEST(ValueDependentShapes, RangeRefusedNamingTheInput) {
  std::string message;
  EXPECT_EQ(refused_inputs(range_model(), &message), (std::vector<std::string>{"limit"}));
  EXPECT_NE(message.find("Range opset 17"), std::string::npos) << message;
  EXPECT_NE(message.find("input(s) 'limit'"), std::string::npos) << message;
  EXPECT_NE(message.find("--bind limit=FILE.pb"), std::string::npos) << message;
}

TEST(ValueDependentShapes, RangeBoundImportsAndRuns) {
  ImportReport report;
  Graph g = import_onnx_bytes(range_model(), ".", options({{"limit", Tensor::scalar<float>(5)}}), &report);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.value(g.inputs[0]).name, "scale");
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{5}));
  std::vector<Tensor> out =
      Executor(g, native::native_steps(g)).run({Tensor::from_vector<float>({1}, {2.5f})});
  std::vector<float> want;
  for (int i = 0; i < 5; ++i) want.push_back(static_cast<float>(i) * 2.5f);
  EXPECT_EQ(out.at(0).to_double_vector(), std::vector<double>(want.begin(), want.end()));
}

TEST(ValueDependentShapes, PadTracedThroughComputation) {
  std::string message;
  EXPECT_EQ(refused_inputs(pad_model(), &message), (std::vector<std::string>{"p"}));
  EXPECT_NE(message.find("Pad opset 17"), std::string::npos) << message;

  std::vector<int64_t> p = {0, 2};
  Graph g = import_onnx_bytes(pad_model(), ".", options({{"p", Tensor::from_vector<int64_t>({2}, p)}}));
  std::vector<float> x = {4, 5, 6};
  std::vector<Tensor> out = Executor(g, native::native_steps(g)).run({Tensor::from_vector<float>({3}, x)});
  std::vector<double> want(static_cast<size_t>(p[0] + 1), 0.0);  // pads are p + 1 on each side
  want.insert(want.end(), x.begin(), x.end());
  want.resize(want.size() + static_cast<size_t>(p[1] + 1), 0.0);
  EXPECT_EQ(out.at(0).to_double_vector(), want);
}

TEST(ValueDependentShapes, ValueDependentInputsOfAFile) {
  testing::ScopedTempDir dir("collage_value_dependent");
  std::string path = dir.file("pad.onnx");
  std::ofstream(path, std::ios::binary) << pad_model();
  EXPECT_EQ(value_dependent_inputs(path, options()), (std::vector<std::string>{"p"}));
  EXPECT_TRUE(
      value_dependent_inputs(path, options({{"p", Tensor::from_vector<int64_t>({2}, {1, 1})}})).empty());
}

TEST(ValueDependentShapes, BindingIsChecked) {
  auto kind = [](const std::map<std::string, Tensor>& bound) {
    try {
      import_onnx_bytes(range_model(), ".", options(bound));
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;
  };
  EXPECT_EQ(kind({{"nope", Tensor::scalar<float>(5)}}), ErrorKind::InvalidInput);     // no such input
  EXPECT_EQ(kind({{"limit", Tensor::scalar<int64_t>(5)}}), ErrorKind::InvalidInput);  // dtype
  EXPECT_EQ(kind({{"limit", Tensor::from_vector<float>({1}, {5})}}), ErrorKind::InvalidInput);  // rank
}

TEST(ValueDependentShapes, ConstantShapeChainsStillImport) {
  OnnxBuilder b("reshape_chain", 17);
  b.input("x", DType::Float32, {std::string("batch"), 2, 3});
  std::string y = b.dynamic_reshape("x", {6});  // Shape -> Gather -> Concat -> Reshape
  b.output(y, "y", {std::string("batch"), 6});
  Graph g = import_onnx_bytes(b.build().SerializeAsString(), ".", options());
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 6}));
}

TEST_F(CliTest, ValueDependentModelNeedsBinding) {
  std::string model = write("range.onnx", range_model());
  std::string limit = (dir_ / "limit.pb").string(), scale = (dir_ / "scale.pb").string();
  write_tensor_file(Tensor::scalar<float>(4), "limit", limit);
  write_tensor_file(Tensor::from_vector<float>({1}, {3}), "scale", scale);

  expect_bad_input("info " + model, "--bind limit=FILE.pb");
  expect_bad_input("run " + model, "'limit'");
  CliResult info = cli("info " + model + " --bind limit=" + limit);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("y  float32 [4]"), std::string::npos) << info.out;

  CliResult run = cli("run " + model + " --input limit=" + limit + " --input scale=" + scale +
                      " --output-dir " + (dir_ / "out").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("note: shapes depend on input 'limit': specialised on the given values"),
            std::string::npos)
      << run.out;
  Tensor y = read_tensor_file((dir_ / "out" / "y.pb").string());
  std::vector<double> want;
  for (int i = 0; i < 4; ++i) want.push_back(i * 3.0);
  EXPECT_EQ(y.to_double_vector(), want);
}

}  // namespace
}  // namespace collage
