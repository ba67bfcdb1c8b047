// core/search/placement_diff.h: unchanged kernels, changed regions, costs and the
// summary, on placements built here; and the structural reader `collage diff` uses.
#include "core/search/placement_diff.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

// x -> Relu -> Neg -> Exp -> Relu -> Neg -> Exp: six nodes, ids 0..5 in order.
Graph chain6() {
  OnnxTestModel m(17);
  m.input("x", {2, 3});
  const char* ops[] = {"Relu", "Neg", "Exp", "Relu", "Neg", "Exp"};
  std::string prev = "x";
  for (int i = 0; i < 6; ++i) {
    std::string out = "v" + std::to_string(i);
    m.node(ops[i], {prev}, {out});
    prev = out;
  }
  m.output(prev);
  return import_model(m);
}

PlacedKernel kernel(std::vector<NodeId> nodes, const std::string& backend, double cost_ms) {
  PlacedKernel k;
  k.nodes = std::move(nodes);
  k.backend = backend;
  k.label = "k";
  k.cost = Cost::of_ms(cost_ms);
  return k;
}

Placement placement(std::vector<PlacedKernel> kernels, const std::string& fingerprint = "f00d") {
  Placement p;
  p.model_fingerprint = fingerprint;
  p.kernels = std::move(kernels);
  for (const PlacedKernel& k : p.kernels) p.predicted_ms += k.cost.median_ms;
  return p;
}

double sum_cost(const std::vector<PlacedKernel>& kernels) {
  double s = 0;
  for (const PlacedKernel& k : kernels) s += k.cost.median_ms;
  return s;
}

TEST(PlacementDiff, IdenticalPlacementsInAnyOrderHaveNoRegions) {
  Placement a =
      placement({kernel({0, 1}, "native", 1), kernel({2}, "onednn", 2), kernel({3, 4, 5}, "blas", 3)});
  Placement b = a;
  std::reverse(b.kernels.begin(), b.kernels.end());
  b.kernels[0].label = "renamed";      // labels are for people
  b.kernels[0].cost = Cost::of_ms(9);  // and a re-measured cost does not change the kernel
  PlacementDiff d = diff_placements(a, b);
  EXPECT_TRUE(d.identical());
  EXPECT_EQ(d.unchanged_kernels, 3u);
  EXPECT_EQ(d.changed_nodes, 0u);
  EXPECT_TRUE(d.changed().empty());
  EXPECT_EQ(d.nodes_per_backend.at("blas").a, 3);
  EXPECT_EQ(d.nodes_per_backend.at("blas").b, 3);
}

TEST(PlacementDiff, ChangedKernelsFormRegionsWithTheirCosts) {
  // Unchanged: {0,1} native. Changed: {2} and {3,4} become {2,3} blas and {4}; {5} moves backend.
  PlacedKernel same = kernel({0, 1}, "native", 1.0);
  std::vector<PlacedKernel> a_changed = {kernel({2}, "native", 0.5), kernel({3, 4}, "onednn", 2.0)};
  std::vector<PlacedKernel> b_changed = {kernel({2, 3}, "blas", 0.75), kernel({4}, "onednn", 1.25)};
  PlacedKernel a_last = kernel({5}, "native", 0.3), b_last = kernel({5}, "xnnpack", 0.125);
  Placement a = placement({same, a_changed[0], a_changed[1], a_last});
  Placement b = placement({same, b_changed[0], b_changed[1], b_last});
  PlacementDiff d = diff_placements(a, b);
  ASSERT_FALSE(d.identical());
  EXPECT_EQ(d.kernels_a, 4u);
  EXPECT_EQ(d.kernels_b, 4u);
  EXPECT_EQ(d.unchanged_kernels, 1u);
  ASSERT_EQ(d.regions.size(), 2u);
  const DiffRegion& r0 = d.regions[0];
  EXPECT_EQ(r0.nodes, (std::vector<NodeId>{2, 3, 4}));
  ASSERT_EQ(r0.a.size(), 2u);
  ASSERT_EQ(r0.b.size(), 2u);
  EXPECT_EQ(r0.a[0].nodes, a_changed[0].nodes);
  EXPECT_EQ(r0.b[0].backend, "blas");
  EXPECT_DOUBLE_EQ(r0.a_ms, sum_cost(a_changed));
  EXPECT_DOUBLE_EQ(r0.b_ms, sum_cost(b_changed));
  EXPECT_DOUBLE_EQ(r0.delta_ms(), sum_cost(b_changed) - sum_cost(a_changed));
  const DiffRegion& r1 = d.regions[1];
  EXPECT_EQ(r1.nodes, (std::vector<NodeId>{5}));
  EXPECT_DOUBLE_EQ(r1.delta_ms(), b_last.cost.median_ms - a_last.cost.median_ms);
  EXPECT_EQ(d.changed(), (std::vector<NodeId>{2, 3, 4, 5}));
  EXPECT_EQ(d.changed_nodes, 4u);
  EXPECT_DOUBLE_EQ(d.predicted_delta_ms(), b.predicted_ms - a.predicted_ms);
  EXPECT_EQ(d.nodes_per_backend.at("native").a, 4);
  EXPECT_EQ(d.nodes_per_backend.at("native").b, 2);
  EXPECT_EQ(d.nodes_per_backend.at("xnnpack").a, 0);
  EXPECT_EQ(d.nodes_per_backend.at("xnnpack").b, 1);
  EXPECT_EQ(backend_summary(r0.a), "native, onednn");
  EXPECT_EQ(backend_summary({b_changed[0], b_changed[0], b_last}), "blas x2, xnnpack");
}

TEST(PlacementDiff, DifferentModelsAreRefusedNamingBoth) {
  Placement a = placement({kernel({0}, "native", 1)}, "aaaa");
  Placement b = placement({kernel({0}, "native", 1)}, "bbbb");
  try {
    diff_placements(a, b, "one.json", "two.json");
    FAIL() << "accepted placements of different models";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    std::string what = e.what();
    for (const char* part : {"one.json", "two.json", "aaaa", "bbbb"})
      EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

// Random partitions of a 40-node chain: a node is changed exactly when the kernel covering it
// differs (nodes or backend) between A and B, checked node by node; regions are disjoint, each
// region's A and B kernels cover the same nodes, and costs add up.
TEST(PlacementDiff, RegionsAreExactlyTheNodesWhoseKernelDiffers) {
  std::mt19937 rng(7);
  const std::vector<std::string> backends = {"native", "onednn", "blas"};
  auto random_placement = [&](const Placement* like) {
    std::vector<PlacedKernel> kernels;
    for (NodeId n = 0; n < 40;) {
      // Half the time keep the kernel `like` has here, so there is something unchanged.
      const PlacedKernel* keep = nullptr;
      if (like && rng() % 2)
        for (const PlacedKernel& k : like->kernels)
          if (k.nodes.front() == n) keep = &k;
      if (keep) {
        kernels.push_back(*keep);
        kernels.back().cost = Cost::of_ms(0.01 * static_cast<double>(rng() % 100));
        n = keep->nodes.back() + 1;
        continue;
      }
      NodeId len = std::min<NodeId>(1 + static_cast<NodeId>(rng() % 4), 40 - n);
      std::vector<NodeId> nodes;
      for (NodeId i = 0; i < len; ++i) nodes.push_back(n + i);
      kernels.push_back(kernel(nodes, backends[rng() % 3], 0.01 * static_cast<double>(rng() % 100)));
      n += len;
    }
    std::shuffle(kernels.begin(), kernels.end(), rng);
    return placement(kernels);
  };
  for (int trial = 0; trial < 50; ++trial) {
    Placement a = random_placement(nullptr);
    Placement b = random_placement(&a);
    auto kernel_of = [](const Placement& p, NodeId n) {
      for (const PlacedKernel& k : p.kernels)
        if (std::find(k.nodes.begin(), k.nodes.end(), n) != k.nodes.end()) return k;
      return PlacedKernel{};
    };
    std::vector<NodeId> expect_changed;
    for (NodeId n = 0; n < 40; ++n) {
      PlacedKernel ka = kernel_of(a, n), kb = kernel_of(b, n);
      if (ka.nodes != kb.nodes || ka.backend != kb.backend) expect_changed.push_back(n);
    }
    PlacementDiff d = diff_placements(a, b);
    EXPECT_EQ(d.changed(), expect_changed);
    std::set<NodeId> seen;
    double a_changed_ms = 0, b_changed_ms = 0;
    for (const DiffRegion& r : d.regions) {
      std::set<NodeId> in_a, in_b;
      for (const PlacedKernel& k : r.a) in_a.insert(k.nodes.begin(), k.nodes.end());
      for (const PlacedKernel& k : r.b) in_b.insert(k.nodes.begin(), k.nodes.end());
      EXPECT_EQ(in_a, in_b);
      EXPECT_EQ(std::vector<NodeId>(in_a.begin(), in_a.end()), r.nodes);
      for (NodeId n : r.nodes) EXPECT_TRUE(seen.insert(n).second) << "node " << n << " in two regions";
      EXPECT_DOUBLE_EQ(r.a_ms, sum_cost(r.a));
      a_changed_ms += r.a_ms;
      b_changed_ms += r.b_ms;
    }
    // A kernel outside every region is unchanged: the rest of A's and B's cost is theirs.
    size_t a_unchanged = 0;
    double a_rest = 0, b_rest = 0;
    for (const PlacedKernel& k : a.kernels)
      if (!seen.count(k.nodes.front())) ++a_unchanged, a_rest += k.cost.median_ms;
    for (const PlacedKernel& k : b.kernels)
      if (!seen.count(k.nodes.front())) b_rest += k.cost.median_ms;
    EXPECT_EQ(d.unchanged_kernels, a_unchanged);
    EXPECT_NEAR(a_changed_ms + a_rest, sum_cost(a.kernels), 1e-9);
    EXPECT_NEAR(b_changed_ms + b_rest, sum_cost(b.kernels), 1e-9);
  }
}

TEST(PlacementDiff, JsonNamesNodesWithAGraph) {
  Graph g = chain6();
  Placement a = placement({kernel({0, 1, 2}, "native", 1), kernel({3, 4, 5}, "native", 1)});
  Placement b =
      placement({kernel({0, 1, 2}, "native", 1), kernel({3}, "onednn", 0.25), kernel({4, 5}, "blas", 0.5)});
  nlohmann::json j = nlohmann::json::parse(placement_diff_to_json(diff_placements(a, b), &g));
  EXPECT_FALSE(j.at("identical").get<bool>());
  ASSERT_EQ(j.at("regions").size(), 1u);
  EXPECT_EQ(j["regions"][0]["nodes"], (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(j["regions"][0]["node_names"][0], g.node(3).name);
  EXPECT_DOUBLE_EQ(j["regions"][0]["delta_ms"].get<double>(), 0.25 + 0.5 - 1);
  EXPECT_EQ(j["regions"][0]["b"].size(), 2u);
  EXPECT_EQ(j["nodes_per_backend"]["blas"]["b"], 2);
  EXPECT_TRUE(
      nlohmann::json::parse(placement_diff_to_json(diff_placements(a, a))).at("identical").get<bool>());
}

// A kernel with no cost is left out of its region's sum and counted as such, in the
// diff and its JSON (where, as in the placement file, it has no cost_ms).
TEST(PlacementDiff, KernelsWithoutACostAreCountedNotSummedAsZero) {
  PlacedKernel unknown = kernel({1}, "onednn", 1);
  unknown.cost = PlacedKernel::no_placed_cost();
  Placement a = placement({kernel({0}, "native", 1), kernel({1}, "native", 0.5)});
  Placement b = placement({kernel({0}, "native", 1), unknown});
  PlacementDiff d = diff_placements(a, b);
  ASSERT_EQ(d.regions.size(), 1u);
  const DiffRegion& r = d.regions[0];
  EXPECT_EQ(r.a_without_cost, 0);
  EXPECT_EQ(r.b_without_cost, 1);
  EXPECT_FALSE(r.costs_complete());
  EXPECT_DOUBLE_EQ(r.a_ms, 0.5);
  EXPECT_DOUBLE_EQ(r.b_ms, 0.0);  // the sum over B's kernels with a cost: none
  nlohmann::json j = nlohmann::json::parse(placement_diff_to_json(d)).at("regions").at(0);
  EXPECT_EQ(j.at("b_without_cost").get<int>(), 1);
  EXPECT_FALSE(j.at("b").at(0).contains("cost_ms"));
  EXPECT_EQ(j.at("a").at(0).at("cost_ms").get<double>(), 0.5);
  // Complete costs: no count in the JSON.
  EXPECT_FALSE(nlohmann::json::parse(
                   placement_diff_to_json(diff_placements(a, placement({kernel({0, 1}, "blas", 1)}))))
                   .at("regions")
                   .at(0)
                   .contains("b_without_cost"));
}

TEST(PlacementStructure, ReadsAFileWithoutTheModelAndChecksItsShape) {
  Graph g = chain6();
  Placement p = placement({kernel({0, 1, 2}, "native", 1), kernel({3, 4, 5}, "onednn", 2)});
  p.model_fingerprint = model_fingerprint(g);
  std::string text = placement_to_json(p, g);
  Placement q = placement_structure_from_json(text);
  EXPECT_EQ(q.model_fingerprint, p.model_fingerprint);
  ASSERT_EQ(q.kernels.size(), 2u);
  EXPECT_EQ(q.kernels[1].nodes, (std::vector<NodeId>{3, 4, 5}));
  EXPECT_EQ(q.kernels[1].backend, "onednn");
  EXPECT_DOUBLE_EQ(q.kernels[1].cost.median_ms, 2);
  auto rejected = [](const std::string& doc) {
    try {
      placement_structure_from_json(doc);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted " << doc;
    return std::string();
  };
  nlohmann::json good = nlohmann::json::parse(text);
  auto with = [&](auto edit) {
    nlohmann::json j = good;
    edit(j);
    return j.dump();
  };
  EXPECT_NE(rejected("[1, 2").find("malformed"), std::string::npos);
  EXPECT_NE(rejected("{}").find("not a placement file"), std::string::npos);
  EXPECT_NE(rejected(with([](auto& j) { j["kernels"][0]["nodes"] = {-1}; })).find("unknown node id -1"),
            std::string::npos);
  EXPECT_NE(rejected(with([](auto& j) { j["kernels"][0]["nodes"] = {3}; })).find("two kernels"),
            std::string::npos);
  EXPECT_NE(rejected(with([](auto& j) { j.erase("model_fingerprint"); })).find("missing"), std::string::npos);
}

}  // namespace
}  // namespace collage
