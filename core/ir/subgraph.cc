#include "core/ir/subgraph.h"

#include <algorithm>
#include <map>

namespace collage {

SubGraph make_subgraph(const Graph& graph, const IndexSet& nodes) {
  SubGraph s;
  s.nodes = nodes;
  for (size_t i : nodes.indices()) s.node_list.push_back(static_cast<NodeId>(i));
  auto add_unique = [](std::vector<ValueId>& list, ValueId v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  auto add_node_unique = [](std::vector<NodeId>& list, NodeId n) {
    if (list.empty() || list.back() != n) list.push_back(n);
  };
  for (NodeId n : s.node_list) {
    const Node& node = graph.node(n);
    for (ValueId in : node.inputs) {
      if (in == kNoValue) continue;
      const Value& v = graph.value(in);
      if (v.constant) {
        add_unique(s.constants, in);
      } else if (v.producer == kNoNode || !nodes.contains(static_cast<size_t>(v.producer))) {
        add_unique(s.inputs, in);
        add_node_unique(s.entries, n);
      }
    }
    for (ValueId out : node.outputs) {
      if (out == kNoValue) continue;
      const Value& v = graph.value(out);
      bool leaves = v.is_graph_output;
      for (NodeId c : v.consumers) leaves |= !nodes.contains(static_cast<size_t>(c));
      if (leaves) {
        add_unique(s.outputs, out);
        add_node_unique(s.exits, n);
      }
    }
  }
  return s;
}

Graph extract_submodel(const Graph& graph, const SubGraph& sub) {
  Graph out;
  out.name = graph.name;
  out.opsets = graph.opsets;
  std::map<ValueId, ValueId> remap;
  auto copy = [&](ValueId v) {
    if (v == kNoValue) return kNoValue;
    if (auto it = remap.find(v); it != remap.end()) return it->second;
    const Value& src = graph.value(v);
    Value value;
    value.name = src.name;
    value.dtype = src.dtype;
    value.shape = src.shape;
    value.shape_known = src.shape_known;
    value.kind = src.kind;
    value.constant = src.constant;
    return remap[v] = out.add_value(std::move(value));
  };
  for (ValueId v : sub.inputs) out.inputs.push_back(copy(v));
  for (NodeId n : sub.node_list) {
    Node node = graph.node(n);
    for (ValueId& v : node.inputs) v = copy(v);
    for (ValueId& v : node.outputs) v = copy(v);
    out.add_node(std::move(node));
  }
  for (ValueId v : sub.outputs) out.outputs.push_back(remap.at(v));
  out.rebuild_links();
  return out;
}

ConvexityChecker::ConvexityChecker(const Graph& graph) : edges_(node_edges(graph)) {}

bool ConvexityChecker::is_convex(const IndexSet& nodes) const {
  std::vector<size_t> members = nodes.indices();
  if (members.size() <= 1) return true;
  size_t hi = members.back();
  // Walk forward from the set through outside nodes only, up to hi
  // (post-DFS order: nothing after hi can lead back into the set).
  std::vector<uint8_t> reached(hi + 1, 0);
  std::vector<size_t> stack;
  for (size_t m : members)
    for (NodeId s : edges_.succs[m]) {
      size_t si = static_cast<size_t>(s);
      if (si <= hi && !nodes.contains(si) && !reached[si]) {
        reached[si] = 1;
        stack.push_back(si);
      }
    }
  while (!stack.empty()) {
    size_t n = stack.back();
    stack.pop_back();
    for (NodeId s : edges_.succs[n]) {
      size_t si = static_cast<size_t>(s);
      if (si > hi) continue;
      if (nodes.contains(si)) return false;  // left the set and came back
      if (!reached[si]) {
        reached[si] = 1;
        stack.push_back(si);
      }
    }
  }
  return true;
}

IndexSet all_nodes(const Graph& graph) {
  IndexSet all(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) all.add(i);
  return all;
}

std::string op_mix(const Graph& graph, const IndexSet& nodes) {
  std::map<std::string, int> count;
  for (size_t i : nodes.indices()) ++count[graph.node(static_cast<NodeId>(i)).op_type];
  std::vector<std::pair<int, std::string>> mix;
  for (const auto& [op, n] : count) mix.push_back({-n, op});
  std::sort(mix.begin(), mix.end());
  std::string text;
  for (size_t k = 0; k < mix.size(); ++k)
    text += (k ? ", " : "") + std::to_string(-mix[k].first) + " " + mix[k].second;
  return text;
}

std::string subgraph_label(const Graph& graph, const IndexSet& nodes) {
  const std::vector<size_t> ids = nodes.indices();
  if (ids.size() > kLabelListsUpTo) {
    return std::to_string(ids.size()) + " ops: " + op_mix(graph, nodes);  // "57 ops: 26 Conv, ..."
  }
  std::string label;
  for (size_t i : ids) {
    if (!label.empty()) label += '+';
    label += graph.node(static_cast<NodeId>(i)).op_type;
  }
  return label;
}

}  // namespace collage
