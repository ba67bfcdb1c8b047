// `collage tune`: enumerate, measure (cost DB), search, verify, export.
// `collage run --placement` lives in cli_commands.cc and shares run_placement().
#include "app/cli_tune.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <set>

#include "app/cli_args.h"
#include "app/cli_commands.h"
#include "app/model_loading.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/kernel_signature.h"
#include "core/placement_timing.h"
#include "core/refine.h"
#include "core/tuner.h"

namespace collage::cli {
namespace {

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
  bool cancel_requested() const override { return g_interrupted != 0; }
  void on_progress(const ProgressEvent& e) override {
    if (e.stage == ProgressEvent::Stage::RefineEvaluation) {  // a terminal shows each measurement in place
      if (tty_) std::fprintf(stderr, "\rrefining: evaluation %zu (best %.3f ms)", e.done, e.best_ms);
      return;
    }
    if (e.stage == ProgressEvent::Stage::Refine) {  // one line per generation, terminal or log
      std::fprintf(stderr,
                   "%srefining: generation %zu, best %.3f ms, mean %.3f ms, %zu evaluations, %.1f s\n",
                   tty_ ? "\r" : "", e.done, e.best_ms, e.mean_ms, e.evaluations, e.elapsed_ms / 1000);
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
      std::fprintf(stderr, "\rsearching: %zu states expanded, %.1f s%s", e.done, e.elapsed_ms / 1000,
                   e.best_ms >= 0 ? "" : "");
    }
    std::fflush(stderr);
  }

 private:
  bool tty_ = isatty(fileno(stderr)) != 0;
  size_t last_decile_ = SIZE_MAX;
};

NodeId node_by_ref(const Graph& graph, const std::string& ref, const std::string& option) {
  for (NodeId n = 0; n < graph.num_nodes(); ++n)
    if (graph.node(n).name == ref) return n;
  if (!ref.empty() && std::all_of(ref.begin(), ref.end(), ::isdigit)) {
    long id = std::stol(ref);
    if (id >= 0 && id < graph.num_nodes()) return static_cast<NodeId>(id);
  }
  throw Error(ErrorKind::InvalidInput, option + " " + ref + ": the model has no node with that name or id");
}

}  // namespace

PlacementRun run_placement(const Graph& graph, const Placement& placement,
                           const std::vector<const BackendSpec*>& backends, int threads, int repeat,
                           const std::vector<Tensor>& inputs) {
  CompileOptions copts;
  copts.threads = threads;
  Executor placed(graph, placement_steps(graph, placement, backends, copts));
  Executor reference(graph, native::native_steps(graph));
  PlacementRun r;
  r.outputs = placed.run(inputs);  // warm-up, and the outputs we verify
  std::vector<Tensor> want = reference.run(inputs);
  r.max_abs_error = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    std::vector<double> a = r.outputs[k].to_double_vector(), b = want[k].to_double_vector();
    for (size_t i = 0; i < a.size(); ++i) {
      double err = std::fabs(a[i] - b[i]);
      r.max_abs_error = std::max(r.max_abs_error, std::isnan(err) ? INFINITY : err);
      if (!(err <= 1e-3 + 1e-3 * std::fabs(b[i])) && r.mismatch.empty())
        r.mismatch = graph.value(graph.outputs[k]).name + "[" + std::to_string(i) +
                     "] = " + std::to_string(a[i]) + ", native reference " + std::to_string(b[i]);
    }
  }
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    placed.run(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  r.median_ms = median_ms(ms);
  r.min_ms = *std::min_element(ms.begin(), ms.end());
  return r;
}

int command_tune(const std::vector<std::string>& argv) {
  Args args = parse_args(
      argv,
      {"--dim", "--backends", "--threads", "--pin", "--forbid", "--cost-db", "--epsilon", "-o", "--output",
       "--repeat", "--min-time-ms", "--budget", "--population", "--seed", "--generations", "--patience"},
      {"--no-cost-db", "--refine"});
  if (args.positional.size() != 1)
    throw Error(ErrorKind::InvalidInput,
                "usage: collage tune MODEL [--backends ...] [--pin NODE=BACKEND] -o placement.json");
  const std::string& path = args.positional[0];
  std::string out_path = args.get("-o", args.get("--output", ""));
  int threads = args.get_int("--threads", 1, 1, 1024);
  int repeat = args.get_int("--repeat", 20, 1, 100000);
  std::vector<const BackendSpec*> backends = select_backends(args.get("--backends", ""));
  set_backend_threads(threads);
  Graph graph = load_model(path, parse_dims(args.all("--dim")));

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

  std::unique_ptr<CostDb> db;
  if (!args.has("--no-cost-db")) db = std::make_unique<CostDb>(args.get("--cost-db", CostDb::default_path()));
  TuneOptions topts;
  topts.measure.threads = threads;
  topts.measure.min_time_ms = args.get_double("--min-time-ms", topts.measure.min_time_ms, 0.1, 1e6);
  topts.search.epsilon_ms =
      args.get_double("--epsilon", -1.0, 0.0, 1e6);  // -1: measure the dispatch overhead
  topts.pins = pins;
  ConsoleProgress progress;
  g_interrupted = 0;
  std::signal(SIGINT, on_interrupt);
  TuneResult tuned = tune(graph, backends, native::node_evaluator(), topts, db.get(), &progress);
  std::fprintf(stderr, "%zu candidates: %zu measured now, %zu from the cost DB, %zu invalid (%.1f s)\n",
               tuned.candidates.size(), tuned.measured_now, tuned.from_cache, tuned.invalid,
               tuned.measure_ms / 1000);
  std::fprintf(stderr, "\rsearch: %zu states expanded in %.1f ms%s\n", tuned.search.states_expanded,
               tuned.search.elapsed_ms, tuned.search.exact ? "" : " (beam fallback: not guaranteed optimal)");
  const Placement& placement = tuned.placement;
  const std::vector<Tensor>& inputs = tuned.inputs;

  std::printf(
      "tune: %zu candidates (%zu measured, %zu from the cost DB, %zu invalid) in %.2f s; search %.2f ms\n",
      tuned.candidates.size(), tuned.measured_now, tuned.from_cache, tuned.invalid, tuned.measure_ms / 1000,
      tuned.search.elapsed_ms);
  PlacementRun run = run_placement(graph, placement, backends, threads, repeat, inputs);
  std::map<std::string, std::pair<int, double>> per_backend;
  for (const PlacedKernel& k : placement.kernels) {
    per_backend[k.backend].first++;
    per_backend[k.backend].second += k.cost_ms;
  }
  std::printf("%-10s %8s %12s\n", "backend", "kernels", "predicted ms");
  for (const auto& [name, stats] : per_backend)
    std::printf("%-10s %8d %12.3f\n", name.c_str(), stats.first, stats.second);
  std::printf(
      "predicted %.3f ms (epsilon %.2f us x %zu kernels), measured median %.3f ms, min %.3f ms over %d "
      "runs\n",
      placement.predicted_ms, placement.epsilon_ms * 1000, placement.kernels.size(), run.median_ms,
      run.min_ms, repeat);
  std::printf("additive error (measured - predicted): %+.3f ms (%+.1f%%)\n",
              run.median_ms - placement.predicted_ms,
              100 * (run.median_ms - placement.predicted_ms) / placement.predicted_ms);
  std::printf("verified against the native reference: %s (max abs error %.3g)\n",
              run.mismatch.empty() ? "ok" : run.mismatch.c_str(), run.max_abs_error);
  Placement final_placement = placement;
  if (args.has("--refine")) {
    std::vector<const BackendSpec*> graph_level;
    for (const BackendSpec* b : backends)
      if (b->kind == BackendKind::GraphLevel) graph_level.push_back(b);
    if (graph_level.empty())
      throw Error(ErrorKind::InvalidInput,
                  "--refine needs a graph-level backend in --backends (onednn-region, xnnpack-graph)");
    RefineOptions ropts;
    ropts.time_budget_s = args.get_seconds("--budget", 120, 1, 86400);
    ropts.population = args.get_int("--population", 12, 2, 1000);
    ropts.max_generations = args.get_int("--generations", 30, 1, 100000);
    ropts.seed = static_cast<uint64_t>(args.get_int("--seed", 1, 0, 1 << 30));
    ropts.patience = args.get_int("--patience", ropts.patience, 1, 100000);
    CompileOptions copts;
    copts.threads = threads;
    FitnessFn fitness = measured_fitness(graph, backends, copts, inputs, 7);
    auto t0 = std::chrono::steady_clock::now();
    RefineResult refined = refine_placement(
        graph, placement, graph_level, cached_fitness(fitness, db.get(), graph, threads), ropts, &progress);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    final_placement = refined.best;
    PlacementRun after = run_placement(graph, final_placement, backends, threads, repeat, inputs);
    const int moved = refined.moved();
    std::string regions, moves;
    std::set<NodeId> moved_nodes;
    for (size_t i = 0; i < refined.genes.size(); ++i)
      if (refined.best_genome[i])
        for (NodeId n : placement.kernels[refined.genes[i].kernel].nodes) moved_nodes.insert(n);
    for (const auto& [backend, count] : refined.moved_per_backend)
      moves += (moves.empty() ? " (" : ", ") + std::to_string(count) + " to " + backend;
    if (!moves.empty()) moves += ")";
    for (const PlacedKernel& k : final_placement.kernels)
      if (std::find_if(graph_level.begin(), graph_level.end(),
                       [&](const BackendSpec* b) { return b->name == k.backend; }) != graph_level.end()) {
        bool is_new =
            std::any_of(k.nodes.begin(), k.nodes.end(), [&](NodeId n) { return moved_nodes.count(n) != 0; });
        regions += std::string(is_new ? "  moved " : "  kept  ") + k.backend + ": " +
                   describe_region(graph, k) + "\n";
      }
    int saturated = 0;  // first generation whose best equals the final best
    while (saturated + 1 < static_cast<int>(refined.history.size()) &&
           refined.history[static_cast<size_t>(saturated)].first > refined.best_fitness)
      ++saturated;
    if (refined.cancelled)
      std::printf(
          "refine interrupted after %d evaluations: continuing with the best placement found so far\n",
          refined.evaluations);
    std::printf(
        "refine: %zu offloadable kernels, %d generations (best reached in generation %d), %d evaluations in "
        "%.1f s\n",
        refined.genes.size(), refined.generations, saturated, refined.evaluations, seconds);
    std::printf(
        "op-level %.3f ms -> refined %.3f ms (fitness medians), %.2fx; %d op-level kernels moved%s; "
        "graph-level kernels now:\n%s",
        refined.seed_fitness, refined.best_fitness, refined.seed_fitness / refined.best_fitness, moved,
        moves.c_str(), regions.c_str());
    std::printf(
        "refined placement: measured median %.3f ms over %d runs; additive error before %+.1f%%, after "
        "%+.1f%%\n",
        after.median_ms, repeat, 100 * (run.median_ms - placement.predicted_ms) / placement.predicted_ms,
        100 * (after.median_ms - final_placement.predicted_ms) / final_placement.predicted_ms);
    std::printf("verified against the native reference: %s (max abs error %.3g)\n",
                after.mismatch.empty() ? "ok" : after.mismatch.c_str(), after.max_abs_error);
    if (!after.mismatch.empty()) return 1;
    // Fitness medians come from 7 runs minutes apart; the final word is a longer run of
    // both placements alternated, so drift of a noisy machine cannot decide it.
    if (moved > 0) {
      SideBySide ab = compare_placements(graph, placement, final_placement, backends, copts, inputs,
                                         std::max(repeat, 10));
      std::printf("side by side over %d alternating runs each: op-level %.3f ms, refined %.3f ms (%.2fx)\n",
                  ab.rounds, ab.a_ms, ab.b_ms, ab.a_ms / ab.b_ms);
      if (ab.b_ms >= ab.a_ms) {
        std::printf(
            "the refined placement is not faster when re-measured (%.3f vs %.3f ms): keeping the op-level "
            "one\n",
            ab.b_ms, ab.a_ms);
        final_placement = placement;
      }
    }
  }
  if (!out_path.empty()) {
    std::ofstream out(out_path, std::ios::trunc);
    out << placement_to_json(final_placement, graph) << "\n";
    if (!out) throw Error(ErrorKind::Io, "cannot write placement '" + out_path + "'");
    std::printf("placement written to %s\n", out_path.c_str());
  }
  return run.mismatch.empty() ? 0 : 1;
}

}  // namespace collage::cli
