// Name scopes of a graph's nodes and the graph with some scopes collapsed.
// PyTorch's exporter names nodes by module path: "/layer1/layer1.0/conv1/Conv"
// lies in the scopes /layer1, /layer1/layer1.0 and /layer1/layer1.0/conv1 (the
// last component names the node itself). Invariants: scope 0 is the root (the
// whole graph, depth 0, path ""); ids are in preorder, children ordered by their
// first node; a scope's `nodes` are ascending and every node below it; a scope
// other than the root holds at least two nodes (a one-node scope would hide
// nothing when collapsed, so its node belongs to the parent); a child is one
// deeper than its parent. Kernel time is split evenly over a kernel's nodes, so a
// kernel spanning a scope boundary counts in each scope by its nodes there.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/graph_analysis.h"

namespace collage {

// A kernel's nodes, backend and time: the input of the per-node time split.
struct KernelTime {
  std::vector<NodeId> nodes;
  std::string backend;
  double ms = 0;
};

// One node's share of the kernel covering it (kernel -1 and 0 ms when no kernel covers it).
struct NodeShare {
  double ms = 0;
  std::string backend;
  int kernel = -1;
};

// Each kernel's time split evenly over its nodes.
std::vector<NodeShare> split_evenly(int num_nodes, const std::vector<KernelTime>& kernels);

// What a collapsed scope shows: its total time and the time by backend.
struct ScopeCost {
  double ms = 0;                             // Σ of its nodes' shares
  std::map<std::string, double> backend_ms;  // the same by backend ("" for uncovered nodes)
  int kernels = 0;                           // kernels with at least one node inside
};

class ScopeTree {
 public:
  struct Scope {
    std::string path;  // "/layer1/layer1.0"; "" for the root
    std::string name;  // the last component, "layer1.0"
    int parent = -1;
    int depth = 0;
    std::vector<int> children;
    std::vector<NodeId> nodes;  // every node below, ascending
  };

  explicit ScopeTree(const std::vector<std::string>& node_names);  // by node id
  static ScopeTree of(const Graph& graph);

  int size() const { return static_cast<int>(scopes_.size()); }
  const Scope& scope(int id) const { return scopes_.at(static_cast<size_t>(id)); }
  int innermost(NodeId node) const { return innermost_.at(static_cast<size_t>(node)); }
  int find(const std::string& path) const;  // -1 if no such scope
  int max_depth() const;
  ScopeCost cost(int scope, const std::vector<NodeShare>& shares) const;

  // Boxes and nodes shown with every scope of `depth` collapsed.
  int units_at_depth(int depth) const;
  // The deepest depth >= 1 whose collapsed graph shows at most `max_units` (0: none does).
  int deepest_depth_within(int max_units) const;

  // Collapse states are one flag per scope (the root's is ignored).
  // Every scope of depth `depth` collapsed (depth < 1: none, all expanded).
  std::vector<bool> collapsed_at_depth(int depth) const;
  // Opens `scope` one level: it is shown expanded, its children collapsed. A scope whose only
  // content is one child scope opens through it (PyTorch's features.3 -> features.3.0 ->
  // block opens at block's children in one step).
  void expand(std::vector<bool>& collapsed, int scope) const;
  // The outermost collapsed scope holding `node`, or -1 when the node is shown itself.
  int collapsed_owner(NodeId node, const std::vector<bool>& collapsed) const;

 private:
  std::vector<Scope> scopes_;
  std::vector<int> innermost_;  // by node
};

// The graph as shown: each node either itself or inside the one box of its outermost
// collapsed scope. Edges join distinct units, once per pair, with the node edges they stand for.
struct CollapsedGraph {
  struct Unit {
    NodeId node = kNoNode;  // a node shown itself
    int scope = -1;         // or a collapsed scope
  };
  struct Edge {
    int from = 0, to = 0;
    std::vector<std::pair<NodeId, NodeId>> members;  // producer -> consumer node edges
  };
  std::vector<Unit> units;   // ascending by their first node
  std::vector<int> unit_of;  // by node
  std::vector<Edge> edges;
};

CollapsedGraph collapse(const ScopeTree& tree, const NodeEdges& edges, const std::vector<bool>& collapsed);

}  // namespace collage
