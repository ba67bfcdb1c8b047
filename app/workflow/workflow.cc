#include "app/workflow/workflow.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "app/workflow/remote_fitness.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/ir/statistics.h"
#include "core/runtime/executor.h"
#include "core/tuning/measure_worker.h"
#include "core/tuning/measurer.h"

namespace collage::workflow {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

CompileOptions compile_options(int threads) {
  CompileOptions copts;
  copts.threads = threads;
  return copts;
}

const std::vector<const BackendSpec*>& or_all(const std::vector<const BackendSpec*>& backends) {
  return backends.empty() ? all_backends() : backends;
}

// The placement compiled for a run at `options.threads` (the libraries' pool set first):
// verify, time_placement, verify_and_time and profile all start here.
Executor compile_placement(const Graph& graph, const Placement& placement, const RunOptions& options) {
  set_backend_threads(options.threads);
  return Executor(
      graph, placement_steps(graph, placement, or_all(options.backends), compile_options(options.threads)));
}

VerifyReport verify_outputs(const Graph& graph, std::vector<Tensor> got, const std::vector<Tensor>& inputs,
                            const Tolerance& tolerance) {
  VerifyReport r;
  Executor reference(graph, native::native_steps(graph));
  std::vector<Tensor> want = reference.run(inputs);
  r.outputs = std::move(got);
  for (size_t k = 0; k < want.size(); ++k) {
    const std::string& name = graph.value(graph.outputs[k]).name;
    TensorComparison c = compare_tensors(r.outputs[k], want[k], tolerance);
    r.max_abs_error = std::max(r.max_abs_error, c.max_abs_error);
    if (!r.mismatch.empty() || c.ok()) continue;
    if (c.shape_mismatch || c.dtype_mismatch)
      r.mismatch = name + " is " + dtype_name(r.outputs[k].dtype()) + " " +
                   shape_to_string(r.outputs[k].shape()) + ", native reference " +
                   dtype_name(want[k].dtype()) + " " + shape_to_string(want[k].shape());
    else
      r.mismatch = name + "[" + std::to_string(c.first_mismatch) + "] = " + std::to_string(c.got_value) +
                   ", native reference " + std::to_string(c.want_value);
  }
  return r;
}

TimingReport time_runs(Executor& placed, const std::vector<Tensor>& inputs, int repeat) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    placed.run(inputs);
    ms.push_back(ms_since(t0));
  }
  TimingReport t;
  t.runs = repeat;
  if (!ms.empty()) {
    t.median_ms = median(ms);
    t.min_ms = *std::min_element(ms.begin(), ms.end());
  }
  return t;
}

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

Graph load_model(const std::string& path, const LoadOptions& options, ImportReport* report) {
  ImportOptions import;
  import.dims = options.dims;
  import.bound_inputs = options.bound_inputs;
  import.memory_budget_bytes = options.memory_budget_bytes;
  import.evaluator = native::node_evaluator();
  return import_onnx_file(path, import, report);
}

std::string cost_db_path(const std::string& given) { return given.empty() ? CostDb::default_path() : given; }

Placement read_placement(const std::string& path, const Graph& graph) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::Io, "cannot open placement '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return placement_from_json(text.str(), graph, all_backends());
}

std::vector<const BackendSpec*> graph_level_backends(const std::vector<const BackendSpec*>& backends) {
  std::vector<const BackendSpec*> out;
  for (const BackendSpec* b : backends)
    if (b->kind == BackendKind::GraphLevel) out.push_back(b);
  return out;
}

std::vector<const BackendSpec*> search_backends(const std::vector<const BackendSpec*>& selected) {
  std::vector<const BackendSpec*> out = or_all(selected);
  const BackendSpec* native = find_backend("native");
  if (native && std::find(out.begin(), out.end(), native) == out.end()) out.push_back(native);
  return out;
}

TuneResult tune(const Graph& graph, const TuneStepOptions& options, CostDb* db, ProgressObserver* observer) {
  set_backend_threads(options.threads);
  TuneOptions topts;
  topts.measure.threads = options.threads;
  topts.measure.min_time_ms = options.min_time_ms;
  topts.measure.tolerance = options.tolerance;
  if (options.isolated) topts.measure.worker.command = default_worker_command();
  if (options.remote) {
    if (!db || !db->is_shared())
      throw Error(ErrorKind::InvalidInput,
                  "remote measuring needs a shared cost DB (--cost-db postgresql://...), not " +
                      (db ? "the SQLite file '" + db->path() + "'" : std::string("no cost DB")));
    topts.measure.remote_queue = db->location();
    topts.measure.worker_lease_s = options.worker_lease_s;
  }
  topts.search.epsilon_ms = options.epsilon_ms;
  topts.pins = options.pins;
  return collage::tune(graph, or_all(options.backends), native::node_evaluator(), topts, db, observer);
}

TuneResult cached_costs(const Graph& graph, const TuneStepOptions& options, CostDb* db) {
  std::vector<const BackendSpec*> backends = or_all(options.backends);
  TuneResult r;
  r.candidates = enumerate_candidates(graph, backends);
  MeasureOptions mopts;
  mopts.threads = options.threads;
  mopts.cached_only = true;
  r.costs = Measurer(graph, {}, db, mopts).measure(r.candidates, backends);
  for (const MeasuredCandidate& m : r.costs) {
    r.from_cache += m.from_cache;
    r.invalid += !m.cost.valid();
  }
  return r;
}

VerifyReport verify(const Graph& graph, const Placement& placement, const std::vector<Tensor>& inputs,
                    const RunOptions& options) {
  Executor placed = compile_placement(graph, placement, options);
  return verify_outputs(graph, placed.run(inputs), inputs, options.tolerance);
}

TimingReport time_placement(const Graph& graph, const Placement& placement, const std::vector<Tensor>& inputs,
                            const RunOptions& options) {
  Executor placed = compile_placement(graph, placement, options);
  placed.run(inputs);  // warm-up
  return time_runs(placed, inputs, options.repeat);
}

PlacementRunReport verify_and_time(const Graph& graph, const Placement& placement,
                                   const std::vector<Tensor>& inputs, const RunOptions& options) {
  Executor placed = compile_placement(graph, placement, options);
  PlacementRunReport r;
  r.verify = verify_outputs(graph, placed.run(inputs), inputs, options.tolerance);  // also the warm-up
  r.timing = time_runs(placed, inputs, options.repeat);
  return r;
}

ProfileReport profile(const Graph& graph, const Placement& placement, const std::vector<Tensor>& inputs,
                      const RunOptions& options) {
  if (options.repeat < 1)
    throw Error(ErrorKind::InvalidInput,
                "profile: repeat must be at least 1, got " + std::to_string(options.repeat));
  Executor placed = compile_placement(graph, placement, options);
  placed.run(inputs);  // warm-up, not profiled
  placed.set_profiling(true);
  ProfileReport r;
  r.threads = options.threads;
  r.predicted_ms = placement.predicted_ms;
  std::vector<double> totals;
  Clock::time_point first = Clock::now();
  for (int i = 0; i < options.repeat; ++i) {
    ProfiledRun run;
    auto t0 = Clock::now();
    placed.run(inputs);
    run.total_ms = ms_since(t0);
    run.start_ms = std::chrono::duration<double, std::milli>(t0 - first).count();
    run.steps = placed.step_times();
    totals.push_back(run.total_ms);
    r.runs.push_back(std::move(run));
  }
  r.e2e_median_ms = median(totals);
  const std::vector<ExecStep>& steps = placed.steps();
  for (size_t k = 0; k < placement.kernels.size(); ++k) {
    const PlacedKernel& placed_kernel = placement.kernels[k];
    KernelProfile kp;
    kp.backend = placed_kernel.backend;
    kp.nodes = placed_kernel.nodes;
    kp.isolated_ms = placed_kernel.cost.valid() ? placed_kernel.cost.median_ms : 0;  // 0: see KernelProfile
    const std::string& step_label = steps[k].label;  // "backend:ops" (placement_steps)
    kp.label =
        step_label.rfind(kp.backend + ":", 0) == 0 ? step_label.substr(kp.backend.size() + 1) : step_label;
    std::vector<double> durations, starts;
    for (const ProfiledRun& run : r.runs) {
      durations.push_back(run.steps[k].end_ms - run.steps[k].start_ms);
      starts.push_back(run.steps[k].start_ms);
    }
    kp.in_run_ms = median(durations);
    kp.start_ms = median(starts);
    r.kernel_sum_ms += kp.in_run_ms;
    r.isolated_sum_ms += kp.isolated_ms;
    r.kernels.push_back(std::move(kp));
  }
  return r;
}

RefineReport refine(const Graph& graph, const Placement& op_level, const std::vector<Tensor>& inputs,
                    const RefineStepOptions& options, CostDb* db, ProgressObserver* observer) {
  const std::vector<const BackendSpec*>& backends = or_all(options.backends);
  std::vector<const BackendSpec*> graph_level = graph_level_backends(backends);
  if (graph_level.empty())
    throw Error(ErrorKind::InvalidInput,
                "refining needs a graph-level backend (onednn-region, xnnpack-graph)");
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
  std::unique_ptr<MeasureWorker> worker;
  FitnessFn fitness = options.fitness;
  if (!fitness && options.isolated && !default_worker_command().empty()) {
    MeasureOptions mopts;
    mopts.threads = options.threads;
    mopts.worker.command = default_worker_command();
    worker = std::make_unique<MeasureWorker>(graph, inputs, mopts);
    fitness = [&worker, &r, runs = options.fitness_runs](const Placement& p) {
      std::vector<KernelGroup> kernels(p.kernels.begin(), p.kernels.end());
      Cost cost = worker->fitness(kernels, runs);
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
  r.seconds = ms_since(t0) / 1000;
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

TuneRunReport run_tune(const Graph& graph, const TuneStepOptions& options, CostDb* db,
                       ProgressObserver* observer) {
  TuneStepOptions topts = options;
  topts.backends = search_backends(options.backends);
  TuneRunReport r;
  r.tuned = tune(graph, topts, db, observer);
  RunOptions run;
  run.backends = topts.backends;
  run.threads = options.threads;
  run.repeat = options.repeat;
  r.run = verify_and_time(graph, r.tuned.placement, r.tuned.inputs, run);
  return r;
}

RefineRunReport run_refine(const Graph& graph, const Placement& op_level, const std::vector<Tensor>& inputs,
                           const RefineStepOptions& options, CostDb* db, ProgressObserver* observer) {
  RefineStepOptions ropts = options;
  ropts.backends = search_backends(options.backends);
  RefineRunReport r;
  r.refine = refine(graph, op_level, inputs, ropts, db, observer);
  RunOptions run;
  run.backends = ropts.backends;
  run.threads = options.threads;
  run.repeat = options.repeat;
  r.refined_run = verify_and_time(graph, r.refine.result.best, inputs, run);
  r.kept = op_level;
  if (!r.refined_run.verify.ok()) {
    r.kept_why = KeptPlacement::OpLevelMismatch;
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
  return r;
}

std::string describe(const RefineRunReport& report) {
  char line[256];
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
  }
  return "";
}

ExportReport export_placement(const Graph& graph, const Placement& placement,
                              const ExportStepOptions& options) {
  set_backend_threads(placement.threads);
  return export_artifact(graph, placement, or_all(options.backends), options.model_name, options.path);
}

}  // namespace collage::workflow
