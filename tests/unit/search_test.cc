#include "core/search/search.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

// A random DAG of element-wise nodes: node i reads 1-2 earlier values.
Graph random_dag(int nodes, std::mt19937& rng) {
  OnnxTestModel m(17);
  m.input("x", {4});
  std::vector<std::string> values = {"x"};
  for (int i = 0; i < nodes; ++i) {
    std::string out = "v" + std::to_string(i);
    std::string a = values[rng() % values.size()];
    if (rng() % 2) {
      m.node("Relu", {a}, {out});
    } else {
      std::string b = values[rng() % values.size()];
      m.node("Add", {a, b}, {out});
    }
    values.push_back(out);
  }
  // Every node must reach an output: make the sinks outputs.
  Graph probe = [&] {
    for (size_t i = 1; i < values.size(); ++i) m.output(values[i]);
    return import_model(m);
  }();
  return probe;
}

// All convex groups of up to 3 nodes, on two backends with random costs.
void random_candidates(const Graph& g, std::mt19937& rng, std::vector<Candidate>& cands,
                       std::vector<Cost>& cost) {
  ConvexityChecker convex(g);
  size_t n = static_cast<size_t>(g.num_nodes());
  std::uniform_real_distribution<double> u(0.1, 2.0);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a; b < n; ++b)
      for (size_t c = b; c < n; ++c) {
        IndexSet s(n, {a, b, c});
        if (!convex.is_convex(s)) continue;
        if (std::find_if(cands.begin(), cands.end(), [&](const Candidate& x) { return x.nodes == s; }) !=
            cands.end())
          continue;
        for (const char* backend : {"A", "B"}) {
          if (s.popcount() > 1 && rng() % 3 == 0) continue;
          cands.push_back({s, backend, "g"});
          double ms = u(rng) * static_cast<double>(s.popcount());
          cost.push_back(rng() % 5 == 0 ? Cost::invalid("failed") : Cost::of_ms(ms));
        }
      }
  // Keep one always-valid singleton per node so a placement exists.
  for (size_t a = 0; a < n; ++a) {
    cands.push_back({IndexSet(n, {a}), "native", "single"});
    cost.push_back(Cost::of_ms(3.0));
  }
}

// Exhaustive: every exact cover by valid candidates whose kernel graph is acyclic.
double brute_force(const Graph& g, const std::vector<Candidate>& cands, const std::vector<Cost>& cost,
                   double eps, const Pins& pins) {
  size_t n = static_cast<size_t>(g.num_nodes());
  double best = std::numeric_limits<double>::infinity();
  std::vector<IndexSet> chosen;
  std::function<void(IndexSet, double)> rec = [&](IndexSet covered, double total) {
    if (total >= best) return;
    size_t first = covered.first_outside();
    if (first == n) {
      try {
        execution_order(g, chosen);
        best = total;
      } catch (const Error&) {
      }
      return;
    }
    for (size_t i = 0; i < cands.size(); ++i) {
      if (!cost[i].valid() || !cands[i].nodes.contains(first) || cands[i].nodes.intersects(covered)) continue;
      bool ok = true;
      for (size_t node : cands[i].nodes.indices())
        ok &= pins.allows(static_cast<NodeId>(node), cands[i].backend);
      if (!ok) continue;
      chosen.push_back(cands[i].nodes);
      rec(covered | cands[i].nodes, total + cost[i].median_ms + eps);
      chosen.pop_back();
    }
  };
  rec(IndexSet(n), 0);
  return best;
}

TEST(OpLevelSearch, MatchesExhaustiveSearchOnRandomGraphs) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 25; ++trial) {
    Graph g = random_dag(4 + trial % 5, rng);
    std::vector<Candidate> cands;
    std::vector<Cost> cost;
    random_candidates(g, rng, cands, cost);
    SearchOptions options;
    options.epsilon_ms = 0.05;
    Pins pins;
    if (trial % 3 == 0) pins.forbidden[0] = {"native"};
    SearchResult r = search_placement(g, cands, cost, pins, options);
    double expect = brute_force(g, cands, cost, options.epsilon_ms, pins);
    EXPECT_NEAR(r.predicted_ms, expect, 1e-9) << "trial " << trial;
    // The kernels are an exact cover, allowed, valid and in execution order.
    IndexSet covered(static_cast<size_t>(g.num_nodes()));
    double total = 0;
    std::vector<IndexSet> sets;
    for (size_t k : r.kernels) {
      EXPECT_FALSE(cands[k].nodes.intersects(covered));
      EXPECT_TRUE(cost[k].valid());
      covered = covered | cands[k].nodes;
      total += cost[k].median_ms + options.epsilon_ms;
      sets.push_back(cands[k].nodes);
    }
    EXPECT_EQ(covered.popcount(), static_cast<size_t>(g.num_nodes()));
    EXPECT_NEAR(total, r.predicted_ms, 1e-9);
    auto order = execution_order(g, sets);
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);  // already in execution order
    // Deterministic.
    EXPECT_EQ(search_placement(g, cands, cost, pins, options).kernels, r.kernels);
    // The beam fallback (forced by a tiny state cap) stays valid and no better than optimal.
    SearchOptions tiny = options;
    tiny.max_states = 2;
    SearchResult b = search_placement(g, cands, cost, pins, tiny);
    EXPECT_GE(b.predicted_ms, expect - 1e-9);
    EXPECT_FALSE(b.exact);
  }
}

TEST(OpLevelSearch, PinsAreHonouredAndImpossiblePinsExplained) {
  OnnxTestModel m(17);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"a"});
  m.node("Neg", {"a"}, {"b"});
  m.output("b");
  Graph g = import_model(m);
  std::vector<Candidate> cands = {{IndexSet(2, {0}), "fast", "Relu"},
                                  {IndexSet(2, {1}), "fast", "Neg"},
                                  {IndexSet(2, {0}), "slow", "Relu"},
                                  {IndexSet(2, {1}), "slow", "Neg"},
                                  {IndexSet(2, {0, 1}), "fused", "Relu+Neg"}};
  std::vector<Cost> cost = {Cost::of_ms(1), Cost::of_ms(1), Cost::of_ms(5), Cost::of_ms(5), Cost::of_ms(1.5)};
  SearchResult free = search_placement(g, cands, cost, {}, {});
  ASSERT_EQ(free.kernels.size(), 1u);
  EXPECT_EQ(cands[free.kernels[0]].backend, "fused");
  Pins pins;
  pins.pinned[1] = "slow";
  SearchResult pinned = search_placement(g, cands, cost, pins, {});
  ASSERT_EQ(pinned.kernels.size(), 2u);
  EXPECT_EQ(cands[pinned.kernels[0]].backend, "fast");
  EXPECT_EQ(cands[pinned.kernels[1]].backend, "slow");
  Pins impossible;
  impossible.pinned[0] = "nonexistent";
  try {
    search_placement(g, cands, cost, impossible, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("nonexistent"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("Relu"), std::string::npos);
  }
}

}  // namespace
}  // namespace collage
