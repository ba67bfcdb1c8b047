#include "backends/onednn_region/onednn_region.h"

#include <gtest/gtest.h>

#include "backend_check.h"
#include "core/ir/tensor_compare.h"
#include "sample_graph.h"

namespace collage {
namespace {

using testing::sample_graph;

// The tuner's rule, the one comparison the project has.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  TensorComparison c = compare_tensors(got, want, kKernelTolerance);
  EXPECT_TRUE(c.ok()) << what << ": element " << c.first_mismatch << " = " << c.got_value << ", reference "
                      << c.want_value << (c.shape_mismatch ? " (shapes differ)" : "");
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
    Graph g = sample_graph(name);
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
    Graph g = sample_graph(name);
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
