// Timing whole placements: side-by-side turns, timed samples, giving up on a rival, and the
// measured fitness of placements a library cannot build.
#include "core/search/placement_timing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/native/native_spec.h"
#include "core/ir/random_inputs.h"
#include "refine_test_models.h"

namespace collage {
namespace {

using testing::graphy;
using testing::mixed_chain;
using testing::one_kernel_per_node;

TEST(PlacementTiming, SideBySideAlternatesSettlesEachTurnAndTakesEachSidesMedian) {
  // A fake clock that the two workloads advance by known amounts: per turn an untimed run, then
  // the timed one (settle 0: one untimed run suffices).
  double clock = 0;
  std::string order;
  std::vector<double> a_cost = {50, 5, 50, 1, 50, 3, 50, 9, 50, 4},
                      b_cost = {70, 2, 70, 2, 70, 7, 70, 2, 70, 6};
  size_t ai = 0, bi = 0;
  auto a = [&] {
    order += 'A';
    clock += a_cost[ai++];
  };
  auto b = [&] {
    order += 'B';
    clock += b_cost[bi++];
  };
  SideBySide r = time_side_by_side(
      a, b, 5, [&] { return clock; }, 0, 0);
  EXPECT_EQ(order, "AABBBBAAAABBBBAAAABB");  // ABBA turns: drift over time hits both sides alike
  EXPECT_EQ(r.rounds, 5);
  EXPECT_EQ(r.a_ms, 4.0);  // the timed runs {5, 1, 3, 9, 4} sorted: 1 3 4 5 9
  EXPECT_EQ(r.b_ms, 2.0);  // {2, 2, 7, 2, 6}: 2 2 2 6 7
  // A settle time runs a side untimed until it has passed: 3 runs of 4 reach 10.
  order.clear();
  a_cost.assign(8, 4.0);
  b_cost.assign(8, 4.0);
  ai = bi = 0;
  r = time_side_by_side(
      a, b, 2, [&] { return clock; }, 10, 0);
  EXPECT_EQ(order, "AAAABBBBBBBBAAAA");
  EXPECT_EQ(r.a_ms, 4.0);
  EXPECT_EQ(r.b_ms, 4.0);
}

TEST(PlacementTiming, ATimedSampleRunsUntilItsTimeHasPassedAndCountsTheMeanRun) {
  // Runs of 1, 2, 3, 4, ... on a fake clock: a 5 ms sample takes 1+2+3 = 6 after 3 runs.
  double clock = 0;
  int runs = 0;
  auto run = [&] { clock += ++runs; };
  EXPECT_EQ(timed_sample(
                run, [&] { return clock; }, 5),
            2.0);
  EXPECT_EQ(runs, 3);
  // A run longer than the sample time is one sample on its own.
  runs = 9;
  EXPECT_EQ(timed_sample(
                run, [&] { return clock; }, 5),
            10.0);
  EXPECT_EQ(runs, 10);
  // In a side-by-side turn: each side's sample is its mean run, not its first.
  clock = 0;
  std::vector<double> a_cost = {1, 9, 1, 1}, b_cost = {4, 4, 4, 4};
  size_t ai = 0, bi = 0;
  SideBySide r = time_side_by_side([&] { clock += a_cost[ai++]; }, [&] { clock += b_cost[bi++]; }, 1,
                                   [&] { return clock; }, 0, 8);
  EXPECT_EQ(ai, 2u);  // settle: 1; sample: 9 alone passes 8 ms
  EXPECT_EQ(r.a_ms, 9.0);
  EXPECT_EQ(bi, 3u);  // settle: 4; sample: 4 + 4
  EXPECT_EQ(r.b_ms, 4.0);
}

TEST(PlacementTiming, SideBySideGivesUpOnARivalThatLostEachOfItsFirstRounds) {
  // b slower than a in each round: with give_up_after 3, three rounds of ten are run.
  double clock = 0;
  std::vector<double> b_cost(20, 3.0);
  size_t ai = 0, bi = 0;
  auto a = [&] { clock += 1, ++ai; };
  auto b = [&] { clock += b_cost[bi++]; };
  auto now = [&] { return clock; };
  SideBySide r = time_side_by_side(a, b, 10, now, 0, 0, 3);
  EXPECT_EQ(r.rounds, 3);
  EXPECT_EQ(ai, 6u);  // an untimed and a timed run per turn
  EXPECT_EQ(bi, 6u);
  EXPECT_EQ(r.a_ms, 1.0);
  EXPECT_EQ(r.b_ms, 3.0);
  // One round of the first three won (b's third timed run is quicker): all ten are run.
  ai = bi = 0;
  b_cost[5] = 0.5;
  r = time_side_by_side(a, b, 10, now, 0, 0, 3);
  EXPECT_EQ(r.rounds, 10);
  EXPECT_EQ(ai, 20u);
  EXPECT_EQ(r.b_ms, 3.0);
  // 0: never given up.
  ai = bi = 0;
  b_cost.assign(20, 3.0);
  EXPECT_EQ(time_side_by_side(a, b, 10, now, 0, 0, 0).rounds, 10);
}

// A graph-level stand-in whose library refuses every region.
BackendSpec refusing() {
  BackendSpec s = graphy();
  s.name = "refusing";
  s.compile = [](const Graph&, const SubGraph&, const CompileOptions&) -> std::unique_ptr<Kernel> {
    throw Error(ErrorKind::Unsupported, "refusing: no region is supported");
  };
  return s;
}

TEST(PlacementTiming, UnbuildablePlacementsLoseAndOthersAreTimed) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy(), no = refusing();
  std::vector<const BackendSpec*> backends = {&native_backend(), &gl, &no};
  FitnessFn fitness = measured_fitness(g, backends, CompileOptions{}, random_inputs(g, 3), 3);
  Cost seed_cost = fitness(seed);
  ASSERT_TRUE(seed_cost.valid());
  EXPECT_EQ(seed_cost.samples, 3);
  Placement refused = seed;
  refused.kernels[0].backend = "refusing";
  Cost lost = fitness(refused);  // a failed build, with the library's words
  EXPECT_EQ(lost.status, CostStatus::Failed);
  EXPECT_NE(lost.invalid_reason.find("refusing: no region is supported"), std::string::npos)
      << lost.invalid_reason;
  // Any other failure is a bug, not a losing genome: it propagates.
  Placement unknown = seed;
  unknown.kernels[0].backend = "no-such-backend";
  EXPECT_THROW(fitness(unknown), Error);

  SideBySide ab = compare_placements(g, seed, seed, backends, CompileOptions{}, random_inputs(g, 3), 4);
  EXPECT_EQ(ab.rounds, 4);
  EXPECT_TRUE(std::isfinite(ab.a_ms) && std::isfinite(ab.b_ms));
}

}  // namespace
}  // namespace collage
