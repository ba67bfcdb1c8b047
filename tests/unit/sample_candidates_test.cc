// Every backend's candidates on every small sample model: each node is covered,
// and each candidate compiles and matches the native reference (or its backend
// explicitly reports it unsupported).
#include <gtest/gtest.h>

#include <filesystem>

#include "backend_check.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/onnx_import.h"
#include "resources/samples/zoo.h"

namespace collage {
namespace {

TEST(SampleCandidates, AllBackendsOnAllSmallSamples) {
  for (const auto& info : samples::sample_list()) {
    if (!info.small) continue;
    auto path = std::filesystem::temp_directory_path() / (info.name + std::to_string(::getpid()) + ".onnx");
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
      auto r = testing::check_candidate(g, *find_backend(c.backend), c.nodes, values, 1e-3, 1e-4);
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

}  // namespace
}  // namespace collage
