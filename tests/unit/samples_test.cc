#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "core/ir/random_inputs.h"
#include "onnx/checker.h"
#include "resources/samples/zoo.h"
#include "tests/unit/temp_dir.h"

namespace collage {
namespace {

namespace fs = std::filesystem;

class SamplesTest : public ::testing::Test {
 protected:
  testing::ScopedTempDir tmp_{"collage_samples"};  // removed after the test, pass or fail
  fs::path dir_ = tmp_.path();
};

Graph import(const std::string& path) {
  ImportOptions options;
  options.evaluator = native::node_evaluator();
  return import_onnx_file(path, options);
}

std::vector<Tensor> run(const Graph& g) {
  Executor ex(g, native::native_steps(g));
  return ex.run(random_inputs(g, 7));
}

TEST_F(SamplesTest, SmallSamplesAreValidOnnxImportAndRun) {
  for (const auto& info : samples::sample_list()) {
    if (!info.small) continue;
    OnnxBuilder b = samples::build_sample(info.name);
    onnx::ModelProto m = b.build();
    EXPECT_NO_THROW(onnx::checker::check_model(m)) << info.name;
    std::string path = (dir_ / (info.name + ".onnx")).string();
    b.save(path);
    Graph g = import(path);
    for (const Value& v : g.values) EXPECT_TRUE(v.shape_known) << info.name << " " << v.name;
    auto out = run(g);
    ASSERT_FALSE(out.empty());
    for (const Tensor& t : out)
      for (double x : t.to_double_vector()) ASSERT_TRUE(std::isfinite(x)) << info.name;
    // Node names are unique and PyTorch-style.
    std::set<std::string> names;
    for (const auto& n : m.graph().node()) {
      EXPECT_TRUE(names.insert(n.name()).second) << n.name();
      EXPECT_EQ(n.name()[0], '/');
    }
  }
}

// The explorer's large-graph benchmark input (tests/bench/explorer_open_bench.sh): a valid
// model of 12 Llama-style layers, written out head by head, that imports as ~8,000 nodes under
// 12 name scopes and runs to finite logits.
TEST_F(SamplesTest, LlamaDecoderImportsAsAnEightThousandNodeGraphAndRuns) {
  OnnxBuilder b = samples::build_sample("llama_decoder_8k");
  onnx::ModelProto m = b.build();
  EXPECT_NO_THROW(onnx::checker::check_model(m));
  std::string path = (dir_ / "llama_decoder_8k.onnx").string();
  b.save(path);
  Graph g = import(path);
  EXPECT_GE(g.num_nodes(), 8000);
  std::set<std::string> layers;
  for (const Node& n : g.nodes)
    if (n.name.rfind("/model/layers.", 0) == 0) layers.insert(n.name.substr(0, n.name.find('/', 14)));
  EXPECT_EQ(layers.size(), 12u);
  auto out = run(g);
  ASSERT_EQ(out.size(), 1u);
  for (double x : out[0].to_double_vector()) ASSERT_TRUE(std::isfinite(x));
}

TEST_F(SamplesTest, DeterministicForASeedDifferentAcrossSeeds) {
  std::string a = samples::build_sample("resnet_small", 1).build().SerializeAsString();
  std::string b = samples::build_sample("resnet_small", 1).build().SerializeAsString();
  std::string c = samples::build_sample("resnet_small", 2).build().SerializeAsString();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), c.size());  // same structure, other weights
  EXPECT_THROW(samples::build_sample("resnet_9000"), Error);
}

TEST_F(SamplesTest, ExternalDataGivesTheSameModel) {
  OnnxBuilder b = samples::build_sample("inception_small");
  std::string embedded = (dir_ / "embedded.onnx").string(), external = (dir_ / "external.onnx").string();
  b.save(embedded);
  b.save(external, 1024);
  ASSERT_TRUE(fs::exists(dir_ / "external.onnx.data"));
  EXPECT_LT(fs::file_size(external), fs::file_size(embedded) / 4);
  auto x = run(import(embedded)), y = run(import(external));
  ASSERT_EQ(x.size(), y.size());
  EXPECT_EQ(x[0].to_double_vector(), y[0].to_double_vector());
  // A truncated side file is a clean error naming the tensor.
  fs::resize_file(dir_ / "external.onnx.data", 100);
  try {
    import(external);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("external data"), std::string::npos) << e.what();
  }
}

TEST_F(SamplesTest, DynamicBatchAndShapeChainsFold) {
  OnnxBuilder b = samples::build_sample("transformer_small");
  std::string path = (dir_ / "t.onnx").string();
  b.save(path);
  ImportOptions options;
  options.evaluator = native::node_evaluator();
  options.dims["batch"] = 3;
  Graph g = import_onnx_file(path, options);
  EXPECT_EQ(g.value(g.inputs[0]).shape, (Shape{3, 32}));
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{3, 32, 64}));
  for (const Node& n : g.nodes) {
    EXPECT_NE(n.op_type, "Shape");  // every Shape->Gather->...->Reshape chain folded
    EXPECT_NE(n.op_type, "Constant");
  }
}

TEST_F(SamplesTest, ModelLargerThan64MiBLoads) {
  OnnxBuilder b = samples::build_sample("resnet50");
  std::string path = (dir_ / "resnet50.onnx").string();
  b.save(path);
  ASSERT_GT(fs::file_size(path), 64u << 20);
  Graph g = import(path);
  EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 1000}));
  size_t params = 0;
  for (const Value& v : g.values)
    if (v.constant && v.dtype == DType::Float32) params += static_cast<size_t>(v.constant->size());
  EXPECT_EQ(params, b.parameter_count());
}

// The full-size torchvision layouts: valid ONNX, static shapes everywhere after import (ceil-mode
// MaxPools included), torchvision's parameter counts less the folded BatchNorms. Import only: running
// them natively is left to SampleCandidates.CeilModePoolsOfGoogLeNet (one model) to keep the suite fast.
TEST_F(SamplesTest, FullSizeTorchvisionSamplesImportWithTheirShapes) {
  struct Case {
    std::string name;
    size_t params;  // torchvision's count minus one parameter per folded BatchNorm channel
    std::map<std::string, Shape> shapes;
  };
  const Case cases[] = {
      {"squeezenet",
       1235496,  // no BatchNorm in SqueezeNet 1.1: exactly torchvision's
       {{"/features/features.0/Conv_output_0", {1, 64, 111, 111}},
        {"/features/features.2/MaxPool_output_0", {1, 64, 55, 55}},
        {"/features/features.3/Concat_output_0", {1, 128, 55, 55}},
        {"/features/features.8/MaxPool_output_0", {1, 256, 13, 13}},
        {"/features/features.12/Concat_output_0", {1, 512, 13, 13}},
        {"/classifier/classifier.2/Relu_output_0", {1, 1000, 13, 13}}}},
      {"googlenet",
       6624904 - 7280,
       {{"/maxpool1/MaxPool_output_0", {1, 64, 56, 56}},  // 112 -> 56 only with ceil_mode
        {"/maxpool2/MaxPool_output_0", {1, 192, 28, 28}},
        {"/inception3a/branch4/branch4.0/MaxPool_output_0", {1, 192, 28, 28}},
        {"/inception3b/Concat_output_0", {1, 480, 28, 28}},
        {"/maxpool3/MaxPool_output_0", {1, 480, 14, 14}},
        {"/inception4e/Concat_output_0", {1, 832, 14, 14}},
        {"/maxpool4/MaxPool_output_0", {1, 832, 7, 7}},
        {"/inception5b/Concat_output_0", {1, 1024, 7, 7}}}},
      {"resnext50",
       25028904 - 34112,
       {{"/layer1/layer1.0/conv2/Conv_output_0", {1, 128, 56, 56}},
        {"/layer2/layer2.0/conv2/Conv_output_0", {1, 256, 28, 28}},
        {"/layer4/layer4.2/Relu_output_0", {1, 2048, 7, 7}}}},
  };
  for (const Case& c : cases) {
    OnnxBuilder b = samples::build_sample(c.name);
    onnx::ModelProto m = b.build();
    EXPECT_NO_THROW(onnx::checker::check_model(m)) << c.name;
    EXPECT_EQ(b.parameter_count(), c.params) << c.name;
    std::set<std::string> names;
    for (const auto& n : m.graph().node()) EXPECT_TRUE(names.insert(n.name()).second) << n.name();
    std::string path = (dir_ / (c.name + ".onnx")).string();
    b.save(path);
    Graph g = import(path);
    fs::remove(path);
    for (const Value& v : g.values) EXPECT_TRUE(v.shape_known) << c.name << " " << v.name;
    EXPECT_EQ(g.value(g.outputs[0]).shape, (Shape{1, 1000})) << c.name;
    for (const auto& [value, shape] : c.shapes) {
      auto it =
          std::find_if(g.values.begin(), g.values.end(), [&](const Value& v) { return v.name == value; });
      ASSERT_NE(it, g.values.end()) << c.name << " has no value " << value;
      EXPECT_EQ(it->shape, shape) << c.name << " " << value;
    }
  }
}

}  // namespace
}  // namespace collage
