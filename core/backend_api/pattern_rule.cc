#include "core/backend_api/pattern_rule.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/ir/graph_analysis.h"

namespace collage {

IndexSet nodes_between(const Graph& graph, const NodeEdges& edges, const IndexSet& from, NodeId to) {
  size_t n = graph.nodes.size(), target = static_cast<size_t>(to);
  // Forward-reachable from `from` (within index <= to), then backward from `to`.
  std::vector<uint8_t> fwd(n, 0), bwd(n, 0);
  for (size_t i : from.indices()) fwd[i] = 1;
  for (size_t i = 0; i <= target && i < n; ++i) {
    if (!fwd[i]) continue;
    for (NodeId s : edges.succs[i])
      if (static_cast<size_t>(s) <= target) fwd[static_cast<size_t>(s)] = 1;
  }
  IndexSet out(n);
  if (!fwd[target]) return out;
  bwd[target] = 1;
  for (size_t i = target + 1; i-- > 0;) {
    if (!bwd[i]) continue;
    if (fwd[i]) out.add(i);
    for (NodeId p : edges.preds[i]) bwd[static_cast<size_t>(p)] = 1;
  }
  return out | from;
}

std::vector<IndexSet> generate_groups(const Graph& graph, const PatternRule& rule,
                                      const GroupLimits& limits) {
  NodeEdges edges = node_edges(graph);
  DominatorTrees trees = dominator_trees(graph);
  ConvexityChecker convexity(graph);
  std::vector<IndexSet> groups;
  std::unordered_map<size_t, std::vector<size_t>> seen;  // hash -> indices into groups
  auto emit = [&](const IndexSet& g) {
    auto& bucket = seen[g.hash()];
    for (size_t i : bucket)
      if (groups[i] == g) return;
    bucket.push_back(groups.size());
    groups.push_back(g);
  };
  for (NodeId seed = 0; seed < graph.num_nodes(); ++seed) {
    if (!rule.op_rule(graph, seed)) continue;
    IndexSet group(graph.nodes.size());
    group.add(static_cast<size_t>(seed));
    emit(group);
    NodeId sink = seed;
    for (size_t depth = 0; depth < limits.max_depth; ++depth) {
      sink = trees.ipdom[static_cast<size_t>(sink)];
      if (sink == kNoNode) break;
      IndexSet grown = nodes_between(graph, edges, group, sink);
      if (grown.popcount() > limits.max_nodes) break;
      bool supported = true;
      for (size_t i : (grown - group).indices()) supported &= rule.op_rule(graph, static_cast<NodeId>(i));
      if (!supported || !rule.fusion_rule(graph, grown, seed, sink)) break;
      if (!convexity.is_convex(grown)) break;
      group = grown;
      if (make_subgraph(graph, group).exits.size() <= limits.max_exits) emit(group);
    }
  }
  return groups;
}

OpCategory op_category(const std::string& op) {
  static const std::set<std::string> elemwise = {
      "Relu",        "LeakyRelu", "Elu",        "Selu",  "Sigmoid", "Tanh",  "Softplus", "Softsign",
      "HardSigmoid", "HardSwish", "Clip",       "Erf",   "Gelu",    "Exp",   "Log",      "Sqrt",
      "Neg",         "Abs",       "Reciprocal", "Floor", "Ceil",    "Round", "Sign",     "Identity",
      "Dropout",     "Cast",      "Not",        "Sin",   "Cos",     "Shrink"};
  static const std::set<std::string> broadcast = {"Add",
                                                  "Sub",
                                                  "Mul",
                                                  "Div",
                                                  "Pow",
                                                  "Max",
                                                  "Min",
                                                  "Sum",
                                                  "Mean",
                                                  "PRelu",
                                                  "Where",
                                                  "BatchNormalization",
                                                  "Equal",
                                                  "Less",
                                                  "Greater",
                                                  "LessOrEqual",
                                                  "GreaterOrEqual",
                                                  "And",
                                                  "Or",
                                                  "Xor"};
  static const std::set<std::string> injective = {
      "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose",    "Concat",       "Slice", "Split",
      "Gather",  "Expand",  "Tile",    "Pad",       "DepthToSpace", "SpaceToDepth", "Resize"};
  static const std::set<std::string> reduction = {"ReduceMean",   "ReduceSum",  "ReduceMax",
                                                  "ReduceMin",    "ReduceProd", "GlobalAveragePool",
                                                  "GlobalMaxPool"};
  static const std::set<std::string> out_fusable = {"Conv",   "ConvTranspose", "MatMul",     "Gemm",
                                                    "Einsum", "MaxPool",       "AveragePool"};
  if (elemwise.count(op)) return OpCategory::ElemWise;
  if (broadcast.count(op)) return OpCategory::Broadcast;
  if (injective.count(op)) return OpCategory::Injective;
  if (reduction.count(op)) return OpCategory::Reduction;
  if (out_fusable.count(op)) return OpCategory::OutEWiseFusable;
  return OpCategory::Opaque;
}

const char* op_category_name(OpCategory c) {
  switch (c) {
    case OpCategory::ElemWise:
      return "elemwise";
    case OpCategory::Broadcast:
      return "broadcast";
    case OpCategory::Injective:
      return "injective";
    case OpCategory::Reduction:
      return "reduction";
    case OpCategory::OutEWiseFusable:
      return "out-ewise-fusable";
    case OpCategory::Opaque:
      return "opaque";
  }
  return "?";
}

bool TvmStyleRule::op_rule(const Graph& graph, NodeId node) const {
  return supported_(graph, graph.node(node));
}

bool TvmStyleRule::fusion_rule(const Graph& graph, const IndexSet& grown, NodeId src, NodeId sink) const {
  OpCategory seed = op_category(graph.node(src).op_type);
  auto cat = [&](size_t i) { return op_category(graph.node(static_cast<NodeId>(i)).op_type); };
  auto is_ewise = [](OpCategory c) { return c == OpCategory::ElemWise || c == OpCategory::Broadcast; };
  for (size_t i : grown.indices()) {
    if (i == static_cast<size_t>(src)) continue;
    OpCategory c = cat(i);
    switch (seed) {
      case OpCategory::OutEWiseFusable:
        if (!is_ewise(c)) return false;  // conv/matmul + element-wise epilogue
        break;
      case OpCategory::ElemWise:
      case OpCategory::Broadcast:
      case OpCategory::Injective:
        // Injective chains, optionally ending in one reduction (the sink).
        if (c == OpCategory::Reduction ? i != static_cast<size_t>(sink)
                                       : !(is_ewise(c) || c == OpCategory::Injective))
          return false;
        break;
      case OpCategory::Reduction:
        if (!is_ewise(c)) return false;  // reduction + element-wise epilogue
        break;
      case OpCategory::Opaque:
        return false;
    }
  }
  return true;
}

}  // namespace collage
