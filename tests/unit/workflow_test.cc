// app/workflow: the steps both front ends run, with one set of defaults.
#include "app/workflow/workflow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "refine_test_models.h"
#include "temp_dir.h"

namespace collage {
namespace {

using testing::graphy;

// Deterministic: op-level kernels cost what was measured, a graph-level region of m
// nodes 0.3 + 0.5 m times the cheapest measured kernel.
FitnessFn stated_fitness(double unit) {
  return [unit](const Placement& p) {
    double total = 0;
    for (const PlacedKernel& k : p.kernels)
      total +=
          k.backend == "graphy" ? unit * (0.3 + 0.5 * static_cast<double>(k.nodes.size())) : k.cost.median_ms;
    return Cost::of_ms(total);
  };
}

struct TempDb {
  testing::ScopedTempDir dir{"collage_workflow_db"};
  std::string path = dir.file("costs.sqlite");
};

TEST(WorkflowSettings, AreTheDocumentedOnesAndEveryStepDefaultsToThem) {
  const Settings& s = kSettings;
  EXPECT_EQ(s.fitness_runs, 7);
  EXPECT_EQ(s.refine_population, 12);
  EXPECT_EQ(s.refine_generations, 30);
  EXPECT_EQ(s.refine_patience, 8);
  EXPECT_EQ(s.refine_budget_s, 120);
  EXPECT_EQ(s.repeat, 20);
  EXPECT_EQ(s.side_by_side_min_rounds, 10);
  EXPECT_EQ(s.kernel_tolerance.atol, 1e-4);
  EXPECT_EQ(s.kernel_tolerance.rtol, 1e-3);
  EXPECT_EQ(s.kernel_tolerance.peak_rtol, 1e-3);
  // The CLI and the explorer default-construct these and override only what the user set.
  workflow::RefineStepOptions refine;
  EXPECT_EQ(refine.fitness_runs, s.fitness_runs);
  EXPECT_EQ(refine.population, s.refine_population);
  EXPECT_EQ(refine.generations, s.refine_generations);
  EXPECT_EQ(refine.patience, s.refine_patience);
  EXPECT_EQ(refine.budget_s, s.refine_budget_s);
  EXPECT_EQ(refine.seed, s.refine_seed);
  EXPECT_EQ(workflow::RunOptions{}.repeat, s.repeat);
  EXPECT_EQ(workflow::RunOptions{}.tolerance.atol, s.verify_tolerance.atol);
  EXPECT_EQ(workflow::SideBySideOptions{}.repeat, s.repeat);
  EXPECT_EQ(workflow::TuneStepOptions{}.tolerance.peak_rtol, s.kernel_tolerance.peak_rtol);
  EXPECT_EQ(workflow::TuneStepOptions{}.epsilon_ms, -1);  // the measured dispatch overhead
  EXPECT_EQ(MeasureOptions{}.tolerance.atol, kKernelTolerance.atol);
  // The layers below the workflow hold no defaults of their own either.
  RefineOptions search;
  EXPECT_EQ(search.population, s.refine_population);
  EXPECT_EQ(search.max_generations, s.refine_generations);
  EXPECT_EQ(search.patience, s.refine_patience);
  EXPECT_EQ(search.time_budget_s, s.refine_budget_s);
  EXPECT_EQ(search.seed, s.refine_seed);
  MeasureOptions measure;
  EXPECT_EQ(measure.min_time_ms, 30);
  EXPECT_EQ(measure.min_samples, 10);
  EXPECT_EQ(measure.min_time_ms, s.measure_min_time_ms);
  EXPECT_EQ(measure.worker_lease_s, s.worker_lease_s);
  EXPECT_EQ(workflow::TuneStepOptions{}.min_time_ms, s.measure_min_time_ms);
  EXPECT_EQ(workflow::TuneStepOptions{}.repeat, s.repeat);
  EXPECT_EQ(workflow::RefineStepOptions{}.repeat, s.repeat);
}

// The CLI (`collage tune --refine`) and the explorer (Tune, Refine) both run these
// steps; the same costs (the cost DB) and seed give the same placements.
TEST(Workflow, TuneAndRefineGiveTheSamePlacementForTheSameCostsAndSeed) {
  Graph g = testing::mixed_chain();
  BackendSpec gl = graphy();
  TempDb temp;
  workflow::TuneStepOptions topts;
  topts.backends = {&native_backend(), &gl};
  topts.min_time_ms = 0.1;
  topts.epsilon_ms = 0.002;  // fixed: the measured overhead would differ between runs
  {
    CostDb db(temp.path);
    TuneResult first = workflow::tune(g, topts, &db);  // fills the cost DB
    EXPECT_GT(first.measured_now, 0u);
    // Costs independent of the machine's load: every native kernel 1 ms per op (so
    // fusing never pays and each op is its own kernel), graphy's single ops dearer,
    // so the op-level placement is all native and graphy's kernels are genes.
    std::vector<CostRecord> records = db.list();
    for (CostRecord& r : records) {
      size_t ops = static_cast<size_t>(std::count(r.label.begin(), r.label.end(), '+')) + 1;
      r.cost.median_ms = (r.backend == "graphy" ? 5.0 : 1.0) * static_cast<double>(ops) + 0.5 * (ops - 1.0);
    }
    db.put_all(records);
  }
  auto run = [&] {
    CostDb db(temp.path);
    TuneResult tuned = workflow::tune(g, topts, &db);
    EXPECT_EQ(tuned.measured_now, 0u);
    double unit = tuned.placement.kernels.front().cost.median_ms;
    for (const PlacedKernel& k : tuned.placement.kernels) unit = std::min(unit, k.cost.median_ms);
    workflow::RefineStepOptions ropts;
    ropts.backends = topts.backends;
    ropts.fitness = stated_fitness(unit);
    workflow::RefineReport refined = workflow::refine(g, tuned.placement, tuned.inputs, ropts, &db);
    return std::make_pair(placement_to_json(tuned.placement, g), refined);
  };
  auto [cli_op_level, cli_refined] = run();
  auto [explorer_op_level, explorer_refined] = run();
  EXPECT_EQ(cli_op_level, explorer_op_level);
  EXPECT_GT(cli_refined.result.moved(), 0);
  EXPECT_EQ(cli_refined.result.best_genome, explorer_refined.result.best_genome);
  EXPECT_EQ(placement_to_json(cli_refined.result.best, g),
            placement_to_json(explorer_refined.result.best, g));
  EXPECT_EQ(cli_refined.best_generation, explorer_refined.best_generation);
  ASSERT_FALSE(cli_refined.regions.empty());
  EXPECT_EQ(cli_refined.regions.front().backend, "graphy");
  EXPECT_TRUE(cli_refined.regions.front().moved);
}

TEST(Workflow, CachedCostsReadTheCostDbAndMeasureNothing) {
  Graph g = testing::mixed_chain();
  BackendSpec gl = graphy();
  TempDb temp;
  workflow::TuneStepOptions topts;
  topts.backends = {&native_backend(), &gl};
  topts.min_time_ms = 0.1;
  CostDb db(temp.path);
  TuneResult empty = workflow::cached_costs(g, topts, &db);  // nothing in the DB yet
  ASSERT_FALSE(empty.candidates.empty());
  EXPECT_EQ(empty.from_cache, 0u);
  EXPECT_EQ(empty.invalid, empty.candidates.size());
  EXPECT_EQ(empty.costs.front().cost.status, CostStatus::NotMeasured);
  EXPECT_TRUE(db.list().empty());  // "not measured" is not a cost to keep

  TuneResult tuned = workflow::tune(g, topts, &db);
  TuneResult cached = workflow::cached_costs(g, topts, &db);
  ASSERT_EQ(cached.candidates.size(), tuned.candidates.size());
  for (size_t i = 0; i < cached.costs.size(); ++i) {
    EXPECT_EQ(cached.candidates[i].backend, tuned.candidates[i].backend);
    EXPECT_EQ(cached.costs[i].signature, tuned.costs[i].signature);
    EXPECT_EQ(cached.costs[i].cost.valid(), tuned.costs[i].cost.valid());
    EXPECT_EQ(cached.costs[i].cost.median_ms, tuned.costs[i].cost.median_ms);
  }
  EXPECT_EQ(cached.invalid, tuned.invalid);
}

TEST(Workflow, VerifyTimeAndTheSideBySideDecision) {
  Graph g = testing::mixed_chain();
  BackendSpec gl = graphy();
  workflow::TuneStepOptions topts;
  topts.backends = {&native_backend(), &gl};
  topts.min_time_ms = 0.1;
  topts.epsilon_ms = 0.002;
  TuneResult tuned = workflow::tune(g, topts, nullptr);
  workflow::RunOptions run;
  run.backends = topts.backends;
  run.repeat = 3;
  workflow::PlacementRunReport r = workflow::verify_and_time(g, tuned.placement, tuned.inputs, run);
  EXPECT_TRUE(r.verify.ok()) << r.verify.mismatch;
  EXPECT_EQ(r.verify.outputs.size(), 1u);
  EXPECT_EQ(r.timing.runs, 3);
  EXPECT_GT(r.timing.median_ms, 0);
  EXPECT_EQ(workflow::time_placement(g, tuned.placement, tuned.inputs, run).runs, 3);
  EXPECT_TRUE(workflow::verify(g, tuned.placement, tuned.inputs, run).ok());

  // Nothing moved: no final check, the (op-level) placement stays.
  workflow::RefineStepOptions ropts;
  ropts.backends = topts.backends;
  // Only the op-level placement itself scores well, whatever the measured costs made it.
  const std::string op_level = placement_to_json(tuned.placement, g);
  ropts.fitness = [&](const Placement& p) {
    return Cost::of_ms(placement_to_json(p, g) == op_level ? 1.0 : 2.0);
  };
  ropts.generations = 2;
  workflow::RefineReport same = workflow::refine(g, tuned.placement, tuned.inputs, ropts, nullptr);
  workflow::SideBySideOptions sopts;
  sopts.backends = topts.backends;
  sopts.repeat = 1;
  workflow::SideBySideReport none =
      workflow::compare_side_by_side(g, tuned.placement, same, tuned.inputs, sopts);
  EXPECT_FALSE(none.compared);
  EXPECT_TRUE(none.keep_refined);
  // Something moved: both alternated, at least side_by_side_min_rounds runs each. Every
  // op-level kernel 1 ms, a region 0.1 ms whatever it holds, so offloading always pays: with
  // a per-node region cost, the native fused kernels that some measured costs give (one
  // kernel for several nodes) did not pay to move, and nothing moved in about 1 run of 7.
  ropts.fitness = [](const Placement& p) {
    double total = 0;
    for (const PlacedKernel& k : p.kernels) total += k.backend == "graphy" ? 0.1 : 1.0;
    return Cost::of_ms(total);
  };
  workflow::RefineReport moved = workflow::refine(g, tuned.placement, tuned.inputs, ropts, nullptr);
  ASSERT_GT(moved.result.moved(), 0);
  EXPECT_TRUE(workflow::verify(g, moved.result.best, tuned.inputs, run).ok());
  workflow::SideBySideReport ab =
      workflow::compare_side_by_side(g, tuned.placement, moved, tuned.inputs, sopts);
  EXPECT_TRUE(ab.compared);
  EXPECT_EQ(ab.timing.rounds, kSettings.side_by_side_min_rounds);
  EXPECT_EQ(ab.keep_refined, ab.timing.b_ms < ab.timing.a_ms);
}

TEST(Workflow, RefineNeedsAGraphLevelBackend) {
  Graph g = testing::mixed_chain();
  workflow::TuneStepOptions topts;
  topts.backends = {&native_backend()};
  topts.min_time_ms = 0.1;
  topts.epsilon_ms = 0.002;
  TuneResult tuned = workflow::tune(g, topts, nullptr);
  workflow::RefineStepOptions ropts;
  ropts.backends = topts.backends;
  try {
    workflow::refine(g, tuned.placement, tuned.inputs, ropts, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
  }
}

TEST(Workflow, CostDbPathIsTheGivenOneElseCoresDefault) {
  EXPECT_EQ(workflow::cost_db_path("/tmp/x.sqlite"), "/tmp/x.sqlite");
  const char* old = std::getenv("COLLAGE_COST_DB");
  std::string saved = old ? old : "";
  ::setenv("COLLAGE_COST_DB", "/tmp/from-env.sqlite", 1);
  EXPECT_EQ(workflow::cost_db_path(), "/tmp/from-env.sqlite");
  EXPECT_EQ(workflow::cost_db_path(), CostDb::default_path());
  if (old)
    ::setenv("COLLAGE_COST_DB", saved.c_str(), 1);
  else
    ::unsetenv("COLLAGE_COST_DB");
}

}  // namespace
}  // namespace collage
