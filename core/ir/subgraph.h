// A sub-graph: a set of nodes plus the values crossing its boundary. Only
// convex sub-graphs (no path leaves the set and re-enters it) are valid kernels:
// they keep the partitioned graph acyclic.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/graph_analysis.h"
#include "core/ir/index_set.h"

namespace collage {

struct SubGraph {
  IndexSet nodes;
  std::vector<NodeId> node_list;   // ascending (post-DFS) order
  std::vector<ValueId> inputs;     // non-constant values read from outside, first-use order
  std::vector<ValueId> constants;  // constant values read (weights), first-use order
  std::vector<ValueId> outputs;    // values produced inside and read outside or graph outputs
  std::vector<NodeId> entries;     // nodes with a producer outside (or reading graph inputs)
  std::vector<NodeId> exits;       // nodes whose outputs leave the set
};

SubGraph make_subgraph(const Graph& graph, const IndexSet& nodes);

// `sub` as a self-contained model (what a remote measurement job carries): its inputs
// become graph inputs, the constants it reads are copied, its outputs are the graph
// outputs; node order is kept, so node k of the result is sub.node_list[k].
Graph extract_submodel(const Graph& graph, const SubGraph& sub);

// Reachability helper reused across many convexity checks on one graph.
class ConvexityChecker {
 public:
  explicit ConvexityChecker(const Graph& graph);
  // True if no path from a node in `nodes` to another node in `nodes` passes outside.
  bool is_convex(const IndexSet& nodes) const;

 private:
  NodeEdges edges_;
};

// "Conv+Add+Relu": the op types of the nodes in post-DFS order, joined by '+'.
// "Conv+Add+Relu" for up to kLabelListsUpTo nodes, else the op mix ("57 ops: 26 Conv, 23 Relu, ...").
inline constexpr size_t kLabelListsUpTo = 8;
std::string subgraph_label(const Graph& graph, const IndexSet& nodes);
// Every node of `graph`.
IndexSet all_nodes(const Graph& graph);
// The op mix of `nodes`, commonest first, ties by name: "26 Conv, 23 Relu, 7 Add, 1 MaxPool".
std::string op_mix(const Graph& graph, const IndexSet& nodes);

}  // namespace collage
