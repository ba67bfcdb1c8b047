// A mixed placement of a graph without measuring anything (artifact and shape-bucket tests).
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backends/registry.h"
#include "core/ir/subgraph.h"
#include "core/search/placement.h"
#include "core/search/search.h"
#include "core/tuning/candidates.h"

namespace collage::testing {

// A mixed placement without measuring: every candidate gets a deterministic
// pseudo-random cost (fused groups cheaper per node, native dearer) and the op-level
// search picks; candidates a library then declines to build are dropped and the
// search re-run. Exercises every fp32 backend the model offers, not the fastest mix (the
// reduced-precision ones are held to an accuracy budget, not to the tolerance these tests use).
inline Placement mixed_placement(const Graph& g) {
  std::vector<const BackendSpec*> fp32;
  for (const BackendSpec* b : all_backends())
    if (b->precision == Precision::Float32) fp32.push_back(b);
  std::vector<Candidate> cands = enumerate_candidates(g, fp32);
  std::vector<Cost> cost(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    uint64_t h = std::hash<std::string>()(cands[i].backend + cands[i].label + cands[i].nodes.to_string());
    cost[i].median_ms = (1.0 + static_cast<double>(h % 97) / 97.0) *
                        (cands[i].backend == "native" ? 2.0 : 1.0) /
                        std::sqrt(static_cast<double>(cands[i].nodes.popcount()));
  }
  for (int attempt = 0; attempt < 50; ++attempt) {
    SearchResult r = search_placement(g, cands, cost, Pins{}, SearchOptions{});
    Placement p;
    p.model_fingerprint = model_fingerprint(g);
    p.threads = 1;
    bool rebuilt = false;
    for (size_t idx : r.kernels) {
      const BackendSpec* spec = find_backend(cands[idx].backend);
      try {
        spec->compile(g, make_subgraph(g, cands[idx].nodes), CompileOptions{});
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Unsupported) throw;
        cost[idx] = Cost::invalid(e.what());  // like a failed measurement
        rebuilt = true;
        continue;
      }
      p.kernels.push_back({cands[idx].group(), Cost::of_ms(cost[idx].median_ms)});
    }
    if (!rebuilt) return p;
  }
  throw Error(ErrorKind::Internal, "no buildable placement");
}

}  // namespace collage::testing
