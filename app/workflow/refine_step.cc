// The workflow's refine step (workflow.h): the graph-level search, its contests against the
// search's best, the refined placement against the op-level one, and the final contests that
// decide what is kept (docs/design.md, "Contests").
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "app/workflow/refine_contests.h"
#include "app/workflow/remote_fitness.h"
#include "app/workflow/workflow.h"
#include "core/ir/accuracy.h"
#include "core/ir/settings.h"
#include "core/search/placement_timing.h"
#include "core/search/refine.h"
#include "core/tuning/measure_worker.h"

namespace collage::workflow {

using detail::compile_options;
using detail::contest_seeds;
using detail::contest_segments;
using detail::ContestBench;
using detail::or_all;
using detail::with_held_out;

namespace {

using Clock = std::chrono::steady_clock;

// "64 nodes: 27 Conv, 27 BatchNormalization, 10 Clip from 'conv1' to 'features.12.conv'"
std::string describe_region(const Graph& graph, const PlacedKernel& kernel) {
  std::map<std::string, int> ops;
  for (NodeId n : kernel.nodes) ++ops[graph.node(n).op_type];
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [op, count] : ops) by_count.emplace_back(-count, op);
  std::sort(by_count.begin(), by_count.end());
  std::string text = std::to_string(kernel.nodes.size()) + (kernel.nodes.size() == 1 ? " node:" : " nodes:");
  for (size_t i = 0; i < by_count.size(); ++i)
    text += (i ? ", " : " ") + std::to_string(-by_count[i].first) + " " + by_count[i].second;
  if (!kernel.nodes.empty())
    text += " from '" + graph.node(kernel.nodes.front()).name + "' to '" +
            graph.node(kernel.nodes.back()).name + "'";
  return text;
}

}  // namespace

RefineReport refine(const Graph& graph, const Placement& op_level, const std::vector<Tensor>& inputs,
                    const RefineStepOptions& options, CostDb* db, ProgressObserver* observer) {
  const std::vector<const BackendSpec*>& backends = or_all(options.backends);
  std::vector<const BackendSpec*> graph_level = graph_level_backends(backends);
  if (graph_level.empty())
    throw Error(ErrorKind::InvalidInput,
                "refining needs a graph-level backend (onednn-region, xnnpack-graph, onnxruntime-region)");
  set_backend_threads(options.threads);
  RefineOptions ropts;
  ropts.population = options.population;
  ropts.max_generations = options.generations;
  ropts.patience = options.patience;
  ropts.time_budget_s = options.budget_s;
  ropts.seed = options.seed;
  RefineReport r;
  // Measured fitness runs in a worker like candidate measuring: a region library that
  // crashes or hangs on one genome costs that genome (an invalid fitness), not the refine.
  std::unique_ptr<MeasureWorker> own_worker;
  MeasureWorker* worker = nullptr;
  FitnessFn fitness = options.fitness;
  if (!fitness && options.isolated && !default_worker_command().empty()) {
    if (options.shared_worker) {
      worker = options.shared_worker;
      worker->select(options.shared_bucket, graph, inputs, options.threads);
    } else {
      MeasureOptions mopts;
      mopts.threads = options.threads;
      mopts.worker.command = default_worker_command();
      own_worker = std::make_unique<MeasureWorker>(graph, inputs, mopts);
      worker = own_worker.get();
    }
    fitness = [worker, &r, runs = options.fitness_runs, observer](const Placement& p) {
      std::vector<KernelGroup> kernels(p.kernels.begin(), p.kernels.end());
      Cost cost;
      try {
        cost = worker->fitness(kernels, runs, observer);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Cancelled) throw;
        return Cost::invalid("cancelled while measured", CostStatus::NotMeasured);  // refine stops next
      }
      if (cost.status == CostStatus::Lost) r.lost_evaluations.push_back(cost.invalid_reason);
      return cost;
    };
  } else if (!fitness) {
    fitness =
        measured_fitness(graph, backends, compile_options(options.threads), inputs, options.fitness_runs);
  }
  if (options.remote && !options.fitness) {
    if (!db || !db->is_shared())
      throw Error(ErrorKind::InvalidInput,
                  "remote refining needs a shared cost DB (--cost-db postgresql://...), not " +
                      (db ? "the SQLite file '" + db->path() + "'" : std::string("no cost DB")));
    if (FitnessFn remote = remote_fitness(graph, inputs, options.fitness_runs, options.threads, *db,
                                          options.worker_lease_s, fitness, observer))
      fitness = std::move(remote);
  }
  auto t0 = Clock::now();
  r.result = refine_placement(graph, op_level, graph_level,
                              cached_fitness(fitness, db, graph, options.threads), ropts, observer);
  ContestBench bench(graph, inputs, options, db);
  if (!r.result.cancelled) contest_seeds(graph, op_level, bench, r, observer);
  if (!r.result.cancelled) contest_segments(graph, op_level, graph_level, bench, options, r, observer);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const RefineResult& refined = r.result;
  auto short_of_best = [&](const GenerationFitness& g) {
    return refined.best_fitness.valid() && (!g.best_ms || *g.best_ms > refined.best_fitness.median_ms);
  };
  while (r.best_generation + 1 < static_cast<int>(refined.history.size()) &&
         short_of_best(refined.history[static_cast<size_t>(r.best_generation)]))
    ++r.best_generation;
  std::set<NodeId> moved_nodes;
  for (size_t i = 0; i < refined.genes.size(); ++i)
    if (refined.best_genome[i])
      for (NodeId n : op_level.kernels[refined.genes[i].kernel].nodes) moved_nodes.insert(n);
  for (const PlacedKernel& k : refined.best.kernels)
    if (std::any_of(graph_level.begin(), graph_level.end(),
                    [&](const BackendSpec* b) { return b->name == k.backend; })) {
      bool moved =
          std::any_of(k.nodes.begin(), k.nodes.end(), [&](NodeId n) { return moved_nodes.count(n) != 0; });
      r.regions.push_back({k.backend, moved, describe_region(graph, k)});
    }
  return r;
}

SideBySideReport compare_side_by_side(const Graph& graph, const Placement& op_level,
                                      const RefineReport& refined, const std::vector<Tensor>& inputs,
                                      const SideBySideOptions& options) {
  SideBySideReport r;
  if (refined.result.moved() == 0) return r;
  set_backend_threads(options.threads);
  r.compared = true;
  r.timing = compare_placements(graph, op_level, refined.result.best, or_all(options.backends),
                                compile_options(options.threads), inputs,
                                std::max(options.repeat, kSettings.side_by_side_min_rounds));
  r.keep_refined = r.timing.b_ms < r.timing.a_ms;
  return r;
}

std::vector<LibraryRival> library_rivals(const Graph& graph, const TuneResult& tuned, const Placement& start,
                                         const std::vector<const BackendSpec*>& backends,
                                         double start_measured_ms) {
  // A start that ran slower than predicted is measured against: a library alone predicted
  // within the margin of what the start really takes may well beat it.
  const double reference_ms = std::max(start.predicted_ms, start_measured_ms);
  std::vector<LibraryRival> rivals;
  for (const BackendSpec* b : backends_for_threads(search_backends(backends), start.threads)) {
    if (b->kind == BackendKind::GraphLevel || b->precision != Precision::Float32) continue;
    std::optional<Placement> alone = library_placement(graph, tuned, start, b->name);
    if (!alone || same_kernels(*alone, start) ||
        alone->predicted_ms > reference_ms * kSettings.library_contest_margin ||
        std::any_of(rivals.begin(), rivals.end(),
                    [&](const LibraryRival& r) { return same_kernels(r.placement, *alone); }))
      continue;
    rivals.push_back({b->name, std::move(*alone)});
  }
  return rivals;
}

namespace {

// The additive model's choice against each library's own kernels, end to end: a rival is
// verified, then timed against what the chain keeps so far, and kept when faster.
void contest_libraries(const Graph& graph, const std::vector<Tensor>& inputs,
                       const RefineStepOptions& options, CostDb* db, RefineRunReport& r,
                       ProgressObserver* observer) {
  ContestBench bench(graph, inputs, options, db);
  for (const LibraryRival& rival : options.rivals) {
    if (observer && observer->cancel_requested()) return;
    if (same_kernels(rival.placement, r.kept)) continue;
    LibraryContest contest;
    contest.backend = rival.backend;
    ContestBench::Outcome outcome = bench.contest(r.kept, rival.placement, true);
    contest.mismatch = outcome.mismatch;
    if (contest.mismatch.empty()) {
      contest.timing = outcome.timing;
      contest.won_first = outcome.won_first;
      contest.adopted = outcome.rival_wins;
    }
    if (contest.adopted) {
      r.kept = rival.placement;
      r.kept_why = KeptPlacement::Library;
      r.kept_library = rival.backend;
      if (observer) observer->on_best_placement(r.kept, contest.timing.b_ms);
    }
    if (observer) {
      if (!contest.mismatch.empty())
        observer->on_notice(rival.backend + " alone disagrees with the native reference (" +
                            contest.mismatch + "): not timed");
      else
        observer->on_notice(
            rival.backend + " alone against the kept placement, alternated: " +
            detail::contest_times(contest.timing, contest.won_first) +
            (contest.adopted ? " (the library alone is kept)" : " (the kept placement stays)"));
    }
    r.library_contests.push_back(std::move(contest));
  }
}

// The whole-library seeds the refine measured within kSettings.library_contest_margin of its best,
// last among the rivals. A segment move or the op-level placement kept after the seed contests can
// leave a seed behind (ONNX Runtime's whole graph); contested against what is finally kept, the result
// is never slower than that library alone except by what the contest measures. With a cost DB, a
// seed already contested against the same placement is decided by that pair's stored timing.
std::vector<LibraryRival> seed_rivals(const Graph& graph, const Placement& op_level,
                                      const RefineResult& result) {
  std::vector<LibraryRival> rivals;
  if (!result.best_fitness.valid()) return rivals;
  for (const SeedFitness& seed : result.seeds) {
    if (!seed.fitness.valid() ||
        seed.fitness.median_ms > result.best_fitness.median_ms * kSettings.library_contest_margin)
      continue;
    rivals.push_back(
        {seed.backend, decode_genome(graph, op_level, result.genes, seed.genome)});  // op-level's budget
  }
  return rivals;
}

}  // namespace

RefineRunReport run_refine(const Graph& graph, const Placement& op_level, const std::vector<Tensor>& inputs,
                           const RefineStepOptions& options, CostDb* db, ProgressObserver* observer) {
  RefineStepOptions ropts = options;
  ropts.backends = search_backends(options.backends);
  RefineRunReport r;
  r.refine = refine(graph, op_level, inputs, ropts, db, observer);
  r.refine.result.best.accuracy = op_level.accuracy;  // held to the budget the op-level one was tuned under
  for (LibraryRival& seed : seed_rivals(graph, op_level, r.refine.result))
    ropts.rivals.push_back(std::move(seed));
  RunOptions run;
  run.backends = ropts.backends;
  run.threads = options.threads;
  run.repeat = options.repeat;
  if (!op_level.accuracy.empty())
    run.accuracy = with_margin(parse_accuracy(op_level.accuracy), kSettings.accuracy_margin);
  r.refined_run = verify_and_time(graph, r.refine.result.best, inputs, run);
  std::optional<HeldOutDraw> draw;
  r.refined_run.verify =
      with_held_out(graph, r.refine.result.best, std::move(r.refined_run.verify), run, draw);
  r.kept = op_level;
  if (!r.refined_run.verify.ok()) {
    // Without a budget a disagreeing kernel is a bug to report; under one, the genetic search
    // weighs time alone, so a mix of int8 regions can miss the budget: the op-level placement
    // stays, and the libraries still contest it.
    r.kept_why = run.accuracy.enabled() ? KeptPlacement::OpLevelOverBudget : KeptPlacement::OpLevelMismatch;
    if (r.kept_why == KeptPlacement::OpLevelOverBudget)
      contest_libraries(graph, inputs, ropts, db, r, observer);
    return r;
  }
  SideBySideOptions sopts;
  sopts.backends = ropts.backends;
  sopts.threads = options.threads;
  sopts.repeat = options.repeat;
  r.side_by_side = compare_side_by_side(graph, op_level, r.refine, inputs, sopts);
  if (!r.side_by_side.compared) {
    r.kept_why = KeptPlacement::OpLevelNothingMoved;
  } else if (!r.side_by_side.keep_refined) {
    r.kept_why = KeptPlacement::OpLevelNotFaster;
  } else {
    r.kept_why = KeptPlacement::Refined;
    r.kept = r.refine.result.best;
  }
  contest_libraries(graph, inputs, ropts, db, r, observer);
  return r;
}

std::string describe(const RefineRunReport& report) {
  char line[256] = "";
  switch (report.kept_why) {
    case KeptPlacement::Refined:
      return "keeping the refined placement";
    case KeptPlacement::OpLevelNothingMoved:
      return "the refined placement moved nothing: keeping the op-level one";
    case KeptPlacement::OpLevelNotFaster:
      std::snprintf(line, sizeof line,
                    "the refined placement is not faster when re-measured (%.3f vs %.3f ms): keeping the "
                    "op-level one",
                    report.side_by_side.timing.b_ms, report.side_by_side.timing.a_ms);
      return line;
    case KeptPlacement::OpLevelMismatch:
      return "the refined placement disagrees with the native reference (" +
             report.refined_run.verify.mismatch + "): keeping the op-level one";
    case KeptPlacement::OpLevelOverBudget:
      return "the refined placement misses the accuracy budget (" + report.refined_run.verify.mismatch +
             "): keeping the op-level one";
    case KeptPlacement::Library:
      for (const LibraryContest& c : report.library_contests)
        if (c.adopted && c.backend == report.kept_library)
          std::snprintf(
              line, sizeof line,
              "%s alone (its kernels, native for the rest) is faster side by side (%.3f vs %.3f ms): "
              "keeping it",
              c.backend.c_str(), c.timing.b_ms, c.timing.a_ms);
      return line;
  }
  return "";
}

}  // namespace collage::workflow
