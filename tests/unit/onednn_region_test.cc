#include "backends/onednn_region/onednn_region.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backend_check.h"
#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "core/ir/random_inputs.h"
#include "resources/samples/zoo.h"

namespace collage {
namespace {

Graph import_sample(const std::string& name) {
  auto path = std::filesystem::temp_directory_path() / (name + "_odr" + std::to_string(::getpid()) + ".onnx");
  samples::build_sample(name).save(path.string());
  ImportOptions io;
  io.evaluator = native::node_evaluator();
  Graph g = import_onnx_file(path.string(), io);
  std::filesystem::remove(path);
  return g;
}

// The tuner's rule (core/tuning/measurer.cc): a long reduction's summation order shows above a fixed atol.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  auto a = got.to_double_vector(), b = want.to_double_vector();
  double peak = 0;
  for (double v : b) peak = std::max(peak, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-4 + 1e-3 * std::fabs(b[i]) + 1e-3 * peak) << what << " element " << i;
}

// Every node of each CNN sample in one region: one kernel from input to logits.
TEST(OnednnRegion, WholeSampleCnnsMatchTheNativeReference) {
  const BackendSpec& spec = onednn_region_backend();
  // squeezenet, googlenet: channel Concats written in place (channel counts are multiples of 16);
  // googlenet: Winograd 3x3 layers; dcgan_generator: deconvolutions.
  // The full-size ones are what peer_bench.sh ships as one region.
  for (const char* name :
       {"resnet_small", "mobilenet_small", "inception_small", "resnext_small", "dcgan_generator",
        "squeezenet", "googlenet", "mobilenet_v2", "resnet3d", "resnet50", "resnext50"}) {
    Graph g = import_sample(name);
    IndexSet all(g.nodes.size());
    for (const Node& n : g.nodes) {
      ASSERT_TRUE(spec.supports_node(g, n)) << name << ": " << n.describe();
      all.add(static_cast<size_t>(&n - &g.nodes[0]));
    }
    auto values = testing::reference_values(g);
    SubGraph sub = make_subgraph(g, all);
    std::unique_ptr<Kernel> kernel = spec.compile(g, sub, CompileOptions{});
    std::vector<const Tensor*> args;
    for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
    HeapAllocator alloc;
    for (int run = 0; run < 2; ++run) {  // buffers are reused between runs
      std::vector<Tensor> outs = kernel->run(args, alloc);
      ASSERT_EQ(outs.size(), sub.outputs.size());
      for (size_t k = 0; k < outs.size(); ++k)
        expect_close(outs[k], values[static_cast<size_t>(sub.outputs[k])],
                     std::string(name) + " run " + std::to_string(run));
    }
  }
}

// Random convex windows of consecutive nodes: values enter and leave the region in
// plain layout wherever the cut falls (mid-block, between a Conv and its Relu, at a Concat).
TEST(OnednnRegion, RegionsCutAnywhereMatchTheNativeReference) {
  const BackendSpec& spec = onednn_region_backend();
  for (const char* name : {"resnet_small", "mobilenet_small", "inception_small"}) {
    Graph g = import_sample(name);
    auto values = testing::reference_values(g);
    ConvexityChecker convex(g);
    uint64_t state = 11;
    int checked = 0;
    for (int trial = 0; trial < 40 && checked < 12; ++trial) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      size_t first = (state >> 33) % g.nodes.size(), len = 2 + (state >> 20) % 9;
      IndexSet nodes(g.nodes.size());
      for (size_t i = first; i < std::min(g.nodes.size(), first + len); ++i)
        if (spec.supports_node(g, g.nodes[i])) nodes.add(i);
      if (nodes.popcount() < 2 || !convex.is_convex(nodes)) continue;
      testing::CandidateCheck c = testing::check_candidate(g, spec, nodes, values, 1e-3, 1e-4);
      // Only a BatchNormalization cut off from its Conv may be declined.
      if (!c.supported) continue;
      EXPECT_TRUE(c.mismatch.empty()) << name << " nodes from " << first << ": " << c.mismatch;
      ++checked;
    }
    EXPECT_GE(checked, 8) << name;
  }
}

}  // namespace
}  // namespace collage
