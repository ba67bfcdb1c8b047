#include "core/backend_api/pattern.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/backend_api/pattern_rule.h"
#include "core/tuning/candidates.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

NodeId producer_of(const Graph& g, const std::string& value) { return g.value(g.find_value(value)).producer; }

IndexSet set_of(const Graph& g, std::vector<std::string> outputs) {
  IndexSet s(g.nodes.size());
  for (const auto& o : outputs) s.add(static_cast<size_t>(producer_of(g, o)));
  return s;
}

bool contains_set(const std::vector<IndexSet>& sets, const IndexSet& s) {
  return std::find(sets.begin(), sets.end(), s) != sets.end();
}

// x -> conv -> add(+skip) -> relu; skip = x passed through Neg.
Graph residual_block() {
  OnnxTestModel m(17);
  m.input("x", {1, 2, 4, 4});
  m.initializer("w", Tensor(DType::Float32, {2, 2, 3, 3}));
  auto& conv = m.node("Conv", {"x", "w"}, {"c"});
  OnnxTestModel::attr_ints(conv, "pads", {1, 1, 1, 1});
  m.node("Neg", {"x"}, {"skip"});
  m.node("Add", {"skip", "c"}, {"a"});  // residual listed first: matching must try both orders
  m.node("Relu", {"a"}, {"y"});
  m.output("y");
  return import_model(m);
}

TEST(PatternMatch, ResidualConvAddReluInEitherOperandOrder) {
  Graph g = residual_block();
  PatternPtr p = op("Relu", {op("Add", {op("Conv"), wildcard()})});
  auto matches = p->match(g, producer_of(g, "y"));
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0], set_of(g, {"c", "a", "y"}));
  EXPECT_TRUE(p->match(g, producer_of(g, "a")).empty());  // root must be the Relu
}

TEST(PatternMatch, OptionalAlternativesAndPredicates) {
  Graph g = residual_block();
  PatternPtr conv_act = optional({"Relu"}, op("Conv"));
  EXPECT_EQ(conv_act->match(g, producer_of(g, "c")).size(), 1u);  // just the conv
  PatternPtr any_act = op_any({"Relu", "Sigmoid"}, {alt({op("Add"), op("Conv")})});
  EXPECT_EQ(any_act->match(g, producer_of(g, "y")).size(), 1u);
  PatternPtr grouped = op("Conv")->where(attr_equals("group", 2, 1));
  EXPECT_TRUE(grouped->match(g, producer_of(g, "c")).empty());
  PatternPtr conv_const = op("Conv", {wildcard(), constant()});
  EXPECT_EQ(conv_const->match(g, producer_of(g, "c")).size(), 1u);
  PatternPtr conv_runtime_weight = op("Conv", {wildcard(), op("Neg")});
  EXPECT_TRUE(conv_runtime_weight->match(g, producer_of(g, "c")).empty());
}

TEST(PatternMatch, OverlappingMatchesAreAllReturned) {
  OnnxTestModel m(17);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"a"});
  m.node("Relu", {"a"}, {"b"});
  m.node("Relu", {"b"}, {"c"});
  m.output("c");
  Graph g = import_model(m);
  PatternPtr two = op("Relu", {op("Relu")});
  std::vector<IndexSet> all;
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    for (auto& s : two->match(g, n)) all.push_back(s);
  ASSERT_EQ(all.size(), 2u);  // {a,b} and {b,c} share b
  EXPECT_TRUE(all[0].intersects(all[1]));
}

// TVM-style rule over every op.
TvmStyleRule everything() {
  return TvmStyleRule([](const Graph&, const Node&) { return true; });
}

TEST(PatternRuleGen, ChainGrowsAlongPostDominators) {
  OnnxTestModel m(17);
  m.input("x", {1, 2, 4, 4});
  m.initializer("w", Tensor(DType::Float32, {2, 2, 1, 1}));
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("Relu", {"c"}, {"r"});
  m.node("Sigmoid", {"r"}, {"s"});
  m.output("s");
  Graph g = import_model(m);
  auto groups = generate_groups(g, everything(), GroupLimits{});
  EXPECT_TRUE(contains_set(groups, set_of(g, {"c"})));
  EXPECT_TRUE(contains_set(groups, set_of(g, {"c", "r"})));
  EXPECT_TRUE(contains_set(groups, set_of(g, {"c", "r", "s"})));
  EXPECT_TRUE(contains_set(groups, set_of(g, {"r", "s"})));
  GroupLimits two;
  two.max_nodes = 2;
  EXPECT_FALSE(contains_set(generate_groups(g, everything(), two), set_of(g, {"c", "r", "s"})));
}

TEST(PatternRuleGen, DiamondFusesWholeRegionToTheJoin) {
  OnnxTestModel m(17);
  m.input("x", {8});
  m.node("Relu", {"x"}, {"a"});
  m.node("Neg", {"a"}, {"b"});
  m.node("Exp", {"a"}, {"c"});
  m.node("Add", {"b", "c"}, {"d"});
  m.output("d");
  Graph g = import_model(m);
  auto groups = generate_groups(g, everything(), GroupLimits{});
  // Growing from a jumps to its post-dominator d, taking both branches.
  EXPECT_TRUE(contains_set(groups, set_of(g, {"a", "b", "c", "d"})));
  EXPECT_FALSE(contains_set(groups, set_of(g, {"a", "b"})));  // b is not a's post-dominator
}

TEST(PatternRuleGen, ResidualBlockAndOpaqueStops) {
  Graph g = residual_block();
  auto groups = generate_groups(g, everything(), GroupLimits{});
  EXPECT_TRUE(contains_set(groups, set_of(g, {"c", "a", "y"})));  // conv + add + relu
  // A rule that refuses Add stops growth at the conv.
  TvmStyleRule no_add([](const Graph&, const Node& n) { return n.op_type != "Add"; });
  auto limited = generate_groups(g, no_add, GroupLimits{});
  EXPECT_TRUE(contains_set(limited, set_of(g, {"c"})));
  for (const IndexSet& s : limited) EXPECT_FALSE(s.contains(static_cast<size_t>(producer_of(g, "a"))));
}

TEST(PatternRuleGen, MultiOutputNodeExitsAreBounded) {
  OnnxTestModel m(17);
  m.input("x", {6});
  m.initializer("split", Tensor::from_vector<int64_t>({2}, {3, 3}));
  m.node("Relu", {"x"}, {"r"});
  m.node("Split", {"r", "split"}, {"p", "q"});
  m.node("Neg", {"p"}, {"np"});
  m.node("Exp", {"q"}, {"eq"});
  m.output("np");
  m.output("eq");
  Graph g = import_model(m);
  BackendSpec spec;
  spec.name = "test";
  spec.rules.push_back(std::make_shared<TvmStyleRule>(everything()));
  auto candidates = enumerate_candidates(g, {&spec});
  for (const Candidate& c : candidates) EXPECT_LE(make_subgraph(g, c.nodes).exits.size(), 1u) << c.label;
  // {Split, Neg} has two exits (q leaves, np is an output): excluded with max_exits = 1.
  bool has_split_neg = std::any_of(candidates.begin(), candidates.end(), [&](const Candidate& c) {
    return c.nodes == set_of(g, {"p", "np"});
  });
  EXPECT_FALSE(has_split_neg);
}

TEST(SubGraphValidity, GroupThatWouldCreateACycleIsRejected) {
  // a -> b -> c and a -> c: {a, c} without b leaves the set and re-enters it.
  OnnxTestModel m(17);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"a"});
  m.node("Exp", {"a"}, {"b"});
  m.node("Add", {"a", "b"}, {"c"});
  m.output("c");
  Graph g = import_model(m);
  ConvexityChecker convex(g);
  EXPECT_FALSE(convex.is_convex(set_of(g, {"a", "c"})));
  EXPECT_TRUE(convex.is_convex(set_of(g, {"a", "b", "c"})));
  EXPECT_TRUE(convex.is_convex(set_of(g, {"a", "b"})));
  BackendSpec spec;
  spec.name = "test";
  spec.patterns.push_back(op("Add", {op("Relu"), wildcard()}));  // matches {a, c}
  auto candidates = enumerate_candidates(g, {&spec});
  for (const Candidate& c : candidates) EXPECT_NE(c.nodes, set_of(g, {"a", "c"}));
  SubGraph sub = make_subgraph(g, set_of(g, {"a", "b"}));
  EXPECT_EQ(sub.outputs.size(), 2u);  // a and b both feed c
  EXPECT_EQ(sub.exits.size(), 2u);
}

}  // namespace
}  // namespace collage
