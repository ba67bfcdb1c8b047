// `collage tune`: arguments, the workflow (app/workflow: tune, verify, time, refine,
// compare side by side), and its reports printed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/model_loading.h"
#include "app/workflow/workflow.h"
#include "backends/registry.h"
#include "core/backend_api/kernel_signature.h"
#include "core/search/placement_buckets.h"

namespace collage::cli {

std::string ms_or_none(std::optional<double> ms) {
  if (!ms) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", *ms);
  return buf;
}

std::string refine_generation_line(const ProgressEvent& e) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "refining: generation %zu, best %s, mean %s, %zu evaluations, %.1f s",
                e.done, ms_or_none(e.best_ms).c_str(), ms_or_none(e.mean_ms).c_str(), e.evaluations,
                e.elapsed_ms / 1000);
  return buf;
}

namespace {

// "body 'else_branch' of '/If': 4 kernels (onednn 2, native 2), predicted 0.120 ms a run", nested
// bodies indented under theirs.
void print_body_placements(const Placement& placement, const std::string& indent) {
  for (const BodyPlacement& b : placement.bodies) {
    std::printf("%sbody '%s' of '%s': %s\n", indent.c_str(), b.body.c_str(), b.node.c_str(),
                placement_summary(b.placement).c_str());
    print_body_placements(b.placement, indent + "  ");
  }
}

// Ctrl+C: the first one asks the work to stop (measuring ends with an error, keeping the
// measured costs in the DB; refining ends with the best placement so far, which is still
// verified and written); the handler then resets itself, so a second Ctrl+C kills.
volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int) {
  g_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

// A one-line progress bar on stderr (a terminal redraws it; logs get one line per update).
class ConsoleProgress : public ProgressObserver {
 public:
  // log_costs: one line per measured cost, written after the cost DB committed it ("again":
  // a close contest's new cost, replacing the one stored before).
  ConsoleProgress(bool log_costs, bool stored) : log_costs_(log_costs), stored_(stored) {}
  bool cancel_requested() const override { return g_interrupted != 0; }
  void on_candidates(const std::vector<Candidate>& candidates) override { candidates_ = candidates; }
  void on_measured(size_t index, const MeasuredCandidate& result) override {
    if (result.from_cache) return;
    const Candidate& c = candidates_.at(index);
    if (log_costs_) {
      std::string cost = result.cost.valid() ? std::to_string(result.cost.median_ms) + " ms (" +
                                                   std::to_string(result.cost.samples) + " samples)"
                                             : "invalid: " + result.cost.invalid_reason;
      std::fprintf(stderr, "%s%s %s %s (nodes %s): %s; signature %016llx\n", tty_ ? "\r" : "",
                   stored_ ? (result.remeasured ? "cost stored again:" : "cost stored:")
                           : (result.remeasured ? "cost measured again:" : "cost measured:"),
                   c.backend.c_str(), c.label.c_str(), describe_nodes(node_ids(c.nodes)).c_str(),
                   cost.c_str(), signature_hash(result.signature));
      std::fflush(stderr);
    }
    // A worker lost to a candidate is news (a library bug on this shape); routine refusals are not.
    if (result.cost.status != CostStatus::Lost) return;
    std::fprintf(stderr, "%scandidate %s %s (nodes %s): %s; the tune goes on without it\n", tty_ ? "\r" : "",
                 c.backend.c_str(), c.label.c_str(), describe_nodes(node_ids(c.nodes)).c_str(),
                 result.cost.invalid_reason.c_str());
  }
  void on_notice(const std::string& message) override {
    std::fprintf(stderr, "%s%s\n", tty_ ? "\r" : "", message.c_str());
    std::fflush(stderr);
  }
  void on_progress(const ProgressEvent& e) override {
    if (e.stage == ProgressEvent::Stage::RefineEvaluation) {  // a terminal shows each measurement in place
      if (tty_)
        std::fprintf(stderr, "\rrefining: evaluation %zu (best %s)", e.done, ms_or_none(e.best_ms).c_str());
      return;
    }
    if (e.stage == ProgressEvent::Stage::Refine) {  // one line per generation, terminal or log
      std::fprintf(stderr, "%s%s\n", tty_ ? "\r" : "", refine_generation_line(e).c_str());
      return;
    }
    if (!tty_) {  // logs: one line per 10% instead of a redrawn bar
      if (e.stage != ProgressEvent::Stage::Measure || e.total == 0) return;
      size_t decile = 10 * e.done / e.total;
      if (decile == last_decile_) return;
      last_decile_ = decile;
      std::fprintf(stderr, "measuring: %zu/%zu kernels (%s)\n", e.done, e.total, e.message.c_str());
      return;
    }
    if (e.stage == ProgressEvent::Stage::Measure) {
      if (e.total == 0) return;
      int width = 30, filled = static_cast<int>(width * e.done / e.total);
      std::fprintf(stderr, "\rmeasuring [%s%s] %zu/%zu %-40.40s",
                   std::string(static_cast<size_t>(filled), '#').c_str(),
                   std::string(static_cast<size_t>(width - filled), '.').c_str(), e.done, e.total,
                   e.message.c_str());
      if (e.done == e.total) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "\rsearching: %zu states expanded, %.1f s", e.done, e.elapsed_ms / 1000);
    }
    std::fflush(stderr);
  }

 private:
  bool log_costs_ = false, stored_ = false;
  // A short name for a kernel signature (they run to kilobytes): its 64-bit FNV-1a hash.
  static unsigned long long signature_hash(const std::string& signature) { return fnv1a64(signature); }
  static std::string describe_nodes(const std::vector<NodeId>& ids) {
    std::string text;
    for (NodeId n : ids) text += (text.empty() ? "" : ",") + std::to_string(n);
    return text;
  }

  bool tty_ = isatty(fileno(stderr)) != 0;
  size_t last_decile_ = SIZE_MAX;
  std::vector<Candidate> candidates_;
};

void print_verification(const workflow::VerifyReport& verify) {
  std::printf("verified against the native reference: %s (max abs error %.3g)\n",
              verify.ok() ? "ok" : verify.mismatch.c_str(), verify.max_abs_error);
  for (const std::string& line : verify.accuracy) std::printf("  accuracy %s\n", line.c_str());
}

// --pin / --forbid against one bucket's graph (node names are the same in every bucket).
Pins parse_pins(const Args& args, const Graph& graph) {
  Pins pins;
  for (const std::string& spec : args.all("--pin")) {
    auto [node, backend] = split_assignment(spec, "--pin");
    if (!find_backend(backend))
      throw Error(ErrorKind::InvalidInput, "--pin " + spec + ": unknown backend '" + backend + "'");
    pins.pinned[node_by_ref(graph, node, "--pin")] = backend;
  }
  for (const std::string& spec : args.all("--forbid")) {
    auto [node, backend] = split_assignment(spec, "--forbid");
    pins.forbidden[node_by_ref(graph, node, "--forbid")].insert(backend);
  }
  return pins;
}

// "close contests: ..." and a line per contest: each member's cost before -> after.
void print_contests(const TuneResult& tuned) {
  if (tuned.contests.empty()) return;
  size_t changed = 0;
  for (const SettledContest& c : tuned.contests) changed += !c.kept;
  std::printf("close contests: %zu measured again side by side in %.1f s; %zu changed the placement\n",
              tuned.contests.size(), tuned.contest_ms / 1000, changed);
  for (const SettledContest& c : tuned.contests) {
    std::string line;
    for (size_t j = 0; j < c.members.size(); ++j) {
      const Candidate& k = tuned.candidates[c.members[j]];
      char ms[96];
      if (c.after_ms[j] < 0)
        std::snprintf(ms, sizeof ms, " %.3f -> failed", c.before_ms[j]);
      else
        std::snprintf(ms, sizeof ms, " %.3f -> %.3f ms", c.before_ms[j], c.after_ms[j]);
      line += (j == 0 ? "" : j == 1 ? " vs " : ", ") + k.label + " (" + k.backend + ")" + ms;
    }
    std::printf("  %s: %s\n",
                c.kept            ? "kept"
                : c.rivals_placed ? "rivals placed"
                                  : "neither placed",
                line.c_str());
  }
}

struct BucketOutcome {
  std::string placement_json;                  // the kept placement (refined or op-level)
  std::optional<workflow::BucketPrior> prior;  // its costs, for the next bucket's pruning
  double epsilon_ms = 0;                       // the dispatch overhead it was searched with
  bool verified = false;
  bool mismatch_after_refine = false;  // the refined placement disagrees with the reference: exit 1
};

// tune (and refine) one shape: the workflow's chain with its reports printed.
BucketOutcome tune_bucket(const Args& args, const DimValues& dims, const Graph& graph,
                          const workflow::TuneStepOptions& topts, const workflow::RefineStepOptions& ropts,
                          CostDb* db, ConsoleProgress& progress) {
  BucketOutcome outcome;
  workflow::TuneRunReport tune = workflow::run_tune(graph, topts, db, &progress);
  const TuneResult& tuned = tune.tuned;
  const workflow::PlacementRunReport& run = tune.run;
  std::fprintf(stderr, "%zu candidates: %zu measured now, %zu from the cost DB, %zu invalid%s (%.1f s%s)\n",
               tuned.candidates.size(), tuned.measured_now, tuned.from_cache, tuned.invalid - tuned.skipped,
               tuned.skipped ? (", " + std::to_string(tuned.skipped) + " skipped").c_str() : "",
               tuned.measure_ms / 1000,
               tuned.workers_started
                   ? (", " + std::to_string(tuned.workers_started) + " measure worker(s)").c_str()
               : topts.isolated ? ""
                                : ", in-process");
  std::fprintf(stderr, "\rsearch: %zu states expanded in %.1f ms%s\n", tuned.search.states_expanded,
               tuned.search.elapsed_ms, tuned.search.exact ? "" : " (beam fallback: not guaranteed optimal)");
  print_contests(tuned);
  for (const std::string& step : tune.backoff) std::printf("accuracy back-off: %s\n", step.c_str());
  if (tuned.skipped)
    std::printf(
        "%zu candidates not measured: slower by over %gx than another kernel of the same nodes in the "
        "last bucket that measured them\n",
        tuned.skipped, topts.prune_ratio);
  if (!dims.empty())
    outcome.prior = workflow::bucket_prior(dims, graph, tuned, topts.prior ? &*topts.prior : nullptr);
  const Placement& placement = tuned.placement;
  const std::vector<Tensor>& inputs = tuned.inputs;
  const int repeat = topts.repeat;

  std::printf(
      "tune: %zu candidates (%zu measured, %zu from the cost DB, %zu invalid%s) in %.2f s; search %.2f ms\n",
      tuned.candidates.size(), tuned.measured_now, tuned.from_cache, tuned.invalid - tuned.skipped,
      tuned.skipped ? (", " + std::to_string(tuned.skipped) + " skipped").c_str() : "",
      tuned.measure_ms / 1000, tuned.search.elapsed_ms);
  std::printf("%-18s %8s %12s\n", "backend", "kernels", "predicted ms");
  for (const auto& [name, share] : time_per_backend(placement))
    std::printf("%-18s %8d %12.3f\n", name.c_str(), share.kernels, share.predicted_ms);
  std::printf(
      "predicted %.3f ms (epsilon %.2f us x %zu kernels), measured median %.3f ms, min %.3f ms over %d "
      "runs\n",
      placement.predicted_ms, placement.epsilon_ms * 1000, placement.kernels.size(), run.timing.median_ms,
      run.timing.min_ms, repeat);
  print_body_placements(placement, "");
  for (const std::string& note : tuned.notes) std::printf("note: %s\n", note.c_str());
  std::printf("additive error (measured - predicted): %+.3f ms (%+.1f%%)\n",
              run.timing.median_ms - placement.predicted_ms,
              100 * (run.timing.median_ms - placement.predicted_ms) / placement.predicted_ms);
  print_verification(run.verify);
  Placement final_placement = placement;
  if (args.has("--refine")) {
    workflow::RefineStepOptions chain_options = ropts;
    chain_options.rivals =
        workflow::library_rivals(graph, tuned, placement, ropts.backends, run.timing.median_ms);
    workflow::RefineRunReport chain =
        workflow::run_refine(graph, placement, inputs, chain_options, db, &progress);
    const workflow::RefineReport& report = chain.refine;
    const workflow::PlacementRunReport& after = chain.refined_run;
    for (const std::string& lost : report.lost_evaluations)
      std::fprintf(stderr, "refine: a genome's evaluation was lost (%s); it counts as unbuildable\n",
                   lost.c_str());
    const RefineResult& refined = report.result;
    std::string regions, moves;
    for (const auto& [backend, count] : refined.moved_per_backend)
      moves += (moves.empty() ? " (" : ", ") + std::to_string(count) + " to " + backend;
    if (!moves.empty()) moves += ")";
    for (const workflow::RegionSummary& region : report.regions)
      regions += std::string(region.moved ? "  moved " : "  kept  ") + region.backend + ": " +
                 region.description + "\n";
    if (refined.cancelled)
      std::printf(
          "refine interrupted after %d evaluations: continuing with the best placement found so far\n",
          refined.evaluations);
    std::printf(
        "refine: %zu offloadable kernels, %d generations (best reached in generation %d), %d evaluations in "
        "%.1f s\n",
        refined.genes.size(), refined.generations, report.best_generation, refined.evaluations,
        report.seconds);
    auto fitness_ms = [](const Cost& c) {
      return c.valid() ? std::optional<double>(c.median_ms) : std::nullopt;
    };
    std::string speedup = "-";  // a ratio needs both fitnesses measured
    if (refined.seed_fitness.valid() && refined.best_fitness.valid()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.2fx",
                    refined.seed_fitness.median_ms / refined.best_fitness.median_ms);
      speedup = buf;
    }
    std::printf(
        "op-level %s -> refined %s (fitness medians), %s; %d op-level kernels moved%s; graph-level kernels "
        "now:\n%s",
        ms_or_none(fitness_ms(refined.seed_fitness)).c_str(),
        ms_or_none(fitness_ms(refined.best_fitness)).c_str(), speedup.c_str(), refined.moved(), moves.c_str(),
        regions.c_str());
    std::printf(
        "refined placement: measured median %.3f ms over %d runs; additive error before %+.1f%%, after "
        "%+.1f%%\n",
        after.timing.median_ms, repeat,
        100 * (run.timing.median_ms - placement.predicted_ms) / placement.predicted_ms,
        100 * (after.timing.median_ms - refined.best.predicted_ms) / refined.best.predicted_ms);
    print_verification(after.verify);
    if (chain.kept_why == workflow::KeptPlacement::OpLevelMismatch) {
      outcome.mismatch_after_refine = true;
      return outcome;
    }
    if (chain.kept_why == workflow::KeptPlacement::OpLevelOverBudget)
      std::printf("%s\n", workflow::describe(chain).c_str());
    const workflow::SideBySideReport& ab = chain.side_by_side;
    if (ab.compared) {
      std::printf("side by side over %d alternating runs each: op-level %.3f ms, refined %.3f ms (%.2fx)\n",
                  ab.timing.rounds, ab.timing.a_ms, ab.timing.b_ms, ab.timing.a_ms / ab.timing.b_ms);
      if (chain.kept_why == workflow::KeptPlacement::OpLevelNotFaster)
        std::printf("%s\n", workflow::describe(chain).c_str());
    }
    for (const workflow::LibraryContest& c : chain.library_contests)
      if (c.mismatch.empty())
        std::printf("side by side over %d alternating runs each: kept %.3f ms, %s alone %.3f ms (%.2fx)\n",
                    c.timing.rounds, c.timing.a_ms, c.backend.c_str(), c.timing.b_ms,
                    c.timing.a_ms / c.timing.b_ms);
    if (chain.kept_why == workflow::KeptPlacement::Library)
      std::printf("%s\n", workflow::describe(chain).c_str());
    final_placement = chain.kept;
  }
  outcome.placement_json = placement_to_json(final_placement, graph);
  outcome.epsilon_ms = final_placement.epsilon_ms;
  outcome.verified = run.verify.ok();
  return outcome;
}

}  // namespace

int command_tune(const std::vector<std::string>& argv) {
  Args args = parse_args(
      argv,
      with_model_options({"--backends", "--threads", "--pin", "--forbid", "--cost-db", "--epsilon", "-o",
                          "--output", "--repeat", "--min-time-ms", "--budget", "--population", "--seed",
                          "--generations", "--patience", "--accuracy", "--prune-ratio", "--contest-rounds"}),
      {"--no-cost-db", "--refine", "--in-process", "--log-costs", "--remote"});
  if (args.positional.size() != 1)
    throw Error(ErrorKind::InvalidInput,
                "usage: collage tune MODEL [--backends ...] [--pin NODE=BACKEND] -o placement.json");
  const std::string& path = args.positional[0];
  std::string out_path = args.get("-o", args.get("--output", ""));
  int threads = args.get_int("--threads", 1, 1, 1024);
  std::vector<const BackendSpec*> backends = select_backends(args.get("--backends", ""));
  const std::vector<DimValues> buckets = parse_buckets(args);
  workflow::LoadOptions load = parse_load_options_for_buckets(args);
  // Every bucket's graph up front (one measurement session holds them all), the weights they
  // have in common kept once.
  std::vector<Graph> graphs;
  size_t shared_bytes = 0;
  for (const DimValues& dims : buckets) {
    workflow::LoadOptions bucket_load = load;
    bucket_load.dims = dims;
    graphs.push_back(workflow::load_model(path, bucket_load));
    if (graphs.size() > 1) shared_bytes += share_equal_constants(graphs.back(), graphs.front());
  }
  if (buckets.size() > 1)
    std::fprintf(stderr, "%zu shape buckets loaded, %.1f MiB of weights shared between them\n",
                 buckets.size(),
                 static_cast<double>(shared_bytes) / static_cast<double>(buckets.size() - 1) / (1 << 20));
  Pins pins = parse_pins(args, graphs.front());

  std::unique_ptr<CostDb> db;
  if (!args.has("--no-cost-db"))
    db = std::make_unique<CostDb>(workflow::cost_db_path(args.get("--cost-db", "")));
  workflow::TuneStepOptions topts;
  topts.backends = backends;
  topts.threads = threads;
  topts.repeat = args.get_int("--repeat", topts.repeat, 1, 100000);
  topts.min_time_ms = args.get_double("--min-time-ms", topts.min_time_ms, 0.1, 1e6);
  topts.epsilon_ms = args.get_double("--epsilon", -1.0, 0.0, 1e6);  // -1: measure the dispatch overhead
  topts.pins = pins;
  topts.isolated = !args.has("--in-process");
  topts.remote = args.has("--remote");
  topts.prune_ratio = args.get_double("--prune-ratio", topts.prune_ratio, 0, 1e6);
  topts.contest_rounds = args.get_int("--contest-rounds", topts.contest_rounds, 0, 100);
  if (args.has("--accuracy")) topts.accuracy = parse_accuracy(args.get("--accuracy", ""));
  // Under a budget the default selection adds the reduced-precision backends.
  if (topts.accuracy.enabled() && !args.has("--backends")) topts.backends = backends = available_backends();
  workflow::RefineStepOptions ropts;
  if (args.has("--refine")) {
    if (workflow::graph_level_backends(backends).empty())
      throw Error(ErrorKind::InvalidInput,
                  "--refine needs a graph-level backend in --backends (onednn-region, xnnpack-graph, "
                  "onnxruntime-region)");
    ropts.backends = backends;
    ropts.threads = threads;
    ropts.repeat = topts.repeat;
    ropts.budget_s = args.get_seconds("--budget", ropts.budget_s, 1, 86400);
    ropts.population = args.get_int("--population", ropts.population, 2, 1000);
    ropts.generations = args.get_int("--generations", ropts.generations, 1, 100000);
    ropts.seed = static_cast<uint64_t>(args.get_int("--seed", static_cast<int>(ropts.seed), 0, 1 << 30));
    ropts.patience = args.get_int("--patience", ropts.patience, 1, 100000);
    ropts.isolated = topts.isolated;
    ropts.remote = topts.remote;
  }
  std::vector<MeasureWorker::SessionBucket> session_buckets;
  for (size_t b = 0; b < buckets.size(); ++b) session_buckets.push_back({buckets[b], &graphs[b]});
  std::unique_ptr<MeasureWorker> session = workflow::bucket_measure_session(session_buckets, topts);
  topts.shared_worker = ropts.shared_worker = session.get();
  ConsoleProgress progress(args.has("--log-costs"), db != nullptr);
  g_interrupted = 0;
  std::signal(SIGINT, on_interrupt);
  using Clock = std::chrono::steady_clock;
  const auto t_all = Clock::now();
  std::vector<PlacementFileBucket> written;
  bool all_verified = true;
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (buckets.size() > 1) {
      std::printf("== bucket %s (%zu of %zu)\n", bucket_label(buckets[b]).c_str(), b + 1, buckets.size());
      std::fflush(stdout);
      if (b > 0) topts.pins = parse_pins(args, graphs[b]);
    }
    topts.shared_bucket = ropts.shared_bucket = b;
    const auto t_bucket = Clock::now();
    BucketOutcome outcome = tune_bucket(args, buckets.size() > 1 ? buckets[b] : DimValues{}, graphs[b], topts,
                                        ropts, db.get(), progress);
    topts.prior = std::move(outcome.prior);
    if (outcome.mismatch_after_refine) return 1;
    all_verified = all_verified && outcome.verified;
    if (buckets.size() > 1) {
      std::printf("bucket %s tuned in %.1f s\n", bucket_label(buckets[b]).c_str(),
                  std::chrono::duration<double>(Clock::now() - t_bucket).count());
      // The dispatch overhead does not depend on the shape: later buckets reuse the first's.
      if (topts.epsilon_ms < 0) topts.epsilon_ms = outcome.epsilon_ms;
    }
    written.push_back({buckets.size() > 1 ? buckets[b] : DimValues{}, outcome.placement_json});
  }
  if (buckets.size() > 1)
    std::printf("%zu shape buckets (%s) tuned in %.1f s\n", buckets.size(), bucket_list(buckets).c_str(),
                std::chrono::duration<double>(Clock::now() - t_all).count());
  if (!out_path.empty()) {
    std::ofstream out(out_path, std::ios::trunc);
    out << write_placement_buckets(written) << "\n";
    if (!out) throw Error(ErrorKind::Io, "cannot write placement '" + out_path + "'");
    std::printf(
        "placement written to %s%s\n", out_path.c_str(),
        buckets.size() > 1 ? (" (" + std::to_string(buckets.size()) + " shape buckets)").c_str() : "");
  }
  return all_verified ? 0 : 1;
}

}  // namespace collage::cli
