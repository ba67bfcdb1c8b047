#include "app/workflow/refine_contests.h"

#include <algorithm>
#include <cstdio>

#include "core/search/placement_timing.h"
#include "core/search/refine.h"

namespace collage::workflow::detail {

// The contest's two medians from the cost DB, or timed and stored: a later refine on the same
// DB (the explorer after `collage tune`) takes the same decision without timing it again.
SideBySide contest_timing(const Graph& graph, const Placement& best, const Placement& seed,
                          const std::vector<Tensor>& inputs, const RefineStepOptions& options, CostDb* db) {
  const std::string model = model_fingerprint(graph);
  const std::string pair = "contest|" + placement_fitness_key(best, model, options.threads).signature +
                           "|vs|" + placement_fitness_key(seed, model, options.threads).signature;
  const CostKey best_key{pair + "|best", options.threads, device_fingerprint()};
  const CostKey seed_key{pair + "|seed", options.threads, device_fingerprint()};
  if (db) {
    auto a = db->find(best_key), b = db->find(seed_key);
    if (a && b && a->cost.valid() && b->cost.valid())
      return {a->cost.median_ms, b->cost.median_ms, a->cost.samples};
  }
  SideBySide t =
      compare_placements(graph, best, seed, or_all(options.backends), compile_options(options.threads),
                         inputs, std::max(options.repeat, kSettings.side_by_side_min_rounds));
  if (db) {
    auto record = [&](const CostKey& key, double ms, const char* side) {
      CostRecord r;
      r.key = key;
      r.backend = "seed-contest";
      r.backend_version = "1";
      r.label = side;
      r.cost = Cost::of_ms(ms);
      r.cost.samples = t.rounds;
      return r;
    };
    db->put_all({record(best_key, t.a_ms, "the search's best"), record(seed_key, t.b_ms, "the seed")});
  }
  return t;
}

void contest_seeds(const Graph& graph, const Placement& op_level, const std::vector<Tensor>& inputs,
                   const RefineStepOptions& options, CostDb* db, RefineReport& r,
                   ProgressObserver* observer) {
  RefineResult& result = r.result;
  const std::vector<SeedFitness> seeds = result.seeds;
  const Genome searched = result.best_genome;  // a seed that was the search's best has had its turn
  for (const SeedFitness& seed : seeds) {
    if (seed.genome == searched || seed.genome == result.best_genome || !seed.fitness.valid() ||
        !result.best_fitness.valid() ||
        seed.fitness.median_ms > result.best_fitness.median_ms * kSettings.seed_contest_margin)
      continue;
    if (observer && observer->cancel_requested()) return;
    Placement whole = decode_genome(graph, op_level, result.genes, seed.genome);
    if (same_kernels(whole, result.best)) continue;  // another genome of the same placement
    SeedContest contest;
    contest.backend = seed.backend;
    contest.timing = contest_timing(graph, result.best, whole, inputs, options, db);
    contest.adopted = contest.timing.b_ms < contest.timing.a_ms;
    if (contest.adopted) {
      adopt_genome(graph, op_level, result, seed.genome, seed.fitness);
      if (observer) observer->on_best_placement(result.best, seed.fitness.median_ms);
    }
    if (observer) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "whole-%s seed against the search's best, alternated: %.3f ms vs %.3f ms (%s)",
                    seed.backend.c_str(), contest.timing.b_ms, contest.timing.a_ms,
                    contest.adopted ? "the seed is kept" : "the best stays");
      observer->on_notice(line);
    }
    r.seed_contests.push_back(contest);
  }
}

void contest_segments(const Graph& graph, const Placement& op_level,
                      const std::vector<const BackendSpec*>& graph_level, const std::vector<Tensor>& inputs,
                      const RefineStepOptions& options, CostDb* db, RefineReport& r,
                      ProgressObserver* observer) {
  RefineResult& result = r.result;
  if (!result.best_fitness.valid()) return;
  std::vector<const BackendSpec*> libraries;  // one far behind over the whole model is not tried on a stage
  for (const BackendSpec* b : graph_level)
    if (std::any_of(result.seeds.begin(), result.seeds.end(), [&](const SeedFitness& seed) {
          return seed.backend == b->name && seed.fitness.valid() &&
                 seed.fitness.median_ms <= result.best_fitness.median_ms * kSettings.seed_contest_margin;
        }))
      libraries.push_back(b);
  RunOptions run;
  run.backends = options.backends;
  run.threads = options.threads;
  for (const auto& [begin, end] : refine_segments(graph, op_level, result.genes, kSettings.refine_segments)) {
    for (const BackendSpec* b : libraries) {
      Genome move = result.best_genome;
      for (size_t i = begin; i < end; ++i) {
        const std::vector<std::string>& choices = result.genes[i].choices;
        auto it = std::find(choices.begin(), choices.end(), b->name);
        if (it != choices.end()) move[i] = static_cast<uint8_t>(it - choices.begin() + 1);
      }
      if (move == result.best_genome) continue;
      Placement moved = decode_genome(graph, op_level, result.genes, move);
      if (same_kernels(moved, result.best)) continue;
      if (observer && observer->cancel_requested()) return;
      SegmentContest contest;
      contest.backend = b->name;
      contest.kernels = end - begin;
      contest.from_node = graph.node(op_level.kernels[result.genes[begin].kernel].nodes.front()).name;
      contest.to_node = graph.node(op_level.kernels[result.genes[end - 1].kernel].nodes.back()).name;
      try {
        contest.mismatch = verify(graph, moved, inputs, run).mismatch;
        if (contest.mismatch.empty()) {
          contest.timing = contest_timing(graph, result.best, moved, inputs, options, db);
          contest.adopted = contest.timing.b_ms < contest.timing.a_ms * (1 - kSettings.segment_min_gain);
        }
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Unsupported) throw;
        contest.mismatch = std::string("a region cannot be built: ") + e.what();
      }
      if (contest.adopted) {
        adopt_genome(graph, op_level, result, move, Cost::of_ms(contest.timing.b_ms));
        if (observer) observer->on_best_placement(result.best, contest.timing.b_ms);
      }
      if (observer) {
        char times[120];
        std::snprintf(times, sizeof times, ": %.3f ms vs %.3f ms (%s)", contest.timing.b_ms,
                      contest.timing.a_ms, contest.adopted ? "the move is kept" : "the best stays");
        observer->on_notice(
            "segment '" + contest.from_node + "' to '" + contest.to_node + "' (" +
            std::to_string(contest.kernels) + " kernels) on " + b->name + " against the best, alternated" +
            (contest.mismatch.empty() ? std::string(times) : ": not timed, " + contest.mismatch));
      }
      r.segment_contests.push_back(std::move(contest));
    }
  }
}

}  // namespace collage::workflow::detail
