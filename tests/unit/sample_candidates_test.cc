// Every backend's candidates on every small sample model: each node is covered,
// and each candidate compiles and matches the native reference (or its backend
// explicitly reports it unsupported).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "backend_check.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/ir/accuracy.h"
#include "resources/samples/zoo.h"
#include "tests/unit/temp_dir.h"

namespace collage {
namespace {

// A reduced-precision kernel's outputs against the fp32 reference under the budget int8
// kernels are documented to meet on their own (docs/backends.md, precision); "" when they do.
std::string reduced_precision_error(const Graph& g, const BackendSpec& backend, const IndexSet& nodes,
                                    const std::vector<Tensor>& values) {
  SubGraph sub = make_subgraph(g, nodes);
  std::unique_ptr<Kernel> kernel = backend.compile(g, sub, CompileOptions{});
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
  HeapAllocator alloc;
  std::vector<Tensor> got = kernel->run(args, alloc);
  const AccuracyBudget budget = parse_accuracy("max-rel=5e-2,cosine=0.999");
  for (size_t o = 0; o < got.size(); ++o) {
    AccuracyMeasure m = measure_accuracy(got[o], values[static_cast<size_t>(sub.outputs[o])], budget,
                                         g.value(sub.outputs[o]).name, false);
    if (!m.ok()) return m.failure;
  }
  return "";
}

TEST(SampleCandidates, AllBackendsOnAllSmallSamples) {
  testing::ScopedTempDir dir("collage_sample_candidates");
  for (const auto& info : samples::sample_list()) {
    if (!info.small) continue;
    auto path = dir.path() / (info.name + ".onnx");
    samples::build_sample(info.name).save(path.string());
    ImportOptions options;
    options.evaluator = native::node_evaluator();
    Graph g = import_onnx_file(path.string(), options);
    std::filesystem::remove(path);
    auto candidates = enumerate_candidates(g, all_backends());
    IndexSet covered(g.nodes.size());
    std::map<std::string, std::pair<int, int>> per_backend;  // checked, unsupported
    auto values = testing::reference_values(g);
    for (const Candidate& c : candidates) {
      covered = covered | c.nodes;
      const BackendSpec& backend = *find_backend(c.backend);
      if (backend.precision != Precision::Float32) {  // held to an accuracy budget, not the fp32 rule
        per_backend[c.backend].first++;
        EXPECT_EQ(reduced_precision_error(g, backend, c.nodes, values), "") << info.name << " " << c.label;
        continue;
      }
      auto r = testing::check_candidate(g, backend, c.nodes, values, 1e-3, 1e-4);
      per_backend[c.backend].first++;
      if (!r.supported) {
        per_backend[c.backend].second++;
        continue;
      }
      EXPECT_TRUE(r.mismatch.empty())
          << info.name << " " << c.backend << " " << c.label << ": " << r.mismatch;
    }
    EXPECT_EQ(covered.popcount(), g.nodes.size()) << info.name;
    for (const auto& [backend, counts] : per_backend) {
      std::cout << info.name << " " << backend << ": " << counts.first << " candidates, " << counts.second
                << " reported unsupported\n";
      // Declining is allowed, but a backend must not claim patterns it mostly cannot build.
      EXPECT_LE(counts.second * 10, counts.first) << info.name << " " << backend;
    }
  }
}

// GoogLeNet's ceil-mode MaxPools at their real sizes (112 -> 56 needs the ceil; the branch pools are
// 3x3 stride 1 pad 1 ceil): every candidate holding one compiles and matches the native reference, or
// its backend declines it. The one native run of a full-size sample in the suite.
TEST(SampleCandidates, CeilModePoolsOfGoogLeNet) {
  testing::ScopedTempDir dir("collage_googlenet");
  auto path = dir.path() / "googlenet.onnx";
  samples::build_sample("googlenet").save(path.string());
  ImportOptions options;
  options.evaluator = native::node_evaluator();
  Graph g = import_onnx_file(path.string(), options);
  std::filesystem::remove(path);
  auto values = testing::reference_values(g);
  const Tensor& out = values[static_cast<size_t>(g.outputs[0])];
  ASSERT_EQ(out.shape(), (Shape{1, 1000}));
  for (double x : out.to_double_vector()) ASSERT_TRUE(std::isfinite(x));
  std::map<NodeId, std::set<std::string>> built;  // MaxPool node -> backends that built it
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op_type == "MaxPool") built[static_cast<NodeId>(i)];
  ASSERT_EQ(built.size(), 13u);  // 4 between stages, one per Inception block
  for (const Candidate& c : enumerate_candidates(g, all_backends())) {
    std::vector<NodeId> pools;
    for (const auto& [id, backends] : built)
      if (c.nodes.contains(static_cast<size_t>(id))) pools.push_back(id);
    if (pools.empty()) continue;
    auto r = testing::check_candidate(g, *find_backend(c.backend), c.nodes, values, 1e-3, 1e-4);
    if (!r.supported) continue;
    EXPECT_TRUE(r.mismatch.empty()) << c.backend << " " << c.label << ": " << r.mismatch;
    for (NodeId id : pools) built[id].insert(c.backend);
  }
  for (const auto& [id, backends] : built) {
    EXPECT_TRUE(backends.count("native")) << g.nodes[static_cast<size_t>(id)].name;
    EXPECT_GE(backends.size(), 2u) << g.nodes[static_cast<size_t>(id)].name << ": no library builds it";
    std::string list;
    for (const std::string& b : backends) list += " " + b;
    std::cout << g.nodes[static_cast<size_t>(id)].name << ":" << list << "\n";
  }
}

}  // namespace
}  // namespace collage
