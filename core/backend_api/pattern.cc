#include "core/backend_api/pattern.h"

#include <algorithm>

namespace collage {

namespace {
bool commutative(const std::string& op) {
  return op == "Add" || op == "Mul" || op == "Sum" || op == "Max" || op == "Min";
}

// Cartesian product of per-input match lists, unioned with `base`.
std::vector<IndexSet> combine(const IndexSet& base, const std::vector<std::vector<IndexSet>>& per_input) {
  std::vector<IndexSet> acc = {base};
  for (const auto& options : per_input) {
    std::vector<IndexSet> next;
    for (const IndexSet& a : acc)
      for (const IndexSet& o : options) next.push_back(a | o);
    acc = std::move(next);
    if (acc.empty()) break;
  }
  return acc;
}

void dedup(std::vector<IndexSet>& sets) {
  std::vector<IndexSet> unique;
  for (IndexSet& s : sets)
    if (std::find(unique.begin(), unique.end(), s) == unique.end()) unique.push_back(std::move(s));
  sets = std::move(unique);
}
}  // namespace

PatternPtr Pattern::where(NodePredicate predicate) const {
  auto p = std::make_shared<Pattern>(*this);
  p->predicates_.push_back(std::move(predicate));
  return p;
}

std::vector<IndexSet> Pattern::match(const Graph& graph, NodeId root) const {
  if (kind_ == Kind::Op || kind_ == Kind::Custom) return match_node(graph, root);
  // A root must be a node: try each output of the root.
  std::vector<IndexSet> out;
  for (ValueId v : graph.node(root).outputs) {
    if (v == kNoValue) continue;
    for (IndexSet& s : match_value(graph, v))
      if (s.contains(static_cast<size_t>(root))) out.push_back(std::move(s));
  }
  dedup(out);
  return out;
}

std::vector<IndexSet> Pattern::match_node(const Graph& graph, NodeId n) const {
  const Node& node = graph.node(n);
  if (kind_ == Kind::Custom) {
    for (const auto& pred : predicates_)
      if (!pred(graph, node)) return {};
    std::vector<IndexSet> out = matcher_(graph, n);
    dedup(out);
    return out;
  }
  if (std::find(op_types_.begin(), op_types_.end(), node.op_type) == op_types_.end()) return {};
  for (const auto& pred : predicates_)
    if (!pred(graph, node)) return {};
  if (inputs_.size() > node.inputs.size()) return {};
  IndexSet base(graph.nodes.size());
  base.add(static_cast<size_t>(n));
  auto try_order = [&](const std::vector<size_t>& order) {
    std::vector<std::vector<IndexSet>> per_input;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      per_input.push_back(inputs_[i]->match_value(graph, node.inputs[order[i]]));
      if (per_input.back().empty()) return std::vector<IndexSet>{};
    }
    return combine(base, per_input);
  };
  std::vector<size_t> order(inputs_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<IndexSet> out = try_order(order);
  if (commutative(node.op_type) && inputs_.size() == 2 && node.inputs.size() == 2) {
    auto swapped = try_order({1, 0});
    out.insert(out.end(), swapped.begin(), swapped.end());
  }
  dedup(out);
  return out;
}

std::vector<IndexSet> Pattern::match_value(const Graph& graph, ValueId v) const {
  IndexSet empty(graph.nodes.size());
  if (v == kNoValue) return kind_ == Kind::Wildcard ? std::vector<IndexSet>{empty} : std::vector<IndexSet>{};
  const Value& value = graph.value(v);
  switch (kind_) {
    case Kind::Wildcard:
      return {empty};
    case Kind::Constant:
      return value.constant ? std::vector<IndexSet>{empty} : std::vector<IndexSet>{};
    case Kind::Op:
    case Kind::Custom:
      return value.producer == kNoNode ? std::vector<IndexSet>{} : match_node(graph, value.producer);
    case Kind::Alt:
    case Kind::Optional: {
      std::vector<IndexSet> out;
      for (const PatternPtr& option : inputs_) {
        auto m = option->match_value(graph, v);
        out.insert(out.end(), m.begin(), m.end());
      }
      dedup(out);
      return out;
    }
  }
  return {};
}

PatternPtr op_any(std::vector<std::string> op_types, std::vector<PatternPtr> inputs) {
  auto p = std::make_shared<Pattern>();
  p->kind_ = Pattern::Kind::Op;
  p->op_types_ = std::move(op_types);
  p->inputs_ = std::move(inputs);
  return p;
}

PatternPtr wildcard() { return std::make_shared<Pattern>(); }

PatternPtr constant() {
  auto p = std::make_shared<Pattern>();
  p->kind_ = Pattern::Kind::Constant;
  return p;
}

PatternPtr alt(std::vector<PatternPtr> options) {
  auto p = std::make_shared<Pattern>();
  p->kind_ = Pattern::Kind::Alt;
  p->inputs_ = std::move(options);
  return p;
}

PatternPtr optional(std::vector<std::string> op_types, PatternPtr input, std::vector<PatternPtr> rest) {
  std::vector<PatternPtr> inputs = {input};
  inputs.insert(inputs.end(), rest.begin(), rest.end());
  auto p = std::make_shared<Pattern>();
  p->kind_ = Pattern::Kind::Optional;
  p->inputs_ = {op_any(std::move(op_types), std::move(inputs)), input};
  return p;
}

PatternPtr custom(Pattern::Matcher matcher) {
  auto p = std::make_shared<Pattern>();
  p->kind_ = Pattern::Kind::Custom;
  p->matcher_ = std::move(matcher);
  return p;
}

bool input_is_constant(const Graph& g, const Node& n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] != kNoValue && g.value(n.inputs[i]).constant.has_value();
}

bool input_absent_or_constant(const Graph& g, const Node& n, size_t i) {
  return i >= n.inputs.size() || n.inputs[i] == kNoValue || input_is_constant(g, n, i);
}

NodePredicate attr_equals(const std::string& key, int64_t value, int64_t fallback) {
  return [=](const Graph&, const Node& n) { return n.attr_int(key, fallback) == value; };
}

NodePredicate input_rank(size_t input, std::vector<size_t> ranks) {
  return [=](const Graph& g, const Node& n) {
    if (input >= n.inputs.size() || n.inputs[input] == kNoValue) return false;
    size_t r = g.value(n.inputs[input]).shape.size();
    return std::find(ranks.begin(), ranks.end(), r) != ranks.end();
  };
}

NodePredicate input_dtype(size_t input, DType dtype) {
  return [=](const Graph& g, const Node& n) {
    return input < n.inputs.size() && n.inputs[input] != kNoValue && g.value(n.inputs[input]).dtype == dtype;
  };
}

NodePredicate all_float32() {
  return [](const Graph& g, const Node& n) {
    for (ValueId v : n.inputs)
      if (v != kNoValue && g.value(v).dtype != DType::Float32) return false;
    for (ValueId v : n.outputs)
      if (v != kNoValue && g.value(v).dtype != DType::Float32) return false;
    return true;
  };
}

}  // namespace collage
