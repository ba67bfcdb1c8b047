// PlacementExplainer on a 4-node chain with hand-made candidates on backends A and B:
// each reason class, the runner-up and what-ifs against search_placement run here
// with the same pins, the near-tie rule, and an impossible alternative.
#include "core/search/explain.h"

#include <gtest/gtest.h>

#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

constexpr double kEpsilon = 0.01;

Graph chain4() {
  OnnxTestModel m(17);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"a"});
  m.node("Sigmoid", {"a"}, {"b"});
  m.node("Relu", {"b"}, {"c"});
  m.node("Sigmoid", {"c"}, {"d"});
  m.output("d");
  return import_model(m);
}

Cost cost(double median, double stddev) {
  Cost c = Cost::of_ms(median);
  c.stddev_ms = stddev;
  c.samples = 10;
  return c;
}

struct Fixture {
  Graph graph = chain4();
  std::vector<Candidate> candidates;
  std::vector<Cost> costs;

  Fixture() {
    const size_t n = static_cast<size_t>(graph.num_nodes());
    auto add = [&](std::vector<size_t> nodes, const char* backend, const char* label, Cost c) {
      candidates.push_back({IndexSet(n, nodes), backend, label});
      costs.push_back(c);
    };
    add({0}, "A", "Relu", cost(1.0, 0.01));
    add({1}, "A", "Sigmoid", cost(1.0, 0.01));
    add({2}, "A", "Relu", cost(1.0, 0.01));
    add({3}, "A", "Sigmoid", cost(1.0, 0.01));
    add({0}, "B", "Relu", cost(0.5, 0.01));
    add({1}, "B", "Sigmoid", cost(2.0, 0.01));
    add({2}, "B", "Relu", Cost::invalid("disagrees with the reference"));
    add({3}, "B", "Sigmoid", Cost::invalid("build failed"));
    add({1, 2}, "B", "Sigmoid+Relu", cost(1.2, 0.01));
  }

  SearchResult search(const Pins& pins) const {
    SearchOptions o;
    o.epsilon_ms = kEpsilon;
    return search_placement(graph, candidates, costs, pins, o);
  }

  Placement placement(const Pins& pins) const {
    Placement p;
    p.epsilon_ms = kEpsilon;
    p.pins = pins;
    SearchResult r = search(pins);
    p.predicted_ms = r.predicted_ms;
    for (size_t k : r.kernels) p.kernels.push_back({candidates[k].group(), Cost::of_ms(costs[k].median_ms)});
    return p;
  }
};

TEST(Explain, ReasonClassesOfASearchedPlacement) {
  Fixture f;
  Placement p = f.placement({});
  PlacementExplainer ex(f.graph, f.candidates, f.costs, p, p.pins, kEpsilon);
  EXPECT_NEAR(ex.current_ms(), p.predicted_ms, 1e-9);  // re-costed alike: same costs, same ε

  NodeExplanation e0 = ex.explain(0);
  EXPECT_EQ(e0.chosen.backend, "B");
  EXPECT_EQ(e0.reason, PlacementReason::SingleOpCheapest);
  ASSERT_EQ(e0.candidates.size(), 2u);
  EXPECT_EQ(std::count_if(e0.candidates.begin(), e0.candidates.end(), [](auto& c) { return c.chosen; }), 1);

  for (NodeId fused : {1, 2}) {
    NodeExplanation e = ex.explain(fused);
    EXPECT_EQ(e.reason, PlacementReason::FusedGroupWins) << reason_key(e.reason);
    EXPECT_EQ(e.chosen.nodes, (std::vector<NodeId>{1, 2}));
    EXPECT_TRUE(e.chosen_is_candidate);
  }
  NodeExplanation e3 = ex.explain(3);
  EXPECT_EQ(e3.reason, PlacementReason::OnlyBackend);
  EXPECT_NE(e3.reason_text.find("only A"), std::string::npos) << e3.reason_text;
  EXPECT_THROW(ex.explain(4), Error);
  EXPECT_THROW(ex.explain(-1), Error);
}

TEST(Explain, RunnerUpIsTheSearchWithTheBackendForbidden) {
  Fixture f;
  Placement p = f.placement({});
  PlacementExplainer ex(f.graph, f.candidates, f.costs, p, p.pins, kEpsilon);
  for (NodeId node : {0, 1, 2}) {
    NodeExplanation e = ex.explain(node);
    Pins forbid;
    forbid.forbidden[node].insert(e.chosen.backend);
    SearchResult want = f.search(forbid);
    ASSERT_TRUE(e.runner_up.feasible) << node;
    EXPECT_DOUBLE_EQ(e.runner_up.predicted_ms, want.predicted_ms);
    EXPECT_EQ(e.runner_up.kernels, want.kernels);
    EXPECT_NEAR(e.runner_up.delta_ms, want.predicted_ms - p.predicted_ms, 1e-9);  // summation order
    EXPECT_GE(e.runner_up.delta_ms, 0);                                           // the placement is optimal
    EXPECT_NE(e.runner_up.backend, e.chosen.backend);
  }
  // Node 3 has no other valid backend: no alternative, and the search's reason.
  NodeExplanation e3 = ex.explain(3);
  EXPECT_FALSE(e3.runner_up.feasible);
  EXPECT_NE(e3.runner_up.infeasible_reason.find("cannot place"), std::string::npos)
      << e3.runner_up.infeasible_reason;
}

TEST(Explain, NearTieWhenTheDeltaIsWithinTheSpread) {
  Fixture f;
  Placement p = f.placement({});
  // Node 0: A or B alone, the rest unchanged; the differing kernels are exactly these two.
  const double delta = f.costs[0].median_ms - f.costs[4].median_ms;
  for (double stddev : {delta / 4, delta}) {
    std::vector<Cost> costs = f.costs;
    costs[0].stddev_ms = stddev;
    costs[4].stddev_ms = stddev;
    PlacementExplainer ex(f.graph, f.candidates, costs, p, p.pins, kEpsilon);
    Alternative r = ex.explain(0).runner_up;
    ASSERT_TRUE(r.feasible);
    EXPECT_DOUBLE_EQ(r.spread_ms, costs[0].stddev_ms + costs[4].stddev_ms);
    EXPECT_EQ(r.near_tie, std::abs(r.delta_ms) <= r.spread_ms);
    EXPECT_EQ(r.near_tie, stddev == delta) << stddev;
  }
}

TEST(Explain, PinnedAndWhatIfsMatchReSearches) {
  Fixture f;
  Pins pins;
  pins.pinned[0] = "A";
  Placement p = f.placement(pins);
  PlacementExplainer ex(f.graph, f.candidates, f.costs, p, pins, kEpsilon);
  NodeExplanation e0 = ex.explain(0);
  EXPECT_EQ(e0.chosen.backend, "A");
  EXPECT_EQ(e0.reason, PlacementReason::Pinned);
  // Forbids that leave one backend count as pinned too.
  Pins forbids;
  forbids.forbidden[0].insert("B");
  Placement pf = f.placement(forbids);
  EXPECT_EQ(PlacementExplainer(f.graph, f.candidates, f.costs, pf, forbids, kEpsilon).explain(0).reason,
            PlacementReason::Pinned);
  // Pins set since the placement was made, which it does not follow, are not its reason.
  Pins later;
  later.pinned[0] = "B";
  EXPECT_EQ(PlacementExplainer(f.graph, f.candidates, f.costs, p, later, kEpsilon).explain(0).reason,
            PlacementReason::SingleOpCheapest);

  std::vector<WhatIf> whatifs = ex.what_ifs(1);
  ASSERT_EQ(whatifs.size(), 2u);
  for (const WhatIf& w : whatifs) {
    Pins run_on = pins;
    run_on.pinned[1] = w.backend;
    Pins forbid = pins;
    forbid.forbidden[1].insert(w.backend);
    ASSERT_TRUE(w.run_on.feasible && w.forbid.feasible) << w.backend;
    EXPECT_EQ(w.current, w.backend == ex.explain(1).chosen.backend);
    if (w.current) {  // running it where it runs changes nothing
      EXPECT_EQ(w.run_on.delta_ms, 0.0);
      EXPECT_NEAR(w.run_on.predicted_ms, f.search(run_on).predicted_ms, 1e-9);
    } else {
      EXPECT_DOUBLE_EQ(w.run_on.predicted_ms, f.search(run_on).predicted_ms) << w.backend;
    }
    EXPECT_DOUBLE_EQ(w.forbid.predicted_ms, f.search(forbid).predicted_ms) << w.backend;
    EXPECT_NEAR(w.run_on.delta_ms, w.run_on.predicted_ms - p.predicted_ms, 1e-9);
    EXPECT_EQ(w.run_on.backend, w.backend);
  }
  // Node 3: "Run on B" is impossible (B's kernel failed): the search says why.
  std::vector<WhatIf> w3 = ex.what_ifs(3);
  auto on_b = std::find_if(w3.begin(), w3.end(), [](const WhatIf& w) { return w.backend == "B"; });
  ASSERT_NE(on_b, w3.end());
  EXPECT_FALSE(on_b->run_on.feasible);
  EXPECT_NE(on_b->run_on.infeasible_reason.find("pinned to 'B'"), std::string::npos)
      << on_b->run_on.infeasible_reason;
}

TEST(Explain, APlacementFromOtherCostsSaysItIsNotTheCheapest) {
  Fixture f;
  Placement p = f.placement({});
  std::vector<Cost> cheaper = f.costs;
  cheaper[0] = cost(0.1, 0.01);  // A's Relu now beats the placed B one
  PlacementExplainer ex(f.graph, f.candidates, cheaper, p, {}, kEpsilon);
  NodeExplanation e = ex.explain(0);
  EXPECT_EQ(e.reason, PlacementReason::SingleOpCheapest);
  SearchOptions o;
  o.epsilon_ms = kEpsilon;
  const double best = search_placement(f.graph, f.candidates, cheaper, {}, o).predicted_ms;
  EXPECT_LT(best, ex.current_ms());
  EXPECT_NE(e.reason_text.find("slower than the best one"), std::string::npos) << e.reason_text;
  EXPECT_NEAR(e.runner_up.delta_ms, best - ex.current_ms(), 1e-9);  // forbidding B on it finds the best
  EXPECT_LT(e.runner_up.delta_ms, 0);
  // Under the costs it was searched with, no such note.
  EXPECT_EQ(PlacementExplainer(f.graph, f.candidates, f.costs, p, {}, kEpsilon)
                .explain(0)
                .reason_text.find("slower"),
            std::string::npos);
}

TEST(Explain, RegionsAndForeignKernels) {
  Fixture f;
  Placement p = f.placement({});
  // A refined placement: nodes 2..3 in one region on graph-level G (not a candidate).
  Placement refined = p;
  refined.kernels.clear();
  for (const PlacedKernel& k : p.kernels)
    if (k.nodes.front() == 0) refined.kernels.push_back(k);
  refined.kernels.push_back({{{1}, "A", "Sigmoid"}, Cost::of_ms(f.costs[1].median_ms)});
  refined.kernels.push_back({{{2, 3}, "G", "Relu+Sigmoid"}, Cost::of_ms(0.7)});
  PlacementExplainer ex(f.graph, f.candidates, f.costs, refined, {}, kEpsilon, {"G"});
  NodeExplanation e = ex.explain(3);
  EXPECT_EQ(e.reason, PlacementReason::RefinedIntoRegion);
  EXPECT_FALSE(e.chosen_is_candidate);
  EXPECT_DOUBLE_EQ(e.chosen_ms, 0.7);
  double want = 0;
  for (const PlacedKernel& k : refined.kernels) want += k.cost.median_ms + kEpsilon;
  EXPECT_DOUBLE_EQ(ex.current_ms(), want);  // the region at its cost_ms, the rest at their costs
  // A region with no cost cannot be re-costed: the placement is refused, not summed as if it took 0 ms.
  Placement uncosted = refined;
  uncosted.kernels.back().cost = PlacedKernel::no_placed_cost();
  try {
    PlacementExplainer(f.graph, f.candidates, f.costs, uncosted, {}, kEpsilon, {"G"});
    ADD_FAILURE() << "a kernel without any cost was explained";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("'Relu+Sigmoid' has no cost"), std::string::npos) << e.what();
  }
  // The same region on an op-level backend, or a candidate whose cost is invalid: not from these costs.
  refined.kernels.back().backend = "A";
  const NodeExplanation uncompared =
      PlacementExplainer(f.graph, f.candidates, f.costs, refined, {}, kEpsilon, {"G"}).explain(3);
  EXPECT_EQ(uncompared.reason, PlacementReason::NotFromTheseCosts);
  // Nothing to weigh a runner-up against: said so, not a near tie at +0 ms.
  EXPECT_FALSE(uncompared.runner_up.feasible);
  EXPECT_NE(uncompared.runner_up.infeasible_reason.find("no cost here"), std::string::npos)
      << uncompared.runner_up.infeasible_reason;
  refined.kernels.pop_back();
  refined.kernels.push_back({{{2}, "B", "Relu"}, Cost::of_ms(0.1)});
  refined.kernels.push_back({{{3}, "A", "Sigmoid"}, Cost::of_ms(1.0)});
  EXPECT_EQ(PlacementExplainer(f.graph, f.candidates, f.costs, refined, {}, kEpsilon).explain(2).reason,
            PlacementReason::NotFromTheseCosts);
  // A placement that misses a node is refused.
  refined.kernels.pop_back();
  EXPECT_THROW(PlacementExplainer(f.graph, f.candidates, f.costs, refined, {}, kEpsilon), Error);
}

// A refined placement (a region measured end to end) is no sum of candidate costs: its deltas
// compare the op-level search with and without the change, and running a node on the backend
// it is on is no change at all (it was "faster" than itself when compared with the region's sum).
TEST(Explain, RefinedPlacementDeltasCompareTheSearchWithAndWithoutTheChange) {
  Fixture f;
  Placement refined;
  refined.epsilon_ms = kEpsilon;
  refined.kernels.push_back(
      {f.candidates[0].group(), Cost::of_ms(f.costs[0].median_ms)});  // node 0 on A (search: B)
  refined.kernels.push_back(
      {{{1, 2, 3}, "G", "Sigmoid+Relu+Sigmoid"}, Cost::of_ms(5.0)});  // slower than any search
  PlacementExplainer ex(f.graph, f.candidates, f.costs, refined, {}, kEpsilon, {"G"});
  const double searched = f.search({}).predicted_ms;
  EXPECT_EQ(ex.baseline(), DeltaBaseline::OpLevelSearch);
  EXPECT_NEAR(ex.baseline_ms(), searched, 1e-9);
  EXPECT_GT(ex.current_ms(), searched);  // the refined sum, which no delta is taken against
  std::vector<WhatIf> whatifs = ex.what_ifs(0);
  ASSERT_EQ(whatifs.size(), 2u);
  for (const WhatIf& w : whatifs) {
    EXPECT_EQ(w.current, w.backend == "A");
    Pins run_on;
    run_on.pinned[0] = w.backend;
    const double with_change = f.search(run_on).predicted_ms;
    if (w.current)
      EXPECT_EQ(w.run_on.delta_ms, 0.0);
    else
      EXPECT_NEAR(w.run_on.delta_ms, with_change - searched, 1e-9) << w.backend;
    EXPECT_GE(w.run_on.delta_ms, -1e-9) << w.backend << ": nothing beats the search it is compared with";
  }
  Pins no_a;
  no_a.forbidden[0].insert("A");
  EXPECT_NEAR(ex.explain(0).runner_up.delta_ms, f.search(no_a).predicted_ms - searched, 1e-9);
  // An op-level placement keeps itself, re-costed, as the baseline.
  Placement p = f.placement({});
  PlacementExplainer op_level(f.graph, f.candidates, f.costs, p, {}, kEpsilon);
  EXPECT_EQ(op_level.baseline(), DeltaBaseline::ThisPlacement);
  EXPECT_DOUBLE_EQ(op_level.baseline_ms(), op_level.current_ms());
}

}  // namespace
}  // namespace collage
