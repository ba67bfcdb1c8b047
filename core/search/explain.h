// "Why here, and what if": explains where a placement put one node, from the
// candidates and their costs alone (nothing is measured; every re-search is the
// op-level search_placement over the same candidates and costs, so it is
// synchronous and cheap).
//
// Invariants and rules:
// * All latencies use one formula, the search's: Σ over a placement's kernels of
//   (cost + ε). A kernel that is a candidate with a valid cost counts at that cost;
//   any other kernel (a refined region, a stale placement) counts at its placement cost;
//   a kernel with neither cannot be counted, and the explainer refuses the placement.
//   So "current" is the given placement re-costed under these costs and ε, not the
//   `predicted_ms` it was saved with.
// * Δ compares like with like, against one baseline per explainer (`baseline()`):
//   - an op-level placement (every kernel a candidate): the placement re-costed, since
//     both sides are then Σ (cost + ε) over candidates;
//   - a placement with refined regions (measured end to end, not a sum of candidate
//     costs): the op-level search under the current pins, so Δ = the search with the
//     change − the same search without it (when that search is infeasible: the placement).
// * Runner-up: the best placement with the node's chosen backend forbidden for it
//   (its own pin dropped, other pins kept); Δ = runner-up − baseline.
// * Near tie: |Δ| ≤ spread, where spread = Σ stddev of the kernels that differ
//   between the alternative and the baseline (in one and not the other, same backend and nodes
//   compared). A kernel with no measured spread (not a candidate) adds 0.
// * What-ifs mirror the explorer's menu: "Run on B" sets the node's pin to B and
//   clears its forbids; "Forbid B" adds B to its forbids (a pin stays). "Run on" the
//   backend of the node's kernel in the placement changes nothing: it is marked `current`
//   and is the baseline itself (Δ 0, not re-searched).
// * An impossible re-search is not an error here: the alternative says why.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/search/placement.h"
#include "core/search/search.h"
#include "core/tuning/measurer.h"

namespace collage {

// Why the node sits where it does, checked in this order.
enum class PlacementReason {
  NotFromTheseCosts,  // its kernel has no valid cost here (a candidate that failed, or an unknown kernel
                      // on an op-level backend): the placement was made from other costs
  RefinedIntoRegion,  // its kernel is not a candidate and is on a graph-level backend: the refinement made it
  OnlyBackend,        // every valid candidate covering it is on one backend
  Pinned,             // the pins leave one backend for it, the one it is on (a pin, or forbids)
  FusedGroupWins,     // its kernel is a fused candidate (more than one node)
  SingleOpCheapest,   // its kernel is a single-op candidate: the cheapest whole placement runs it alone
};

// "only-backend", "pinned", ...: stable keys (CLI, JSON).
const char* reason_key(PlacementReason reason);

// One re-searched placement.
struct Alternative {
  bool feasible = false;
  std::string infeasible_reason;  // when not feasible: the search's InvalidInput message
  double predicted_ms = 0;        // Σ cost + ε of the re-searched placement
  double delta_ms = 0;            // predicted_ms − the explainer's baseline (see the header)
  double spread_ms = 0;           // Σ stddev of the kernels that differ (see the header)
  bool near_tie = false;          // |delta_ms| ≤ spread_ms
  std::vector<size_t> kernels;    // candidate indices, execution order
  std::string backend, label;     // the kernel covering the explained node in it
  size_t kernel_nodes = 0;
};

// What every Δ is measured against (see the header).
enum class DeltaBaseline { ThisPlacement, OpLevelSearch };
// "this placement re-costed" / "the op-level search under the current pins": for people.
const char* baseline_words(DeltaBaseline baseline);
const char* baseline_key(DeltaBaseline baseline);  // "placement" / "op-level-search": CLI JSON

struct WhatIf {
  std::string backend;
  bool current = false;  // the node's kernel in the placement is on `backend`: run_on is the baseline
  Alternative run_on;    // pin the node to `backend`
  Alternative forbid;    // forbid `backend` for the node
};

struct CandidateCover {
  size_t index = 0;  // into the candidates
  std::string backend, label;
  size_t nodes = 0;
  Cost cost;
  bool chosen = false;  // it is the placement's kernel holding the node
};

struct NodeExplanation {
  NodeId node = kNoNode;
  std::vector<CandidateCover> candidates;  // every candidate covering the node, candidate order
  PlacedKernel chosen;                     // the placement's kernel holding the node
  bool chosen_is_candidate = false;        // some candidate has its backend and nodes
  double chosen_ms = 0;                    // its cost as counted in `current_ms`
  PlacementReason reason = PlacementReason::SingleOpCheapest;
  std::string reason_text;  // the reason in words, naming backends; notes when the placement is not
                            // the cheapest under these costs and pins
  double current_ms = 0;    // the placement re-costed (see the header)
  Alternative runner_up;
};

class PlacementExplainer {
 public:
  // `costs` aligned with `candidates`; `graph_level` names the graph-level backends.
  // Throws InvalidInput when the sizes disagree, the placement does not cover the graph or
  // a kernel has no cost (neither a measured candidate nor a cost in the placement).
  PlacementExplainer(const Graph& graph, const std::vector<Candidate>& candidates, std::vector<Cost> costs,
                     const Placement& placement, Pins pins, double epsilon_ms,
                     std::set<std::string> graph_level = {});

  double current_ms() const { return current_ms_; }
  DeltaBaseline baseline() const { return baseline_; }
  double baseline_ms() const { return baseline_ms_; }
  // Throws InvalidInput for a node id outside the graph.
  NodeExplanation explain(NodeId node) const;
  // One entry per backend offering a candidate for the node, in first-candidate order.
  std::vector<WhatIf> what_ifs(NodeId node) const;
  // The best placement under `pins` (same candidates, costs, ε), compared with the current one;
  // its backend/label name the kernel holding `node` (kNoNode: none).
  Alternative re_search(const Pins& pins, NodeId node) const;

 private:
  const PlacedKernel& kernel_of(NodeId node) const;

  const Graph& graph_;
  const std::vector<Candidate>& candidates_;
  std::vector<Cost> costs_;
  const Placement& placement_;
  Pins pins_;
  double epsilon_ms_;
  std::set<std::string> graph_level_;
  std::vector<int> kernel_of_node_;            // node -> index into placement_.kernels
  std::vector<int> candidate_of_kernel_;       // placement kernel -> candidate index or -1
  std::vector<double> kernel_ms_;              // placement kernel -> cost counted
  std::vector<std::vector<size_t>> covering_;  // node -> candidates covering it
  double current_ms_ = 0;
  std::optional<double> optimum_ms_;  // the search under pins_, for an op-level placement when feasible
  DeltaBaseline baseline_ = DeltaBaseline::ThisPlacement;
  double baseline_ms_ = 0;
  std::map<std::pair<std::string, std::vector<NodeId>>, double> baseline_kernels_;  // kernel -> stddev
};

// The costs of measured candidates, aligned.
std::vector<Cost> costs_of(const std::vector<MeasuredCandidate>& measured);

}  // namespace collage
