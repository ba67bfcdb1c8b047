// Op-level placement search (Collage §4.2): shortest path over covered-node
// sets. From a state, the first uncovered node (post-DFS order) must be covered
// by a candidate overlapping nothing covered; edge cost = measured median + ε.
// A* with an admissible per-node lower bound keeps it tractable; past a state
// cap it degrades to a beam search (documented, result flagged inexact).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/search/pins.h"
#include "core/tuning/candidates.h"
#include "core/tuning/cost.h"
#include "core/tuning/progress.h"

namespace collage {

struct SearchOptions {
  double epsilon_ms = 0.002;   // per-kernel dispatch cost
  size_t max_states = 500000;  // past this, switch to beam search
  size_t beam_width = 256;
};

struct SearchResult {
  std::vector<size_t> kernels;  // candidate indices in a valid execution order
  double predicted_ms = 0;      // Σ cost + ε · #kernels
  size_t states_expanded = 0;
  bool exact = true;  // false when the beam fallback ran
  double elapsed_ms = 0;
};

// `costs[i]` is candidate i's cost; an invalid one is never placed.
// Throws InvalidInput when pins cannot be satisfied (naming the node and why),
// Error(Cancelled) when the observer asks.
SearchResult search_placement(const Graph& graph, const std::vector<Candidate>& candidates,
                              const std::vector<Cost>& costs, const Pins& pins, const SearchOptions& options,
                              ProgressObserver* observer = nullptr);

// Orders kernels (sets of nodes) so each runs after its producers; throws Internal on a cycle.
std::vector<size_t> execution_order(const Graph& graph, const std::vector<IndexSet>& kernels);

}  // namespace collage
