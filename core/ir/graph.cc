#include "core/ir/graph.h"

#include <algorithm>

namespace collage {

Attribute Attribute::of_int(int64_t v) {
  Attribute a;
  a.kind = AttrKind::Int;
  a.i = v;
  return a;
}
Attribute Attribute::of_float(float v) {
  Attribute a;
  a.kind = AttrKind::Float;
  a.f = v;
  return a;
}
Attribute Attribute::of_string(std::string v) {
  Attribute a;
  a.kind = AttrKind::String;
  a.s = std::move(v);
  return a;
}
Attribute Attribute::of_ints(std::vector<int64_t> v) {
  Attribute a;
  a.kind = AttrKind::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute Attribute::of_floats(std::vector<float> v) {
  Attribute a;
  a.kind = AttrKind::Floats;
  a.floats = std::move(v);
  return a;
}

namespace {
const Attribute* find_attr(const Node& n, const std::string& key, AttrKind kind) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return nullptr;
  if (it->second.kind != kind)
    throw Error(ErrorKind::InvalidModel, n.describe() + ": attribute '" + key + "' has the wrong type");
  return &it->second;
}
}  // namespace

int64_t Node::attr_int(const std::string& key, int64_t fallback) const {
  const Attribute* a = find_attr(*this, key, AttrKind::Int);
  return a ? a->i : fallback;
}
float Node::attr_float(const std::string& key, float fallback) const {
  const Attribute* a = find_attr(*this, key, AttrKind::Float);
  return a ? a->f : fallback;
}
std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  const Attribute* a = find_attr(*this, key, AttrKind::String);
  return a ? a->s : fallback;
}
std::vector<int64_t> Node::attr_ints(const std::string& key, const std::vector<int64_t>& fallback) const {
  const Attribute* a = find_attr(*this, key, AttrKind::Ints);
  return a ? a->ints : fallback;
}
std::vector<float> Node::attr_floats(const std::string& key, const std::vector<float>& fallback) const {
  const Attribute* a = find_attr(*this, key, AttrKind::Floats);
  return a ? a->floats : fallback;
}

Attribute Attribute::of_graph(Graph body) {
  Attribute a;
  a.kind = AttrKind::Graph;
  a.g = std::make_shared<const Graph>(std::move(body));
  return a;
}

const Graph& Node::body(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end() || it->second.kind != AttrKind::Graph || !it->second.g)
    throw Error(ErrorKind::InvalidModel, describe() + ": it has no body '" + key + "'");
  return *it->second.g;
}

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::Tensor:
      return "tensor";
    case ValueKind::Sequence:
      return "sequence";
    case ValueKind::OptionalTensor:
      return "optional tensor";
    case ValueKind::OptionalSequence:
      return "optional sequence";
  }
  return "?";
}

bool holds_kind(const Tensor& t, ValueKind kind) {
  switch (kind) {
    case ValueKind::Tensor:
      return t.is_dense();
    case ValueKind::Sequence:
      return t.is_sequence();
    case ValueKind::OptionalTensor:
      return t.is_dense() || t.is_none();
    case ValueKind::OptionalSequence:
      return t.is_sequence() || t.is_none();
  }
  return false;
}

std::string describe_value(const Tensor& t) {
  if (t.is_sequence())
    return "a sequence of " + std::to_string(t.items().size()) + " " + dtype_name(t.dtype()) + " tensors";
  if (t.is_none()) return "an empty optional";
  return std::string(dtype_name(t.dtype())) + " " + shape_to_string(t.shape());
}

std::string describe_type(const Value& v) {
  if (v.kind != ValueKind::Tensor) return std::string(value_kind_name(v.kind)) + " of " + dtype_name(v.dtype);
  return std::string(dtype_name(v.dtype)) + " " + (v.shape_known ? shape_to_string(v.shape) : "[dynamic]");
}

std::string Node::describe() const {
  std::string s = "node '" + name + "' (" + (domain.empty() ? "" : domain + ".") + op_type;
  if (opset > 0) s += ", opset " + std::to_string(opset);
  return s + ")";
}

ValueId Graph::find_value(const std::string& value_name) const {
  auto it = value_index_.find(value_name);
  return it == value_index_.end() ? kNoValue : it->second;
}

ValueId Graph::add_value(Value value) {
  if (value.name.empty()) throw Error(ErrorKind::Internal, "values need a name");
  if (value_index_.count(value.name))
    throw Error(ErrorKind::InvalidModel, "value '" + value.name + "' is defined twice");
  ValueId id = static_cast<ValueId>(values.size());
  value_index_[value.name] = id;
  values.push_back(std::move(value));
  return id;
}

NodeId Graph::add_node(Node node) {
  nodes.push_back(std::move(node));
  return static_cast<NodeId>(nodes.size() - 1);
}

void Graph::reindex_values() {
  value_index_.clear();
  for (size_t i = 0; i < values.size(); ++i) value_index_[values[i].name] = static_cast<ValueId>(i);
}

void Graph::rebuild_links() {
  for (Value& v : values) {
    v.producer = kNoNode;
    v.consumers.clear();
    v.is_graph_input = v.is_graph_output = false;
  }
  for (ValueId id : inputs) value(id).is_graph_input = true;
  for (ValueId id : outputs) value(id).is_graph_output = true;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId in : nodes[n].inputs)
      if (in != kNoValue) value(in).consumers.push_back(static_cast<NodeId>(n));
    for (ValueId out : nodes[n].outputs) {
      if (out == kNoValue) continue;
      Value& v = value(out);
      if (v.producer != kNoNode)
        throw Error(ErrorKind::InvalidModel, "value '" + v.name + "' is produced by two nodes ('" +
                                                 nodes[static_cast<size_t>(v.producer)].name + "' and '" +
                                                 nodes[n].name + "')");
      v.producer = static_cast<NodeId>(n);
    }
  }
}

void Graph::sort_and_prune() {
  rebuild_links();
  // Iterative DFS from the outputs: a node is emitted after all its producers.
  enum Mark : uint8_t { kUnseen, kOnStack, kDone };
  std::vector<uint8_t> mark(nodes.size(), kUnseen);
  std::vector<NodeId> order;
  order.reserve(nodes.size());
  struct Frame {
    NodeId node;
    size_t next_input;
  };
  std::vector<Frame> stack;
  for (ValueId out : outputs) {
    NodeId root = value(out).producer;
    if (root == kNoNode || mark[static_cast<size_t>(root)] == kDone) continue;
    stack.push_back({root, 0});
    mark[static_cast<size_t>(root)] = kOnStack;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const Node& n = nodes[static_cast<size_t>(f.node)];
      if (f.next_input < n.inputs.size()) {
        ValueId in = n.inputs[f.next_input++];
        if (in == kNoValue) continue;
        NodeId p = value(in).producer;
        if (p == kNoNode) continue;
        if (mark[static_cast<size_t>(p)] == kOnStack)
          throw Error(ErrorKind::InvalidModel,
                      "the graph has a cycle through " + nodes[static_cast<size_t>(p)].describe());
        if (mark[static_cast<size_t>(p)] == kUnseen) {
          mark[static_cast<size_t>(p)] = kOnStack;
          stack.push_back({p, 0});
        }
      } else {
        mark[static_cast<size_t>(f.node)] = kDone;
        order.push_back(f.node);
        stack.pop_back();
      }
    }
  }
  std::vector<Node> sorted;
  sorted.reserve(order.size());
  for (NodeId id : order) sorted.push_back(std::move(nodes[static_cast<size_t>(id)]));
  nodes = std::move(sorted);

  // Drop values nothing refers to (keeping graph inputs: callers feed them by position).
  std::vector<uint8_t> used(values.size(), 0);
  for (ValueId id : inputs) used[static_cast<size_t>(id)] = 1;
  for (ValueId id : outputs) used[static_cast<size_t>(id)] = 1;
  for (const Node& n : nodes) {
    for (ValueId v : n.inputs)
      if (v != kNoValue) used[static_cast<size_t>(v)] = 1;
    for (ValueId v : n.outputs)
      if (v != kNoValue) used[static_cast<size_t>(v)] = 1;
  }
  std::vector<ValueId> remap(values.size(), kNoValue);
  std::vector<Value> kept;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!used[i]) continue;
    remap[i] = static_cast<ValueId>(kept.size());
    kept.push_back(std::move(values[i]));
  }
  values = std::move(kept);
  auto fix = [&](std::vector<ValueId>& ids) {
    for (ValueId& v : ids)
      if (v != kNoValue) v = remap[static_cast<size_t>(v)];
  };
  fix(inputs);
  fix(outputs);
  for (Node& n : nodes) {
    fix(n.inputs);
    fix(n.outputs);
  }
  reindex_values();
  rebuild_links();
}

void Graph::validate() const {
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (ValueId in : nodes[n].inputs) {
      if (in == kNoValue) continue;
      const Value& v = value(in);
      if (v.producer == kNoNode && !v.constant && !v.is_graph_input)
        throw Error(ErrorKind::InvalidModel,
                    nodes[n].describe() + ": input '" + v.name +
                        "' is not produced by any node, nor an initialiser or graph input");
      if (v.producer != kNoNode && static_cast<size_t>(v.producer) >= n)
        throw Error(ErrorKind::Internal, "nodes are not in topological order at " + nodes[n].describe());
    }
  }
  for (ValueId out : outputs) {
    const Value& v = value(out);
    if (v.producer == kNoNode && !v.constant && !v.is_graph_input)
      throw Error(ErrorKind::InvalidModel, "graph output '" + v.name + "' is not produced by any node");
  }
}

}  // namespace collage
