// The difference between two placements of one model (same model_fingerprint, else
// InvalidInput naming both). A kernel with the same node set and backend in both is
// unchanged (its label and cost do not matter); every other kernel is changed. Changed
// kernels of A and B that share a node join one region: a region is a connected
// component of the overlap between A's and B's changed kernels, so when both placements
// cover the model its A kernels and its B kernels cover exactly the same nodes.
// Regions are ordered by their first node. No graph is needed: it works on kernels read
// structurally (placement_structure_from_json) as well as on validated placements.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/search/placement.h"

namespace collage {

struct DiffRegion {
  std::vector<NodeId> nodes;                   // ascending: every node of the region's kernels
  std::vector<PlacedKernel> a, b;              // A's / B's kernels over these nodes, in placement order
  double a_ms = 0, b_ms = 0;                   // the summed costs of their kernels with a cost
  int a_without_cost = 0, b_without_cost = 0;  // their kernels with no cost, left out of a_ms / b_ms
  double delta_ms() const { return b_ms - a_ms; }
  bool costs_complete() const { return a_without_cost == 0 && b_without_cost == 0; }
};

struct BackendNodes {
  int a = 0, b = 0;  // nodes placed on the backend in A / in B
};

struct PlacementDiff {
  std::vector<DiffRegion> regions;
  size_t kernels_a = 0, kernels_b = 0;
  size_t unchanged_kernels = 0;
  size_t changed_nodes = 0;  // nodes in some region
  double predicted_a_ms = 0, predicted_b_ms = 0;
  int threads_a = 1, threads_b = 1;
  std::map<std::string, BackendNodes> nodes_per_backend;  // every backend either one uses

  bool identical() const { return regions.empty(); }
  double predicted_delta_ms() const { return predicted_b_ms - predicted_a_ms; }
  std::vector<NodeId> changed() const;  // every region's nodes, ascending
};

// `name_a` and `name_b` (file names) only name the placements in the error message.
PlacementDiff diff_placements(const Placement& a, const Placement& b, const std::string& name_a = "A",
                              const std::string& name_b = "B");

// Two shape buckets of one model (core/ir/shape_buckets.h): graphs imported with different dims,
// so their fingerprints differ, but node ids name the same nodes when the graphs have the same
// nodes (names and ops, in order) — then the placements are diffed as above; InvalidInput
// naming the first differing node otherwise.
PlacementDiff diff_buckets(const Graph& graph_a, const Placement& a, const Graph& graph_b, const Placement& b,
                           const std::string& name_a, const std::string& name_b);

// "onednn x2, native": the backends of some kernels, most kernels first (ties by name).
std::string backend_summary(const std::vector<PlacedKernel>& kernels);

// The diff as JSON (docs/cli.md, "collage diff"); with `graph`, node names beside the ids.
std::string placement_diff_to_json(const PlacementDiff& diff, const Graph* graph = nullptr);

}  // namespace collage
