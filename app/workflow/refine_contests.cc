#include "app/workflow/refine_contests.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/ir/accuracy.h"
#include "core/ir/settings.h"
#include "core/search/placement_timing.h"
#include "core/search/refine.h"

namespace collage::workflow::detail {

ContestBench::ContestBench(const Graph& graph, const std::vector<Tensor>& inputs,
                           const RefineStepOptions& options, CostDb* db)
    : graph_(graph), inputs_(inputs), options_(options), db_(db), model_(model_fingerprint(graph)) {}

ContestBench::~ContestBench() = default;

ContestBench::Outcome ContestBench::contest(const Placement& best, const Placement& rival, bool verify_rival,
                                            double min_gain) {
  Outcome out;
  auto wins = [&](const SideBySide& t) { return t.b_ms < t.a_ms * (1 - min_gain); };
  const std::string best_signature = placement_fitness_key(best, model_, options_.threads).signature;
  // "c2": the stored timing is the deciding one, after any confirmation (earlier keys stored a
  // single timing, whose win may not hold).
  const std::string pair = "contest|c2|" + best_signature + "|vs|" +
                           placement_fitness_key(rival, model_, options_.threads).signature;
  const CostKey best_key{pair + "|best", options_.threads, device_fingerprint()};
  const CostKey rival_key{pair + "|seed", options_.threads, device_fingerprint()};
  if (db_) {
    auto a = db_->find(best_key), b = db_->find(rival_key);
    if (a && b && a->cost.valid() && b->cost.valid()) {
      out.timing = {a->cost.median_ms, b->cost.median_ms, a->cost.samples};
      out.rival_wins = wins(out.timing);  // the stored timing is the deciding one
      return out;
    }
  }
  auto compile = [&](const Placement& p) {
    CompileOptions turns = compile_options(options_.threads);
    turns.beside_others = true;  // timed in turns with the other side
    return std::make_unique<Executor>(graph_, placement_steps(graph_, p, or_all(options_.backends), turns));
  };
  std::unique_ptr<Executor> rival_run;
  std::vector<Tensor> got;
  try {
    rival_run = compile(rival);
    got = rival_run->run(inputs_);  // also its warm-up
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported) throw;
    out.mismatch = std::string("a region cannot be built: ") + e.what();
    return out;
  }
  // Under a budget every rival is verified: a whole int8 region's seed, timed alone, could win
  // its contest and then miss the budget.
  if (verify_rival || !rival.accuracy.empty()) {
    if (!reference_) reference_ = native_reference(graph_, inputs_);
    RunOptions run;
    run.backends = options_.backends;
    run.threads = options_.threads;
    // Under a budget, held to what run_refine then holds the refined placement to: the budget with
    // its margin, on these inputs and on the held-out draw. A rival that only passed the bare
    // budget here could win its contest and then fail that check.
    if (!rival.accuracy.empty())
      run.accuracy = with_margin(parse_accuracy(rival.accuracy), kSettings.accuracy_margin);
    VerifyReport verified = verify_outputs(graph_, rival, std::move(got), *reference_, run);
    if (verified.ok() && run.accuracy.enabled()) {
      if (!held_out_) held_out_ = held_out_draw(graph_);
      verified = check_held_out(graph_, rival, std::move(verified), *rival_run, *held_out_, run);
    }
    out.mismatch = verified.mismatch;
    if (!out.mismatch.empty()) return out;
  }
  if (!best_ || best_signature_ != best_signature) {
    best_.reset();  // one compiled best at a time
    best_ = compile(best);
    best_->run(inputs_);
    best_signature_ = best_signature;
  }
  auto time_once = [&] {
    return timer_ ? timer_(*best_, *rival_run)
                  : compare_executors(*best_, *rival_run, inputs_,
                                      std::max(options_.repeat, kSettings.side_by_side_min_rounds),
                                      kSettings.contest_give_up_rounds);
  };
  out.timing = time_once();
  out.rival_wins = wins(out.timing);
  for (int i = 0; out.rival_wins && i < kSettings.contest_confirmations; ++i) {
    if (!out.won_first) out.won_first = out.timing;
    out.timing = time_once();
    out.rival_wins = wins(out.timing);
  }
  if (db_) {
    auto record = [&](const CostKey& key, double ms, const char* side) {
      CostRecord r;
      r.key = key;
      r.backend = "seed-contest";
      r.backend_version = "1";
      r.label = side;
      r.cost = Cost::of_ms(ms);
      r.cost.samples = out.timing.rounds;
      return r;
    };
    db_->put_all({record(best_key, out.timing.a_ms, "the search's best"),
                  record(rival_key, out.timing.b_ms, "the seed")});
  }
  return out;
}

std::string contest_times(const SideBySide& timing, const std::optional<SideBySide>& won_first) {
  char text[120];
  std::snprintf(text, sizeof text, "%.3f ms vs %.3f ms", timing.b_ms, timing.a_ms);
  if (!won_first) return text;
  char first[64];
  std::snprintf(first, sizeof first, "%.3f ms vs %.3f ms, again ", won_first->b_ms, won_first->a_ms);
  return first + std::string(text);
}

void contest_seeds(const Graph& graph, const Placement& op_level, ContestBench& bench, RefineReport& r,
                   ProgressObserver* observer) {
  RefineResult& result = r.result;
  const std::vector<SeedFitness> seeds = result.seeds;
  const Genome searched = result.best_genome;  // a seed that was the search's best has had its turn
  for (const SeedFitness& seed : seeds) {
    if (seed.genome == searched || seed.genome == result.best_genome || !seed.fitness.valid() ||
        !result.best_fitness.valid())
      continue;
    if (observer && observer->cancel_requested()) return;
    Placement whole = decode_genome(graph, op_level, result.genes, seed.genome);
    if (same_kernels(whole, result.best)) continue;  // another genome of the same placement
    SeedContest contest;
    contest.backend = seed.backend;
    ContestBench::Outcome outcome = bench.contest(result.best, whole, false);
    if (!outcome.mismatch.empty()) {  // a region the library refuses (it had no fitness), or over the budget
      if (observer && !whole.accuracy.empty())
        observer->on_notice("whole-" + seed.backend + " seed against the search's best: not timed (" +
                            outcome.mismatch + ")");
      continue;
    }
    contest.timing = outcome.timing;
    contest.won_first = outcome.won_first;
    contest.adopted = outcome.rival_wins;
    if (contest.adopted) {
      adopt_genome(graph, op_level, result, seed.genome, seed.fitness);
      if (observer) observer->on_best_placement(result.best, seed.fitness.median_ms);
    }
    if (observer)
      observer->on_notice("whole-" + seed.backend + " seed against the search's best, alternated: " +
                          contest_times(contest.timing, contest.won_first) +
                          (contest.adopted ? " (the seed is kept)" : " (the best stays)"));
    r.seed_contests.push_back(contest);
  }
}

void contest_segments(const Graph& graph, const Placement& op_level,
                      const std::vector<const BackendSpec*>& graph_level, ContestBench& bench,
                      const RefineStepOptions& options, RefineReport& r, ProgressObserver* observer) {
  RefineResult& result = r.result;
  if (!result.best_fitness.valid()) return;
  std::vector<const BackendSpec*> libraries;  // one far behind over the whole model is not tried on a stage
  for (const BackendSpec* b : graph_level)
    if (std::any_of(result.seeds.begin(), result.seeds.end(), [&](const SeedFitness& seed) {
          return seed.backend == b->name && seed.fitness.valid() &&
                 seed.fitness.median_ms <= result.best_fitness.median_ms * kSettings.segment_library_margin;
        }))
      libraries.push_back(b);
  const auto start = std::chrono::steady_clock::now();
  auto spent_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
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
      if (spent_s() > options.budget_s) {
        ++r.segment_moves_not_tried;
        continue;
      }
      SegmentContest contest;
      contest.backend = b->name;
      contest.kernels = end - begin;
      contest.from_node = graph.node(op_level.kernels[result.genes[begin].kernel].nodes.front()).name;
      contest.to_node = graph.node(op_level.kernels[result.genes[end - 1].kernel].nodes.back()).name;
      ContestBench::Outcome outcome = bench.contest(result.best, moved, true, kSettings.segment_min_gain);
      contest.mismatch = outcome.mismatch;
      if (contest.mismatch.empty()) {
        contest.timing = outcome.timing;
        contest.won_first = outcome.won_first;
        contest.adopted = outcome.rival_wins;
      }
      if (contest.adopted) {
        adopt_genome(graph, op_level, result, move, Cost::of_ms(contest.timing.b_ms));
        if (observer) observer->on_best_placement(result.best, contest.timing.b_ms);
      }
      if (observer) {
        const std::string times = ": " + contest_times(contest.timing, contest.won_first) +
                                  (contest.adopted ? " (the move is kept)" : " (the best stays)");
        observer->on_notice("segment '" + contest.from_node + "' to '" + contest.to_node + "' (" +
                            std::to_string(contest.kernels) + " kernels) on " + b->name +
                            " against the best, alternated" +
                            (contest.mismatch.empty() ? times : ": not timed, " + contest.mismatch));
      }
      r.segment_contests.push_back(std::move(contest));
    }
  }
  if (observer && r.segment_moves_not_tried)
    observer->on_notice("segment contests: the budget (" +
                        std::to_string(static_cast<int>(options.budget_s)) + " s) spent, " +
                        std::to_string(r.segment_moves_not_tried) + " move" +
                        (r.segment_moves_not_tried == 1 ? "" : "s") + " not tried");
}

}  // namespace collage::workflow::detail
