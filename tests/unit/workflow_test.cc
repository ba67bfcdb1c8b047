// app/workflow: the steps both front ends run, with one set of defaults.
#include "app/workflow/workflow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <functional>

#include "app/workflow/refine_contests.h"
#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "core/backend_api/pattern.h"
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
  EXPECT_EQ(s.refine_segments, 6);
  EXPECT_EQ(s.refine_budget_s, 120);
  EXPECT_EQ(s.repeat, 20);
  EXPECT_EQ(s.side_by_side_min_rounds, 10);
  EXPECT_EQ(s.side_by_side_settle_ms, 10);
  EXPECT_EQ(s.contest_give_up_rounds, 5);
  EXPECT_EQ(s.timed_sample_ms, 2);
  EXPECT_EQ(s.segment_library_margin, 1.25);
  EXPECT_EQ(s.library_contest_margin, 1.10);
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
  // Only the op-level placement itself has a fitness, whatever the measured costs made it (a seed
  // without one is not contested).
  ropts.fitness = [&](const Placement& p) {
    return same_kernels(p, tuned.placement) ? Cost::of_ms(1.0) : Cost::invalid("not measured here");
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

// A graph-level library whose kernels run the work `times` times over: really slower.
class Repeated : public Kernel {
 public:
  Repeated(std::unique_ptr<Kernel> inner, int times) : inner_(std::move(inner)), times_(times) {}
  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    std::vector<Tensor> out = inner_->run(inputs, alloc);
    for (int i = 1; i < times_; ++i) out = inner_->run(inputs, alloc);
    return out;
  }

 private:
  std::unique_ptr<Kernel> inner_;
  int times_;
};

BackendSpec heavy() {
  BackendSpec s = graphy();
  s.name = "heavy";
  s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
    return std::make_unique<Repeated>(native::make_fused_kernel(g, sub), 3000);
  };
  return s;
}

bool uses(const Placement& p, const std::string& backend) {
  return std::any_of(p.kernels.begin(), p.kernels.end(),
                     [&](const PlacedKernel& k) { return k.backend == backend; });
}

// The seed "every kernel `backend` can take goes to it".
Placement whole_seed(const Graph& g, const Placement& op_level, const BackendSpec& backend) {
  std::vector<Gene> genes = refine_genes(g, op_level, {&backend});
  return decode_genome(g, op_level, genes, refine_seeds(genes, {&backend}).back());
}

// The mixed chain tuned over native, graphy ("light") and heavy, and a short refine over them.
class SeedContests : public ::testing::Test {
 protected:
  void SetUp() override {
    workflow::TuneStepOptions topts;
    topts.backends = {&native_backend(), &light, &slow};
    topts.min_time_ms = 0.1;
    topts.epsilon_ms = 0.002;
    tuned = workflow::tune(g, topts, nullptr);
    ropts.backends = topts.backends;
    ropts.generations = 3;
    ropts.repeat = 1;
  }
  Graph g = testing::mixed_chain();
  BackendSpec light = graphy(), slow = heavy();
  TuneResult tuned;
  workflow::RefineStepOptions ropts;
};

TEST_F(SeedContests, EveryWholeLibrarySeedIsTimedAgainstTheBestAndKeptWhenFaster) {
  // A misjudging fitness: anything on "heavy" 1 ms, "everything on graphy" 1.1 ms, the rest 2 ms.
  const Placement light_seed = whole_seed(g, tuned.placement, light);
  auto fitness_of = [&](double whole_light) {
    return [&, whole_light](const Placement& p) {
      if (uses(p, "heavy")) return Cost::of_ms(1.0);
      return Cost::of_ms(same_kernels(p, light_seed) ? whole_light : 2.0);
    };
  };
  ropts.fitness = fitness_of(1.1);
  workflow::RefineReport r = workflow::refine(g, tuned.placement, tuned.inputs, ropts, nullptr);
  // Both seeds were measured and are listed with their fitness.
  ASSERT_EQ(r.result.seeds.size(), 2u);
  for (const SeedFitness& seed : r.result.seeds)
    EXPECT_EQ(seed.fitness.median_ms, seed.backend == "heavy" ? 1.0 : 1.1) << seed.backend;
  // The search's best ran on "heavy"; the graphy seed beat it side by side.
  ASSERT_EQ(r.seed_contests.size(), 1u);
  const workflow::SeedContest& c = r.seed_contests[0];
  EXPECT_EQ(c.backend, "graphy");
  EXPECT_TRUE(c.adopted);
  EXPECT_LT(c.timing.b_ms, c.timing.a_ms);
  EXPECT_EQ(c.timing.rounds, kSettings.side_by_side_min_rounds);
  EXPECT_FALSE(uses(r.result.best, "heavy"));
  EXPECT_EQ(r.result.best_fitness.median_ms, 1.1);
  EXPECT_EQ(r.result.moved_per_backend.count("heavy"), 0u);
  EXPECT_GT(r.result.moved_per_backend.at("graphy"), 0);
  EXPECT_TRUE(same_kernels(r.result.best, light_seed));
  workflow::RunOptions run;
  run.backends = ropts.backends;
  EXPECT_TRUE(workflow::verify(g, r.result.best, tuned.inputs, run).ok());

  // With a cost DB the contest's medians are stored: a later refine on it (the explorer after
  // `collage tune`) takes the same decision from them, timing nothing.
  TempDb tmp;
  workflow::RefineReport stored, reused;
  {
    CostDb db(tmp.path);
    stored = workflow::refine(g, tuned.placement, tuned.inputs, ropts, &db);
    reused = workflow::refine(g, tuned.placement, tuned.inputs, ropts, &db);
  }
  ASSERT_EQ(stored.seed_contests.size(), 1u);
  ASSERT_EQ(reused.seed_contests.size(), 1u);
  EXPECT_EQ(reused.seed_contests[0].timing.a_ms, stored.seed_contests[0].timing.a_ms);
  EXPECT_EQ(reused.seed_contests[0].timing.b_ms, stored.seed_contests[0].timing.b_ms);
  EXPECT_EQ(reused.seed_contests[0].timing.rounds, stored.seed_contests[0].timing.rounds);
  EXPECT_EQ(placement_to_json(reused.result.best, g), placement_to_json(stored.result.best, g));

  // A seed whose fitness was three times the best's (measured at another moment) is timed all
  // the same, and side by side it is the faster.
  ropts.fitness = fitness_of(3.0);
  workflow::RefineReport far = workflow::refine(g, tuned.placement, tuned.inputs, ropts, nullptr);
  ASSERT_EQ(far.seed_contests.size(), 1u);
  EXPECT_TRUE(far.seed_contests[0].adopted);
  EXPECT_TRUE(same_kernels(far.result.best, light_seed));
}

TEST_F(SeedContests, ASeedSlowerSideBySideLeavesTheBestAsItIs) {
  // "Everything on heavy" close behind a best on graphy; side by side it is far slower.
  const Placement light_seed = whole_seed(g, tuned.placement, light);
  const Placement heavy_seed = whole_seed(g, tuned.placement, slow);
  ropts.fitness = [&](const Placement& p) {
    return Cost::of_ms(same_kernels(p, light_seed) ? 1.0 : same_kernels(p, heavy_seed) ? 1.1 : 2.0);
  };
  workflow::RefineReport r = workflow::refine(g, tuned.placement, tuned.inputs, ropts, nullptr);
  ASSERT_EQ(r.seed_contests.size(), 1u);
  EXPECT_EQ(r.seed_contests[0].backend, "heavy");
  EXPECT_FALSE(r.seed_contests[0].adopted);
  EXPECT_GT(r.seed_contests[0].timing.b_ms, r.seed_contests[0].timing.a_ms);
  EXPECT_FALSE(uses(r.result.best, "heavy"));
  EXPECT_EQ(r.result.best_fitness.median_ms, 1.0);
}

TEST_F(SeedContests, AWholeLibrarySeedWithinTheMarginContestsWhatIsFinallyKept) {
  // "Everything on heavy" measured within the margin of the best: after the refine's own contests
  // it is timed once more, against what the chain keeps, and loses there too.
  const Placement light_seed = whole_seed(g, tuned.placement, light);
  const Placement heavy_seed = whole_seed(g, tuned.placement, slow);
  auto fitness_of = [&](double whole_heavy) {
    return [&, whole_heavy](const Placement& p) {
      return Cost::of_ms(same_kernels(p, light_seed) ? 1.0 : same_kernels(p, heavy_seed) ? whole_heavy : 2.0);
    };
  };
  auto contested = [](const workflow::RefineRunReport& r, const std::string& backend) {
    return std::find_if(r.library_contests.begin(), r.library_contests.end(),
                        [&](const workflow::LibraryContest& c) { return c.backend == backend; });
  };
  ropts.fitness = fitness_of(0.98 * kSettings.library_contest_margin);
  TempDb tmp;
  workflow::RefineRunReport r;
  {
    CostDb db(tmp.path);
    r = workflow::run_refine(g, tuned.placement, tuned.inputs, ropts, &db);
  }
  auto heavy = contested(r, "heavy");
  ASSERT_NE(heavy, r.library_contests.end());
  EXPECT_TRUE(heavy->mismatch.empty());
  EXPECT_FALSE(heavy->adopted);
  EXPECT_GT(heavy->timing.b_ms, heavy->timing.a_ms);
  EXPECT_FALSE(uses(r.kept, "heavy"));
  // The graphy seed, the search's best, is a rival too: against the op-level placement (kept when
  // the two ran level side by side) either may win, as light as they are.
  if (r.kept_why == workflow::KeptPlacement::Library) {
    EXPECT_EQ(r.kept_library, "graphy");
  }
  // Against the very placement it already lost to, the stored timing decides: not timed again.
  ASSERT_EQ(r.refine.seed_contests.size(), 1u);
  if (same_kernels(r.kept, r.refine.result.best)) {
    EXPECT_EQ(heavy->timing.a_ms, r.refine.seed_contests[0].timing.a_ms);
    EXPECT_EQ(heavy->timing.b_ms, r.refine.seed_contests[0].timing.b_ms);
  }

  // Measured beyond the margin, it is not a rival of the result.
  ropts.fitness = fitness_of(1.02 * kSettings.library_contest_margin);
  workflow::RefineRunReport beyond = workflow::run_refine(g, tuned.placement, tuned.inputs, ropts, nullptr);
  ASSERT_EQ(beyond.refine.seed_contests.size(), 1u);  // the refine's own contest still ran
  EXPECT_EQ(contested(beyond, "heavy"), beyond.library_contests.end());
}

// A rival that wins a contest's timing is timed again and replaces the best only if it wins each
// time; what the cost DB keeps is the deciding timing, so a later refine on it decides alike.
TEST_F(SeedContests, ARivalThatWinsIsTimedAgainAndReplacesTheBestOnlyIfItWinsAgain) {
  const Placement light_seed = whole_seed(g, tuned.placement, light);
  ASSERT_FALSE(same_kernels(light_seed, tuned.placement));
  std::vector<SideBySide> script;
  size_t timed = 0;
  auto contest = [&](std::vector<SideBySide> timings, double min_gain, CostDb* db) {
    script = std::move(timings);
    timed = 0;
    workflow::detail::ContestBench bench(g, tuned.inputs, ropts, db);
    bench.set_timer([&](Executor&, Executor&) { return script.at(timed++); });  // past the script: throws
    return bench.contest(tuned.placement, light_seed, false, min_gain);
  };
  const SideBySide faster{1.0, 0.9, 10}, slower{1.0, 1.1, 10};
  const size_t confirmations = static_cast<size_t>(kSettings.contest_confirmations);
  auto won_then = [&](const SideBySide& last) {
    std::vector<SideBySide> t(confirmations, faster);
    t.push_back(last);
    return t;
  };

  workflow::detail::ContestBench::Outcome lost = contest({slower}, 0, nullptr);
  EXPECT_FALSE(lost.rival_wins);
  EXPECT_EQ(timed, 1u);
  EXPECT_FALSE(lost.won_first.has_value());

  workflow::detail::ContestBench::Outcome overturned = contest(won_then(slower), 0, nullptr);
  EXPECT_FALSE(overturned.rival_wins);
  EXPECT_EQ(timed, confirmations + 1);
  ASSERT_TRUE(overturned.won_first.has_value());
  EXPECT_EQ(overturned.won_first->b_ms, faster.b_ms);
  EXPECT_EQ(overturned.timing.b_ms, slower.b_ms);
  EXPECT_EQ(workflow::detail::contest_times(overturned.timing, overturned.won_first),
            "0.900 ms vs 1.000 ms, again 1.100 ms vs 1.000 ms");

  workflow::detail::ContestBench::Outcome confirmed = contest(won_then(faster), 0, nullptr);
  EXPECT_TRUE(confirmed.rival_wins);
  EXPECT_EQ(timed, confirmations + 1);

  // Faster by less than the gain asked: lost, and not timed again.
  workflow::detail::ContestBench::Outcome small = contest({SideBySide{1.0, 0.995, 10}}, 0.01, nullptr);
  EXPECT_FALSE(small.rival_wins);
  EXPECT_EQ(timed, 1u);

  TempDb tmp;
  CostDb db(tmp.path);
  EXPECT_FALSE(contest(won_then(slower), 0, &db).rival_wins);
  workflow::detail::ContestBench::Outcome stored = contest({}, 0, &db);  // any timing would throw
  EXPECT_EQ(timed, 0u);
  EXPECT_FALSE(stored.rival_wins);
  EXPECT_EQ(stored.timing.b_ms, slower.b_ms);
}

// A kernel that, after its work, computes for `micros` µs more of its thread's CPU time: a library
// slow on some nodes by a known amount of work, which a loaded machine stretches like any other.
class Lingering : public Kernel {
 public:
  Lingering(std::unique_ptr<Kernel> inner, double micros) : inner_(std::move(inner)), micros_(micros) {}
  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    std::vector<Tensor> out = inner_->run(inputs, alloc);
    auto cpu_us = [] {
      timespec t{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
      return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
    };
    const double until = cpu_us() + micros_;
    while (cpu_us() < until) {
    }
    return out;
  }

 private:
  std::unique_ptr<Kernel> inner_;
  double micros_;
};

// A graph-level library of graphy's ops, `ms` slower per node of its region `slow_on` picks.
BackendSpec slow_on_a_stage(const std::string& name, double ms, std::function<bool(NodeId)> slow_on) {
  BackendSpec s = graphy();
  s.name = name;
  s.compile = [ms, slow_on](const Graph& g, const SubGraph& sub,
                            const CompileOptions&) -> std::unique_ptr<Kernel> {
    const auto slow = std::count_if(sub.node_list.begin(), sub.node_list.end(), slow_on);
    return std::make_unique<Lingering>(native::make_fused_kernel(g, sub),
                                       1000.0 * ms * static_cast<double>(slow));
  };
  return s;
}

struct NoticeRecorder : ProgressObserver {
  void on_progress(const ProgressEvent&) override {}
  void on_notice(const std::string& message) override { notices.push_back(message); }
  std::vector<std::string> notices;
};

TEST(SegmentContests, AStageMovedToTheLibraryFastThereReplacesTheBestWhenFasterSideBySide) {
  // Twelve Relus. "late" is 1 ms slow on each of the last four, "early" 3 ms on each of the first
  // eight: whole "late" (4 ms) beats whole "early" (24 ms), and "late" for the first eight with
  // "early" for the last four beats both, which no seed is. From whole "late" each move of a run
  // of two kernels halves the slow work or adds 6 ms to it: clear on a loaded machine too.
  testing::OnnxTestModel m(17);
  m.input("x", {2, 8});
  std::string prev = "x";
  for (int i = 0; i < 12; ++i) {
    const std::string out = "r" + std::to_string(i);
    m.node("Relu", {prev}, {out});
    prev = out;
  }
  m.output(prev);
  Graph g = testing::import_model(m);
  BackendSpec late = slow_on_a_stage("late", 1, [](NodeId n) { return n >= 8; });
  BackendSpec early = slow_on_a_stage("early", 3, [](NodeId n) { return n < 8; });
  workflow::TuneStepOptions topts;
  topts.backends = {&native_backend(), &late, &early};
  topts.min_time_ms = 0.1;
  topts.epsilon_ms = 0.002;
  TuneResult tuned = workflow::tune(g, topts, nullptr);
  Placement op_level = tuned.placement;  // one native kernel per node: twelve genes
  op_level.kernels.clear();
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    op_level.kernels.push_back({{{n}, "native", "Relu"}, Cost::of_ms(0.001)});
  const Placement late_seed = whole_seed(g, op_level, late);
  const Placement early_seed = whole_seed(g, op_level, early);
  workflow::RefineStepOptions ropts;
  ropts.backends = topts.backends;
  ropts.generations = 1;
  ropts.repeat = 1;
  ropts.fitness = [&](const Placement& p) {  // the seeds close, anything else far behind
    return Cost::of_ms(same_kernels(p, late_seed) ? 1.0 : same_kernels(p, early_seed) ? 1.1 : 2.0);
  };
  workflow::RefineReport r = workflow::refine(g, op_level, tuned.inputs, ropts, nullptr);
  ASSERT_EQ(r.seed_contests.size(), 1u);  // whole "early" against whole "late"
  EXPECT_FALSE(r.seed_contests[0].adopted);
  // From whole "late": each run of two kernels moved to "early"; the first four would add slow
  // work and are not kept, the last two take it away and are.
  ASSERT_EQ(r.segment_contests.size(), 6u) << "six runs, one library each to move to";
  int kept = 0;
  for (const workflow::SegmentContest& c : r.segment_contests) {
    EXPECT_EQ(c.backend, "early");
    EXPECT_EQ(c.kernels, 2u);
    EXPECT_TRUE(c.mismatch.empty()) << c.mismatch;
    EXPECT_FALSE(c.from_node.empty());
    EXPECT_EQ(c.adopted, c.timing.b_ms < c.timing.a_ms * (1 - kSettings.segment_min_gain));
    kept += c.adopted;
  }
  for (size_t i = 0; i < 4; ++i)
    EXPECT_FALSE(r.segment_contests[i].adopted) << "run " << i << ": " << r.segment_contests[i].timing.b_ms
                                                << " ms against " << r.segment_contests[i].timing.a_ms;
  EXPECT_EQ(kept, 2);
  // The best: "late" on the first eight nodes, "early" on the last four, nothing slow.
  ASSERT_EQ(r.result.best.kernels.size(), 2u);
  for (const PlacedKernel& k : r.result.best.kernels)
    for (NodeId n : k.nodes) EXPECT_EQ(k.backend, n < 8 ? "late" : "early") << "node " << n;
  EXPECT_EQ(r.result.best_fitness.median_ms, r.segment_contests.back().timing.b_ms);
  EXPECT_EQ(r.segment_moves_not_tried, 0u);
  workflow::RunOptions run;
  run.backends = ropts.backends;
  EXPECT_TRUE(workflow::verify(g, r.result.best, tuned.inputs, run).ok());

  // With no budget the segment contests try nothing and say so; the best stays whole "late".
  ropts.budget_s = 0;
  NoticeRecorder seen;
  workflow::RefineReport none = workflow::refine(g, op_level, tuned.inputs, ropts, nullptr, &seen);
  EXPECT_TRUE(none.segment_contests.empty());
  EXPECT_EQ(none.segment_moves_not_tried, 6u);
  EXPECT_TRUE(same_kernels(none.result.best, late_seed));
  EXPECT_TRUE(std::any_of(seen.notices.begin(), seen.notices.end(), [](const std::string& n) {
    return n.find("segment contests: the budget (0 s) spent, 6 moves not tried") != std::string::npos;
  }));
}

// An op-level library of graphy's ops whose kernels run the work 3000 times over.
BackendSpec slow_library() {
  BackendSpec s = heavy();
  s.name = "slowlib";
  s.kind = BackendKind::OpLevel;
  s.supports_node = nullptr;
  for (const char* op_type : {"Relu", "Neg"}) s.patterns.push_back(op(op_type));
  return s;
}

// `tuned` with costs made up so that noise cannot decide the search: every candidate 1 ms per node it
// covers (fusing saves only a dispatch), `backend`'s `factor` times that, searched again from nothing
// pinned. The measured costs of these microsecond kernels differ by less than the 2 us dispatch
// epsilon, so a search over them flips between fused native chains and single slowlib kernels.
TuneResult costed_per_node(const Graph& g, TuneResult tuned, const std::string& backend, double factor) {
  for (size_t i = 0; i < tuned.candidates.size(); ++i) {
    if (!tuned.costs[i].cost.valid()) continue;
    double per_node = tuned.candidates[i].backend == backend ? factor : 1.0;
    tuned.costs[i].cost = Cost::of_ms(per_node * static_cast<double>(tuned.candidates[i].nodes.popcount()));
  }
  search_again(g, Pins{}, tuned);
  return tuned;
}

// A fitness under which the refine keeps `op_level`: nothing else is measured, so no seed is
// contested.
FitnessFn moving_nothing(const Placement& op_level) {
  return [op_level](const Placement& p) {
    return same_kernels(p, op_level) ? Cost::of_ms(1.0) : Cost::invalid("not measured here");
  };
}

// The mixed chain tuned over native, graphy (graph-level) and slowlib (op-level, really slow).
class LibraryContests : public ::testing::Test {
 protected:
  void SetUp() override {
    workflow::TuneStepOptions topts;
    topts.backends = {&native_backend(), &light, &slow};
    topts.min_time_ms = 0.1;
    topts.epsilon_ms = 0.002;
    tuned = workflow::tune(g, topts, nullptr);
    ropts.backends = topts.backends;
    ropts.generations = 3;
    ropts.repeat = 1;
  }
  Graph g = testing::mixed_chain();
  BackendSpec light = graphy(), slow = slow_library();
  TuneResult tuned;
  workflow::RefineStepOptions ropts;
};

TEST_F(LibraryContests, RivalsAreTheFp32OpLevelLibrariesAlonePredictedCloseToTheStart) {
  ASSERT_FALSE(uses(tuned.placement, "slowlib"));  // measured 3000 times slower
  // Native alone is the op-level placement itself, slowlib alone is predicted far behind it, and
  // graphy is graph-level (the refine's seeds cover it): nothing to contest.
  EXPECT_TRUE(workflow::library_rivals(g, tuned, tuned.placement, ropts.backends).empty());

  // Slowlib costed at 0.9x native: slowlib alone is predicted ahead of native alone.
  TuneResult cheap = costed_per_node(g, tuned, "slowlib", 0.9);
  std::optional<Placement> native_alone = library_placement(g, cheap, tuned.placement, "native");
  ASSERT_TRUE(native_alone.has_value());
  Placement start = *native_alone;
  std::optional<Placement> alone = library_placement(g, cheap, start, "slowlib");
  ASSERT_TRUE(alone.has_value());
  EXPECT_TRUE(uses(*alone, "slowlib"));
  for (const PlacedKernel& k : alone->kernels) EXPECT_TRUE(k.backend == "slowlib" || k.backend == "native");
  std::vector<workflow::LibraryRival> rivals = workflow::library_rivals(g, cheap, start, ropts.backends);
  ASSERT_EQ(rivals.size(), 1u);
  EXPECT_EQ(rivals[0].backend, "slowlib");
  EXPECT_TRUE(same_kernels(rivals[0].placement, *alone));
  EXPECT_EQ(rivals[0].placement.threads, start.threads);

  // Within the margin of the start's prediction it is a rival; beyond it, not.
  start.predicted_ms = alone->predicted_ms / (kSettings.library_contest_margin - 0.02);
  EXPECT_EQ(workflow::library_rivals(g, cheap, start, ropts.backends).size(), 1u);
  start.predicted_ms = alone->predicted_ms / (kSettings.library_contest_margin + 0.02);
  EXPECT_TRUE(workflow::library_rivals(g, cheap, start, ropts.backends).empty());
  // A start measured slower than predicted is judged by its measured time, a faster one by its
  // prediction.
  const double slower_ms = alone->predicted_ms / (kSettings.library_contest_margin - 0.02);
  EXPECT_EQ(workflow::library_rivals(g, cheap, start, ropts.backends, slower_ms).size(), 1u);
  EXPECT_TRUE(workflow::library_rivals(g, cheap, start, ropts.backends, start.predicted_ms / 2).empty());

  // A pin elsewhere leaves a library alone uncoverable: no placement, no rival.
  Placement pinned = tuned.placement;
  pinned.pins.pinned[NodeId{0}] = "slowlib";
  EXPECT_FALSE(library_placement(g, cheap, pinned, "native").has_value());
  EXPECT_TRUE(library_placement(g, cheap, pinned, "slowlib").has_value());
}

TEST_F(LibraryContests, ALibraryAloneFasterSideBySideReplacesTheKeptPlacement) {
  // The additive model misjudged slowlib (costed at 0.5x native): the op-level placement runs it.
  TuneResult misjudged = costed_per_node(g, tuned, "slowlib", 0.5);
  const Placement& start = misjudged.placement;
  ASSERT_TRUE(uses(start, "slowlib"));
  std::optional<Placement> native_alone = library_placement(g, misjudged, start, "native");
  ASSERT_TRUE(native_alone.has_value());
  ropts.rivals = {{"native", *native_alone}};
  ropts.fitness = moving_nothing(start);
  workflow::RefineRunReport r = workflow::run_refine(g, start, misjudged.inputs, ropts, nullptr);
  ASSERT_EQ(r.library_contests.size(), 1u);
  const workflow::LibraryContest& c = r.library_contests[0];
  EXPECT_EQ(c.backend, "native");
  EXPECT_TRUE(c.mismatch.empty());
  EXPECT_EQ(c.timing.rounds, kSettings.side_by_side_min_rounds);
  EXPECT_LT(c.timing.b_ms, c.timing.a_ms);
  EXPECT_TRUE(c.adopted);
  EXPECT_EQ(r.kept_why, workflow::KeptPlacement::Library);
  EXPECT_EQ(r.kept_library, "native");
  EXPECT_TRUE(same_kernels(r.kept, *native_alone));
  EXPECT_NE(workflow::describe(r).find("native alone"), std::string::npos) << workflow::describe(r);
}

TEST_F(LibraryContests, ALibraryAloneSlowerSideBySideLeavesTheKeptPlacement) {
  TuneResult cheap = costed_per_node(g, tuned, "slowlib", 0.9);
  std::optional<Placement> slow_alone = library_placement(g, cheap, tuned.placement, "slowlib");
  ASSERT_TRUE(slow_alone.has_value());
  ASSERT_TRUE(uses(*slow_alone, "slowlib"));
  ropts.rivals = {{"slowlib", *slow_alone}};
  ropts.fitness = moving_nothing(tuned.placement);
  workflow::RefineRunReport r = workflow::run_refine(g, tuned.placement, tuned.inputs, ropts, nullptr);
  ASSERT_EQ(r.library_contests.size(), 1u);
  EXPECT_FALSE(r.library_contests[0].adopted);
  EXPECT_GT(r.library_contests[0].timing.b_ms, r.library_contests[0].timing.a_ms);
  EXPECT_NE(r.kept_why, workflow::KeptPlacement::Library);
  EXPECT_TRUE(same_kernels(r.kept, tuned.placement));
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
