#include "core/ir/graph_analysis.h"

#include <algorithm>
#include <set>

namespace collage {

NodeEdges node_edges(const Graph& graph) {
  NodeEdges e;
  size_t n = graph.nodes.size();
  e.preds.resize(n);
  e.succs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    for (ValueId in : graph.nodes[i].inputs) {
      if (in == kNoValue) continue;
      NodeId p = graph.value(in).producer;
      if (p != kNoNode) e.preds[i].push_back(p);
    }
    std::sort(e.preds[i].begin(), e.preds[i].end());
    e.preds[i].erase(std::unique(e.preds[i].begin(), e.preds[i].end()), e.preds[i].end());
    for (NodeId p : e.preds[i]) e.succs[static_cast<size_t>(p)].push_back(static_cast<NodeId>(i));
  }
  return e;  // succs are sorted because i increases
}

namespace {

// Cooper-Harvey-Kennedy intersection on a DAG processed in topological order:
// `order_index` ranks nodes so that parents rank before children.
NodeId intersect(const std::vector<NodeId>& parent, const std::vector<size_t>& rank, NodeId a, NodeId b) {
  while (a != b) {
    if (a == kNoNode || b == kNoNode) return kNoNode;
    while (a != kNoNode && b != kNoNode && rank[static_cast<size_t>(a)] > rank[static_cast<size_t>(b)])
      a = parent[static_cast<size_t>(a)];
    while (a != kNoNode && b != kNoNode && rank[static_cast<size_t>(b)] > rank[static_cast<size_t>(a)])
      b = parent[static_cast<size_t>(b)];
  }
  return a;
}

}  // namespace

DominatorTrees dominator_trees(const Graph& graph) {
  NodeEdges e = node_edges(graph);
  size_t n = graph.nodes.size();
  DominatorTrees t;
  t.idom.assign(n, kNoNode);
  t.ipdom.assign(n, kNoNode);
  std::vector<size_t> rank(n);
  for (size_t i = 0; i < n; ++i) rank[i] = i;
  for (size_t i = 0; i < n; ++i) {
    if (e.preds[i].empty()) continue;
    NodeId d = e.preds[i][0];
    for (size_t k = 1; k < e.preds[i].size(); ++k) d = intersect(t.idom, rank, d, e.preds[i][k]);
    t.idom[i] = d;
  }
  // Post-dominators: the same on the reversed DAG. Nodes feeding a graph output
  // also reach the virtual exit directly.
  std::vector<size_t> rrank(n);
  for (size_t i = 0; i < n; ++i) rrank[i] = n - 1 - i;
  for (size_t i = n; i-- > 0;) {
    bool feeds_exit = e.succs[i].empty();
    for (ValueId out : graph.nodes[i].outputs)
      if (out != kNoValue && graph.value(out).is_graph_output) feeds_exit = true;
    if (feeds_exit) continue;
    NodeId d = e.succs[i][0];
    for (size_t k = 1; k < e.succs[i].size(); ++k) d = intersect(t.ipdom, rrank, d, e.succs[i][k]);
    t.ipdom[i] = d;
  }
  return t;
}

bool dominates(const std::vector<NodeId>& parent, NodeId a, NodeId b) {
  for (NodeId x = b; x != kNoNode; x = parent[static_cast<size_t>(x)])
    if (x == a) return true;
  return false;
}

namespace {
double elements(const Graph& g, ValueId v) {
  return v == kNoValue ? 0.0 : static_cast<double>(shape_size(g.value(v).shape));
}
double bytes_of(const Graph& g, ValueId v) {
  return v == kNoValue ? 0.0 : elements(g, v) * static_cast<double>(dtype_size(g.value(v).dtype));
}
}  // namespace

NodeCost node_cost(const Graph& graph, NodeId id) {
  const Node& n = graph.node(id);
  NodeCost c;
  for (ValueId in : n.inputs) c.bytes_read += bytes_of(graph, in);
  for (ValueId out : n.outputs) c.bytes_written += bytes_of(graph, out);
  double out_elems = n.outputs.empty() ? 0.0 : elements(graph, n.outputs[0]);
  const std::string& op = n.op_type;
  static const Shape kNone;  // an omitted input (import refuses omitted required ones)
  auto in_shape = [&](size_t i) -> const Shape& {
    return i < n.inputs.size() && n.inputs[i] != kNoValue ? graph.value(n.inputs[i]).shape : kNone;
  };
  if (op == "Conv" || op == "ConvTranspose") {
    const Shape& w = in_shape(1);  // Conv: [M, C/g, k...]; ConvTranspose: [C, M/g, k...]
    double per_out = 1;
    for (size_t d = 1; d < w.size(); ++d) per_out *= static_cast<double>(w[d]);
    if (op == "Conv") {
      c.flops = 2 * out_elems * per_out;
    } else {
      double in_elems = n.inputs.empty() ? 0.0 : elements(graph, n.inputs[0]);
      c.flops = 2 * in_elems * per_out;
    }
  } else if (op == "MatMul" || op == "Gemm") {
    const Shape& a = in_shape(0);
    bool trans_a = op == "Gemm" && n.attr_int("transA", 0) != 0;
    double k = a.empty() ? 1 : static_cast<double>(trans_a ? a[0] : a.back());
    c.flops = 2 * out_elems * k;
  } else if (op == "Einsum") {
    c.flops =
        2 * std::max(n.inputs.empty() ? 0.0 : elements(graph, n.inputs[0]), out_elems) *
        (n.inputs.size() > 1 ? std::max(1.0, elements(graph, n.inputs[1]) / std::max(1.0, out_elems)) : 1.0);
  } else if (op == "MaxPool" || op == "AveragePool") {
    double window = 1;
    for (int64_t k : n.attr_ints("kernel_shape")) window *= static_cast<double>(k);
    c.flops = out_elems * window;
  } else if (op.rfind("Reduce", 0) == 0 || op.rfind("Global", 0) == 0) {
    c.flops = n.inputs.empty() ? 0.0 : elements(graph, n.inputs[0]);
  } else if (op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization" ||
             op == "BatchNormalization" || op == "InstanceNormalization") {
    c.flops = 5 * out_elems;
  } else if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Identity" ||
             op == "Shape" || op == "Size" || op == "Dropout") {
    c.flops = 0;
    c.bytes_read = c.bytes_written = 0;  // views: no data moves
  } else {
    c.flops = out_elems;  // element-wise and data movement: one op per output element
  }
  return c;
}

}  // namespace collage
