// The pattern language backends use to say which (fused) sub-graphs they run.
// A pattern describes a dataflow DAG ending at a root node:
//   op("Relu", {op("Add", {op("Conv"), wildcard()})})     Conv + Add(residual) + Relu
// Matching at a node returns every way the pattern fits (matches may overlap).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/index_set.h"

namespace collage {

class Pattern;
using PatternPtr = std::shared_ptr<const Pattern>;
// Predicates see the whole graph, so they can test attributes, shapes and dtypes.
using NodePredicate = std::function<bool(const Graph&, const Node&)>;

class Pattern {
 public:
  enum class Kind { Op, Wildcard, Constant, Alt, Optional, Custom };
  // Custom: every node set a hand-written matcher finds rooted at a node (for
  // structures a tree cannot state, e.g. one value read by several branches).
  using Matcher = std::function<std::vector<IndexSet>(const Graph&, NodeId root)>;

  Kind kind() const { return kind_; }
  // Adds a predicate (all must hold). Returns a new pattern; patterns are immutable.
  PatternPtr where(NodePredicate predicate) const;

  // All node sets matching with `root` as the pattern's root node.
  std::vector<IndexSet> match(const Graph& graph, NodeId root) const;

  // Builders.
  friend PatternPtr op_any(std::vector<std::string> op_types, std::vector<PatternPtr> inputs);
  friend PatternPtr wildcard();
  friend PatternPtr constant();
  friend PatternPtr alt(std::vector<PatternPtr> options);
  friend PatternPtr optional(std::vector<std::string> op_types, PatternPtr input,
                             std::vector<PatternPtr> rest);
  friend PatternPtr custom(Matcher matcher);

 private:
  // Matches of this pattern against value `v` (for Op: v's producer).
  std::vector<IndexSet> match_value(const Graph& graph, ValueId v) const;
  std::vector<IndexSet> match_node(const Graph& graph, NodeId n) const;

  Kind kind_ = Kind::Wildcard;
  std::vector<std::string> op_types_;
  std::vector<PatternPtr> inputs_;  // Op: patterns of the first inputs (rest unconstrained); Alt: options
  std::vector<NodePredicate> predicates_;
  Matcher matcher_;
};

// op_any: matches a node whose op type is one of `op_types` and whose first inputs match
// `inputs` (remaining inputs are unconstrained). Add/Mul/Sum/Max/Min also try
// their two inputs swapped.
PatternPtr op_any(std::vector<std::string> op_types, std::vector<PatternPtr> inputs = {});
inline PatternPtr op(const std::string& op_type, std::vector<PatternPtr> inputs = {}) {
  return op_any({op_type}, std::move(inputs));
}
PatternPtr wildcard();  // any value; its producer is not part of the match
PatternPtr constant();  // a constant value (weights, folded shapes)
PatternPtr alt(std::vector<PatternPtr> options);
// Either op(op_types, {input, rest...}) or just `input`: "an optional activation".
PatternPtr optional(std::vector<std::string> op_types, PatternPtr input, std::vector<PatternPtr> rest = {});
// The node sets `matcher` returns for a root; predicates (where) apply to the root node.
PatternPtr custom(Pattern::Matcher matcher);

// Input `i` of `n` is present and constant / absent or constant (weights, biases, bounds).
bool input_is_constant(const Graph& g, const Node& n, size_t i);
bool input_absent_or_constant(const Graph& g, const Node& n, size_t i);

// Common predicates.
NodePredicate attr_equals(const std::string& key, int64_t value, int64_t fallback);
NodePredicate input_rank(size_t input, std::vector<size_t> ranks);
NodePredicate input_dtype(size_t input, DType dtype);
NodePredicate all_float32();  // every input and output is float32

}  // namespace collage
