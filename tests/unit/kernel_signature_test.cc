// The cost DB's key: two kernels share a signature exactly when they cost the same —
// same backend and version, ops, attributes, shapes and dtypes — whatever their
// node names and weight values.
#include "core/backend_api/kernel_signature.h"

#include <gtest/gtest.h>

#include <fstream>

#include "backend_test_models.h"
#include "core/ir/settings.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;
using testing::random_tensor_f32;

struct ConvSpec {
  Shape x = {1, 3, 8, 8}, w = {4, 3, 3, 3};
  std::vector<int64_t> pads = {1, 1, 1, 1};
  uint32_t weight_seed = 1;
  std::string name = "conv";
};

std::string conv_signature(const ConvSpec& c, const std::string& version = "1.0") {
  OnnxTestModel m(17);
  m.input("x", c.x);
  m.initializer("w", random_tensor_f32(c.w, c.weight_seed));
  auto& conv = m.node("Conv", {"x", "w"}, {"c"});
  conv.set_name(c.name);
  OnnxTestModel::attr_ints(conv, "pads", c.pads);
  m.node("Relu", {"c"}, {"y"});
  m.output("y");
  Graph g = import_model(m);
  IndexSet all(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) all.add(i);
  return kernel_signature(g, make_subgraph(g, all), "lib", version);
}

TEST(KernelSignature, IgnoresNamesAndWeightValues) {
  ConvSpec a, b;
  b.weight_seed = 7;
  b.name = "/layer1/conv2/Conv";
  EXPECT_EQ(conv_signature(a), conv_signature(b));
}

TEST(KernelSignature, TellsApartWhatChangesTheCost) {
  ConvSpec base;
  std::string sig = conv_signature(base);
  ConvSpec pads = base;
  pads.pads = {0, 0, 0, 0};
  ConvSpec shape = base;
  shape.x = {1, 3, 16, 16};
  ConvSpec channels = base;
  channels.w = {8, 3, 3, 3};
  EXPECT_NE(sig, conv_signature(pads));
  EXPECT_NE(sig, conv_signature(shape));
  EXPECT_NE(sig, conv_signature(channels));
  EXPECT_NE(sig, conv_signature(base, "2.0"));  // another library version
  EXPECT_NE(sig.find("lib@1.0"), std::string::npos);
}

// A MatMul reading a 1 MiB weight is timed cold (and keyed so) only in a model whose constants
// exceed the cache a run keeps; its bias Add never is; the model's fingerprint ignores the mode.
TEST(KernelSignature, ColdWeightsOnlyWhereARunStreamsThem) {
  const int64_t k = 512, n = 512;  // 1 MiB of weights: the threshold exactly
  ASSERT_EQ(static_cast<size_t>(k * n) * sizeof(float), kSettings.cold_weight_min_bytes);
  auto model = [&](bool filler) {
    OnnxTestModel m(17);
    m.input("x", {4, k});
    m.initializer("w", random_tensor_f32({k, n}, 1));
    m.initializer("b", random_tensor_f32({n}, 2));
    m.node("MatMul", {"x", "w"}, {"h"});
    m.node("Add", {"h", "b"}, {"y"});
    m.output("y");
    if (filler) {  // another input's weights, enough to overflow the cache a run keeps
      const auto floats = static_cast<int64_t>(cache_kept_between_runs_bytes() / sizeof(float));
      m.input("z", {1, 1});
      m.initializer("big", Tensor(DType::Float32, {1, floats}));
      m.node("MatMul", {"z", "big"}, {"zy"});
      m.output("zy");
    }
    return import_model(m);
  };
  // A virtual machine's sysfs may give the host's whole L3; a run counts on its capped share.
  EXPECT_LE(cache_kept_between_runs_bytes(), last_level_cache_bytes());
  EXPECT_LE(cache_kept_between_runs_bytes(), kSettings.cache_kept_cap_bytes);
  Graph small = model(false), big = model(true);
  auto one = [](const Graph& g, size_t node) {
    IndexSet s(g.nodes.size());
    s.add(node);
    return make_subgraph(g, s);
  };
  EXPECT_FALSE(measured_cold(small, one(small, 0)));
  EXPECT_TRUE(measured_cold(big, one(big, 0)));
  EXPECT_FALSE(measured_cold(big, one(big, 1))) << "the bias Add reads 2 KiB";
  const std::string hot = kernel_signature(small, one(small, 0), "lib", "1");
  EXPECT_EQ(kernel_signature(big, one(big, 0), "lib", "1"), hot + "|cold weights");
  EXPECT_EQ(kernel_signature(big, one(big, 1), "lib", "1"),
            kernel_signature(small, one(small, 1), "lib", "1"));
  // The whole model reads the filler: cold, yet its fingerprint is the structure's alone.
  IndexSet all(big.nodes.size());
  for (size_t i = 0; i < big.nodes.size(); ++i) all.add(i);
  ASSERT_TRUE(measured_cold(big, make_subgraph(big, all)));
  EXPECT_EQ(model_fingerprint(big).find("cold"), std::string::npos);
}

TEST(KernelSignature, DeviceFingerprintIsStableAndNamesTheIsa) {
  std::string d = device_fingerprint();
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d, device_fingerprint());
  // Generations a virtual machine names alike are told apart by their family and model numbers.
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("cpu family", 0) == 0) {
      EXPECT_NE(d.find("(family " + line.substr(line.find(':') + 2)), std::string::npos) << d;
      break;
    }
  EXPECT_EQ(hex64(fnv1a64("abc")), hex64(fnv1a64("abc")));
  EXPECT_NE(fnv1a64("abc"), fnv1a64("abd"));
}

}  // namespace
}  // namespace collage
