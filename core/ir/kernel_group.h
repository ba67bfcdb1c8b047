// "A group of nodes run as one kernel on one backend": the unit a placement, an
// artifact's plan and the explorer pass around. Invariants: `nodes` is non-empty,
// ascending post-DFS ids, and convex in the graph; `label` names the fused ops
// ("Conv+Add+Relu") for people, never for lookup.
//
// Two related types remain on purpose: `Candidate` (core/tuning) keeps its nodes
// as an IndexSet because the search unions and intersects thousands of them per
// state, and `SubGraph` (core/ir/subgraph.h) is the derived boundary of a node set
// (its inputs, constants, outputs) that a backend compiles from.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/index_set.h"

namespace collage {

struct KernelGroup {
  std::vector<NodeId> nodes;
  std::string backend;
  std::string label;
};

// The ascending node ids of a node set (IndexSet is itself ordered).
inline std::vector<NodeId> node_ids(const IndexSet& set) {
  std::vector<NodeId> ids;
  for (size_t i : set.indices()) ids.push_back(static_cast<NodeId>(i));
  return ids;
}

}  // namespace collage
