// The graph IR: nodes (ONNX ops in one normalised form per op), values
// (name, dtype, static shape, optional constant data) and their links.
// After import, node ids are post-DFS indices: every producer precedes its
// consumers, so iterating nodes in id order is a valid execution order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/tensor.h"

namespace collage {

using NodeId = int32_t;
using ValueId = int32_t;
constexpr ValueId kNoValue = -1;  // an omitted optional input
constexpr NodeId kNoNode = -1;

class Graph;

// Graph: a body of a control-flow node (If's branches, Loop's and Scan's body).
enum class AttrKind { Int, Float, String, Ints, Floats, Strings, Tensor, Graph };

struct Attribute {
  AttrKind kind = AttrKind::Int;
  int64_t i = 0;
  float f = 0.0f;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  Tensor t;
  std::shared_ptr<const Graph> g;  // AttrKind::Graph; shared: copies of the node share the body

  static Attribute of_int(int64_t v);
  static Attribute of_float(float v);
  static Attribute of_string(std::string v);
  static Attribute of_ints(std::vector<int64_t> v);
  static Attribute of_floats(std::vector<float> v);
  static Attribute of_graph(Graph body);
};

// What a value holds: a tensor, or one of ONNX's sequence/optional types. A value of any
// kind but Tensor has dtype = its element type and shape_known = false (its tensors' shapes
// are decided as the model runs), so only backends that take dynamic shapes (native) run it.
enum class ValueKind : uint8_t { Tensor, Sequence, OptionalTensor, OptionalSequence };
const char* value_kind_name(ValueKind kind);  // "tensor", "sequence", "optional tensor", ...
// Whether a runtime value (a Tensor in any form, see tensor.h) is of `kind`.
bool holds_kind(const Tensor& t, ValueKind kind);
// For messages: "float32 [1,3]", "a sequence of 2 float32 tensors", "an empty optional".
std::string describe_value(const Tensor& t);

struct Value {
  std::string name;
  ValueKind kind = ValueKind::Tensor;
  DType dtype = DType::Undefined;
  Shape shape;
  bool shape_known = false;
  std::optional<Tensor> constant;  // initialisers and folded values
  NodeId producer = kNoNode;
  std::vector<NodeId> consumers;  // one entry per consuming input slot
  bool is_graph_input = false;
  bool is_graph_output = false;
};
// For messages: "float32 [1,3]", "float32 [dynamic]", "sequence of float32".
std::string describe_type(const Value& v);

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;           // "" for the default ONNX domain
  int opset = 0;                // opset version the model imported for this domain
  std::vector<ValueId> inputs;  // kNoValue for omitted optional inputs
  std::vector<ValueId> outputs;
  std::map<std::string, Attribute> attrs;
  // A control-flow node's bodies read outer values by name (ONNX's outer scope). Those values
  // are the node's last `captured` inputs, so the graph's dataflow, order and buffer lifetimes
  // see them; every body's inputs end with the same values, in the same order, by name.
  int captured = 0;

  bool has_attr(const std::string& key) const { return attrs.count(key) != 0; }
  int64_t attr_int(const std::string& key, int64_t fallback) const;
  float attr_float(const std::string& key, float fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& key, const std::vector<int64_t>& fallback = {}) const;
  std::vector<float> attr_floats(const std::string& key, const std::vector<float>& fallback = {}) const;
  bool has_bodies() const {
    return std::any_of(attrs.begin(), attrs.end(),
                       [](const auto& a) { return a.second.kind == AttrKind::Graph; });
  }
  const Graph& body(const std::string& key) const;  // InvalidModel if the node has no such body
  // "node 'conv1' (Conv, opset 11)": the prefix of every error about a node.
  std::string describe() const;
};

class Graph {
 public:
  std::string name;
  std::vector<Node> nodes;
  std::vector<Value> values;
  std::vector<ValueId> inputs;  // runtime inputs (initialisers excluded)
  std::vector<ValueId> outputs;
  std::map<std::string, int> opsets;  // domain -> version

  ValueId find_value(const std::string& value_name) const;  // kNoValue if absent
  ValueId add_value(Value value);
  NodeId add_node(Node node);
  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  const Node& node(NodeId id) const { return nodes.at(static_cast<size_t>(id)); }
  int32_t num_nodes() const { return static_cast<int32_t>(nodes.size()); }

  // Recomputes producer/consumer links and graph input/output flags.
  void rebuild_links();
  // Reorders nodes into post-DFS order (the order TVM/Collage index by), drops
  // nodes that no output depends on and values nothing refers to.
  // Throws InvalidModel on a cycle.
  void sort_and_prune();
  // Checks links, order and that every used value is produced, constant or an input.
  void validate() const;

 private:
  std::map<std::string, ValueId> value_index_;
  void reindex_values();
};

}  // namespace collage
