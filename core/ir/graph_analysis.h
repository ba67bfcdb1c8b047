// Structural analyses over an imported Graph (node id == post-DFS index):
// dominator and post-dominator trees, node-level predecessors/successors,
// FLOP and byte counts.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/index_set.h"

namespace collage {

// Node-level edges (values collapsed; constants and graph inputs dropped).
struct NodeEdges {
  std::vector<std::vector<NodeId>> preds;  // unique, sorted
  std::vector<std::vector<NodeId>> succs;  // unique, sorted
};
NodeEdges node_edges(const Graph& graph);

// Immediate (post-)dominators; kNoNode stands for the virtual entry (resp. exit),
// which dominates every node without predecessors (post-dominates every node
// without successors or feeding a graph output).
struct DominatorTrees {
  std::vector<NodeId> idom;
  std::vector<NodeId> ipdom;
};
DominatorTrees dominator_trees(const Graph& graph);

// True if a dominates b in the tree given by `parent` (a node dominates itself).
bool dominates(const std::vector<NodeId>& parent, NodeId a, NodeId b);

struct NodeCost {
  double flops = 0;       // multiply-adds count as 2
  double bytes_read = 0;  // inputs incl. weights
  double bytes_written = 0;
};
NodeCost node_cost(const Graph& graph, NodeId id);

}  // namespace collage
