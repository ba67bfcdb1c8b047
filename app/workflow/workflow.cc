#include "app/workflow/workflow.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "app/workflow/refine_contests.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/backend_api/int8_weights.h"
#include "core/backend_api/kernel_signature.h"
#include "core/ir/graph_analysis.h"
#include "core/ir/random_inputs.h"
#include "core/ir/statistics.h"
#include "core/runtime/executor.h"
#include "core/search/placement_buckets.h"
#include "core/tuning/measure_worker.h"
#include "core/tuning/measurer.h"

namespace collage::workflow {

using detail::compile_options;
using detail::or_all;
using detail::with_held_out;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The placement compiled for a run at `options.threads` (the libraries' pool set first):
// verify, time_placement, verify_and_time and profile all start here.
Executor compile_placement(const Graph& graph, const Placement& placement, const RunOptions& options) {
  set_backend_threads(options.threads);
  return Executor(
      graph, placement_steps(graph, placement, or_all(options.backends), compile_options(options.threads)));
}

// Under an accuracy budget (a placement with reduced-precision kernels) each output is
// measured against it; otherwise compared under `tolerance`.
VerifyReport check_outputs(const Graph& graph, std::vector<Tensor> got, const std::vector<Tensor>& want,
                           const Tolerance& tolerance, const AccuracyBudget& accuracy) {
  VerifyReport r;
  r.outputs = std::move(got);
  for (size_t k = 0; k < want.size(); ++k) {
    const std::string& name = graph.value(graph.outputs[k]).name;
    if (accuracy.enabled()) {
      AccuracyMeasure m = measure_accuracy(r.outputs[k], want[k], accuracy, name, true);
      r.max_abs_error = std::max(r.max_abs_error, compare_tensors(r.outputs[k], want[k], {}).max_abs_error);
      char line[160];
      std::snprintf(line, sizeof line, "%s: max-rel %.3g, cosine %.6f, top-1 %s", name.c_str(), m.max_rel,
                    m.cosine, m.top1 ? "agrees" : "differs");
      r.accuracy.push_back(line);
      if (r.mismatch.empty() && !m.ok()) r.mismatch = m.failure;
      continue;
    }
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

// The budget a placement is held to: none for an fp32 one; the run's, else the one it was tuned under.
AccuracyBudget budget_for(const Placement& placement, const RunOptions& options) {
  if (!reduced_precision(placement)) return {};
  if (options.accuracy.enabled()) return options.accuracy;
  if (placement.accuracy.empty())
    throw Error(ErrorKind::InvalidInput,
                "the placement has reduced-precision kernels but no accuracy budget to check them against");
  return parse_accuracy(placement.accuracy);
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

}  // namespace

Graph load_model(const std::string& path, const LoadOptions& options, ImportReport* report) {
  ImportOptions import;
  import.dims = options.dims;
  import.bound_inputs = options.bound_inputs;
  import.memory_budget_bytes = options.memory_budget_bytes;
  import.dynamic_shapes = options.dynamic_shapes;
  import.evaluator = native::node_evaluator();
  return import_onnx_file(path, import, report);
}

std::string cost_db_path(const std::string& given) { return given.empty() ? CostDb::default_path() : given; }

std::string read_placement_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::Io, "cannot open placement '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Placement read_placement(const std::string& path, const Graph& graph) {
  return placement_from_json(read_placement_text(path), graph, all_backends());
}

std::vector<PlacedBucket> read_placed_buckets(const std::string& model_path,
                                              const std::string& placement_path, const LoadOptions& base,
                                              const std::vector<DimValues>& wanted) {
  std::vector<PlacementFileBucket> file = read_placement_buckets(read_placement_text(placement_path));
  const bool one_shape_file = file.size() == 1 && file.front().dims.empty();
  const bool all = wanted.empty() || (wanted.size() == 1 && wanted.front().empty());
  if (one_shape_file && wanted.size() > 1)
    throw Error(ErrorKind::InvalidInput,
                "placement '" + placement_path + "' holds one shape; tune with --dim " +
                    "NAME=V1,V2,... for a placement per bucket (asked for: " + bucket_list(wanted) + ")");
  std::vector<std::pair<DimValues, const PlacementFileBucket*>> chosen;
  if (one_shape_file)
    chosen.emplace_back(all ? DimValues{} : wanted.front(), &file.front());
  else if (all)
    for (const PlacementFileBucket& b : file) chosen.emplace_back(b.dims, &b);
  else
    for (const DimValues& dims : wanted)
      chosen.emplace_back(dims, &find_bucket(file, dims, "placement '" + placement_path + "'"));
  std::vector<PlacedBucket> out;
  for (const auto& [dims, bucket] : chosen) {
    LoadOptions load = base;
    load.dims = dims;
    PlacedBucket placed;
    placed.dims = one_shape_file ? DimValues{} : dims;
    placed.graph = load_model(model_path, load);
    try {
      placed.placement = placement_from_json(bucket->placement_json, placed.graph, all_backends());
    } catch (const Error& e) {
      if (one_shape_file) throw;
      throw Error(e.kind(), "bucket " + bucket_label(dims) + ": " + e.what());
    }
    out.push_back(std::move(placed));
  }
  return out;
}

std::vector<const BackendSpec*> graph_level_backends(const std::vector<const BackendSpec*>& backends) {
  std::vector<const BackendSpec*> out;
  for (const BackendSpec* b : backends)
    if (b->kind == BackendKind::GraphLevel) out.push_back(b);
  return out;
}

bool reduced_precision(const Placement& placement) {
  for (const PlacedKernel& k : placement.kernels)
    if (const BackendSpec* b = find_backend(k.backend); b && b->precision != Precision::Float32) return true;
  return false;
}

QdqPlan qdq_plan(const Graph& graph, const Placement& placement) {
  QdqPlan plan;
  for (const PlacedKernel& k : placement.kernels) {
    const BackendSpec* b = find_backend(k.backend);
    if (!b || b->precision == Precision::Float32) continue;
    if (b->precision == Precision::BFloat16) {
      ++plan.bf16_left_fp32;
      continue;
    }
    std::vector<NodeId> int8;
    if (b->kind == BackendKind::GraphLevel) {
      for (NodeId n : k.nodes)
        if (int8_weights_matmul(graph, graph.node(n))) int8.push_back(n);
    } else if (const Node& head = graph.node(k.nodes.front());
               int8_weights_matmul(graph, head) || int8_weights_gemm(graph, head)) {
      int8.push_back(k.nodes.front());
    } else {
      ++plan.int8_left_fp32;
    }
    for (NodeId n : int8) {
      const Node& node = graph.node(n);
      QuantizedWeights q = quantize_node_weights(graph, node);
      const int64_t cols = static_cast<int64_t>(q.scale.size());
      const int64_t k = cols ? static_cast<int64_t>(q.q.size()) / cols : 0;
      plan.matmuls.push_back({node.name, k, cols, std::move(q.q), std::move(q.scale)});
    }
  }
  return plan;
}

std::vector<const BackendSpec*> search_backends(const std::vector<const BackendSpec*>& selected) {
  std::vector<const BackendSpec*> out = selected.empty() ? default_backends() : selected;
  const BackendSpec* native = find_backend("native");
  if (native && std::find(out.begin(), out.end(), native) == out.end()) out.push_back(native);
  return out;
}

namespace {

std::string margin_key(const Candidate& c) { return c.backend + "|" + c.nodes.to_string(); }

}  // namespace

BucketPrior bucket_prior(const DimValues& dims, const Graph& graph, const TuneResult& tuned,
                         const BucketPrior* previous) {
  BucketPrior prior;
  prior.dims = dims;
  for (const Node& n : graph.nodes) prior.nodes.push_back(n.name + "|" + n.op_type);
  std::map<std::string, double> best_of;  // nodes -> the best valid cost here
  for (size_t i = 0; i < tuned.candidates.size(); ++i) {
    const Cost& c = tuned.costs.at(i).cost;
    if (!c.valid()) continue;
    auto [it, fresh] = best_of.emplace(tuned.candidates[i].nodes.to_string(), c.median_ms);
    if (!fresh) it->second = std::min(it->second, c.median_ms);
  }
  for (size_t i = 0; i < tuned.candidates.size(); ++i) {
    const Candidate& cand = tuned.candidates[i];
    const Cost& c = tuned.costs.at(i).cost;
    std::string key = margin_key(cand);
    if (c.valid()) {
      prior.margins[key] = {c.median_ms / best_of.at(cand.nodes.to_string()), dims};
    } else if (c.status == CostStatus::NotMeasured && previous) {
      if (auto was = previous->margins.find(key); was != previous->margins.end())
        prior.margins[key] = was->second;
    }
  }
  return prior;
}

namespace {

// TuneOptions::skip from the buckets before: a candidate whose margin is over `ratio` is
// skipped, saying why and where it was measured.
std::function<std::string(const Candidate&)> prune_by_prior(const Graph& graph, const BucketPrior& prior,
                                                            double ratio) {
  if (ratio <= 0 || prior.nodes.size() != graph.nodes.size()) return nullptr;
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    if (prior.nodes[n] != graph.nodes[n].name + "|" + graph.nodes[n].op_type) return nullptr;
  auto margins = std::make_shared<std::map<std::string, BucketPrior::Margin>>(prior.margins);
  return [margins, ratio](const Candidate& c) -> std::string {
    auto m = margins->find(margin_key(c));
    if (m == margins->end() || m->second.ratio <= ratio) return {};
    char why[160];
    std::snprintf(why, sizeof why, "not measured: %.1fx slower than the best kernel of these nodes at %s",
                  m->second.ratio, bucket_label(m->second.where).c_str());
    return why;
  };
}

MeasureOptions measure_options(const TuneStepOptions& options) {
  MeasureOptions m;
  m.threads = options.threads;
  m.min_time_ms = options.min_time_ms;
  m.tolerance = options.tolerance;
  m.accuracy = options.accuracy;
  if (options.isolated) m.worker.command = default_worker_command();
  return m;
}

}  // namespace

std::unique_ptr<MeasureWorker> bucket_measure_session(
    const std::vector<MeasureWorker::SessionBucket>& buckets, const TuneStepOptions& options) {
  MeasureOptions m = measure_options(options);
  if (buckets.size() < 2 || m.worker.command.empty() || options.remote) return nullptr;
  return std::make_unique<MeasureWorker>(buckets, m);
}

TuneResult tune(const Graph& graph, const TuneStepOptions& options, CostDb* db, ProgressObserver* observer) {
  set_backend_threads(options.threads);
  TuneOptions topts;
  topts.measure = measure_options(options);
  if (!topts.measure.worker.command.empty() && !options.remote) {
    topts.shared_worker = options.shared_worker;
    topts.shared_bucket = options.shared_bucket;
  }
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
  topts.contests.rounds = options.contest_rounds;
  std::vector<const BackendSpec*> backends = options.backends;
  if (backends.empty()) backends = options.accuracy.enabled() ? available_backends() : default_backends();
  for (const BackendSpec* b : backends)
    if (b->precision != Precision::Float32 && !options.accuracy.enabled())
      throw Error(ErrorKind::InvalidInput,
                  b->name + " computes in " + precision_name(b->precision) +
                      ": it needs an accuracy budget (--accuracy, e.g. top1,max-rel=5e-2)");
  if (options.prior) topts.skip = prune_by_prior(graph, *options.prior, options.prune_ratio);
  return collage::tune(graph, backends, native::node_evaluator(), topts, db, observer);
}

TuneResult cached_costs(const Graph& graph, const TuneStepOptions& options, CostDb* db) {
  std::vector<const BackendSpec*> backends = backends_for_threads(or_all(options.backends), options.threads);
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

std::vector<Tensor> native_reference(const Graph& graph, const std::vector<Tensor>& inputs) {
  Executor reference(graph, native::native_steps(graph));
  return reference.run(inputs);
}

VerifyReport verify_outputs(const Graph& graph, const Placement& placement, std::vector<Tensor> got,
                            const std::vector<Tensor>& reference, const RunOptions& options) {
  return check_outputs(graph, std::move(got), reference, options.tolerance, budget_for(placement, options));
}

VerifyReport verify(const Graph& graph, const Placement& placement, const std::vector<Tensor>& inputs,
                    const RunOptions& options) {
  Executor placed = compile_placement(graph, placement, options);
  return verify_outputs(graph, placement, placed.run(inputs), native_reference(graph, inputs), options);
}

TimingReport time_placement(const Graph& graph, const Placement& placement, const std::vector<Tensor>& inputs,
                            const RunOptions& options) {
  Executor placed = compile_placement(graph, placement, options);
  placed.run(inputs);  // warm-up
  return time_runs(placed, inputs, options.repeat);
}

HeldOutDraw held_out_draw(const Graph& graph) {
  HeldOutDraw draw;
  draw.inputs = random_inputs(graph, kSettings.held_out_seed);
  draw.reference = native_reference(graph, draw.inputs);
  return draw;
}

VerifyReport check_held_out(const Graph& graph, const Placement& placement, VerifyReport first,
                            Executor& placed, const HeldOutDraw& draw, const RunOptions& options) {
  if (!first.ok() || !budget_for(placement, options).enabled()) return first;
  VerifyReport held_out = verify_outputs(graph, placement, placed.run(draw.inputs), draw.reference, options);
  if (held_out.ok()) return first;
  first.mismatch = "on held-out inputs: " + held_out.mismatch;
  return first;
}

namespace detail {

VerifyReport with_held_out(const Graph& graph, const Placement& placement, VerifyReport first,
                           const RunOptions& options, std::optional<HeldOutDraw>& draw) {
  if (!first.ok() || !budget_for(placement, options).enabled()) return first;
  if (!draw) draw = held_out_draw(graph);
  Executor placed = compile_placement(graph, placement, options);
  return check_held_out(graph, placement, std::move(first), placed, *draw, options);
}

}  // namespace detail

PlacementRunReport verify_and_time(const Graph& graph, const Placement& placement,
                                   const std::vector<Tensor>& inputs, const RunOptions& options) {
  Executor placed = compile_placement(graph, placement, options);
  PlacementRunReport r;
  r.verify = verify_outputs(graph, placement, placed.run(inputs), native_reference(graph, inputs),
                            options);  // also the warm-up
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
    for (NodeId n : kp.nodes) kp.flops += node_cost(graph, n).flops;
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
    r.flops += kp.flops;
    r.kernels.push_back(std::move(kp));
  }
  return r;
}

void back_off(const Graph& graph, const AccuracyBudget& budget, const RunOptions& run,
              std::optional<HeldOutDraw>& draw, TuneRunReport& r, ProgressObserver* observer);

TuneRunReport run_tune(const Graph& graph, const TuneStepOptions& options, CostDb* db,
                       ProgressObserver* observer) {
  TuneStepOptions topts = options;
  topts.backends = search_backends(options.backends);
  TuneRunReport r;
  r.tuned = tune(graph, topts, db, observer);
  if (options.accuracy.enabled()) r.tuned.placement.accuracy = options.accuracy.to_string();
  RunOptions run;
  run.backends = topts.backends;
  run.threads = options.threads;
  run.repeat = options.repeat;
  run.accuracy = with_margin(options.accuracy, kSettings.accuracy_margin);
  r.run = verify_and_time(graph, r.tuned.placement, r.tuned.inputs, run);
  std::optional<HeldOutDraw> draw;
  r.run.verify = with_held_out(graph, r.tuned.placement, std::move(r.run.verify), run, draw);
  if (options.accuracy.enabled()) back_off(graph, options.accuracy, run, draw, r, observer);
  return r;
}

// Until the placement holds the budget: the reduced-precision kernel whose own output is
// furthest from the native reference leaves its backend, and its nodes forbid every backend of
// its precision that errs there about as much (kSettings.backoff_kept_error_ratio): they go to a
// clearly more precise kernel of that precision, back to fp32, or to a more precise reduced one
// (int8 -> bf16), whichever the measured costs make cheapest. The search runs again, and the new
// placement is verified (and, once it holds, timed). Each step is a notice to the observer as it
// happens.
void back_off(const Graph& graph, const AccuracyBudget& budget, const RunOptions& run,
              std::optional<HeldOutDraw>& draw, TuneRunReport& r, ProgressObserver* observer) {
  std::vector<Tensor> values;               // every value of the graph, computed once by the native kernels
  std::map<std::string, double> own_error;  // "backend:nodes" -> the kernel's own max-rel error
  auto error_of = [&](const PlacedKernel& k, const BackendSpec& b) {
    std::string key = k.backend;
    for (NodeId n : k.nodes) key += ":" + std::to_string(n);
    if (auto it = own_error.find(key); it != own_error.end()) return it->second;
    if (values.empty()) values = reference_values(graph, r.tuned.inputs, native::node_evaluator());
    IndexSet nodes(graph.nodes.size());
    for (NodeId n : k.nodes) nodes.add(static_cast<size_t>(n));
    SubGraph sub = make_subgraph(graph, nodes);
    double error = std::numeric_limits<double>::infinity();
    try {
      std::unique_ptr<Kernel> kernel = b.compile(graph, sub, compile_options(run.threads));
      std::vector<const Tensor*> args;
      for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
      HeapAllocator alloc;
      error = kernel_accuracy(graph, sub, kernel->run(args, alloc), values, budget).max_rel;
    } catch (const Error&) {  // it cannot run here: the first to go back
    }
    return own_error[key] = error;
  };
  bool stepped = false;
  while (!r.run.verify.ok() && reduced_precision(r.tuned.placement)) {
    if (observer && observer->cancel_requested())
      throw Error(ErrorKind::Cancelled, "accuracy back-off cancelled");
    std::optional<PlacedKernel> worst;
    double worst_error = -1;
    for (const PlacedKernel& k : r.tuned.placement.kernels) {
      const BackendSpec* b = find_backend(k.backend);
      if (!b || b->precision == Precision::Float32) continue;
      if (double error = error_of(k, *b); error > worst_error) worst = k, worst_error = error;
    }
    // The worst kernel's backend goes from its nodes, and so does every other backend of its
    // precision that the search could place there unless it errs clearly less on them.
    const Precision precision = find_backend(worst->backend)->precision;
    std::set<std::string> placeable;
    for (const Candidate& c : r.tuned.candidates) placeable.insert(c.backend);
    Pins pins = r.tuned.placement.pins;
    std::string kept;
    for (const BackendSpec* b : all_backends()) {
      if (b->precision != precision) continue;
      if (b->name != worst->backend && b->kind != BackendKind::GraphLevel && placeable.count(b->name)) {
        PlacedKernel alternative = *worst;
        alternative.backend = b->name;
        const double error = error_of(alternative, *b);
        if (error < kSettings.backoff_kept_error_ratio * worst_error) {
          char line[120];
          std::snprintf(line, sizeof line, "%s%s (%.3g)", kept.empty() ? "" : ", ", b->name.c_str(), error);
          kept += line;
          continue;
        }
      }
      for (NodeId n : worst->nodes) pins.forbidden[n].insert(b->name);
    }
    char step[600];
    std::snprintf(step, sizeof step,
                  "%s; %s (%s, %s) leaves %s and every other %s backend that errs as much there (its own "
                  "error %.3g of its output's peak)%s%s",
                  r.run.verify.mismatch.c_str(), graph.node(worst->nodes.front()).name.c_str(),
                  worst->backend.c_str(), worst->label.c_str(), worst->backend.c_str(),
                  precision_name(precision), worst_error,
                  kept.empty() ? "" : "; clearly more precise there, still a choice: ", kept.c_str());
    r.backoff.push_back(step);
    if (observer) observer->on_notice("accuracy back-off: " + r.backoff.back());
    search_again(graph, pins, r.tuned, observer);
    r.run.verify = with_held_out(graph, r.tuned.placement,
                                 verify(graph, r.tuned.placement, r.tuned.inputs, run), run, draw);
    stepped = true;
  }
  if (stepped) r.run.timing = time_placement(graph, r.tuned.placement, r.tuned.inputs, run);
}

ExportReport export_placement(const Graph& graph, const Placement& placement,
                              const ExportStepOptions& options) {
  set_backend_threads(placement.threads);
  return export_artifact(graph, placement, or_all(options.backends), options.model_name, options.path);
}

BucketedExportReport export_buckets(const std::vector<PlacedBucket>& buckets,
                                    const ExportStepOptions& options) {
  std::vector<ExportBucket> list;
  for (const PlacedBucket& b : buckets) list.push_back({b.dims, &b.graph, &b.placement});
  if (!buckets.empty()) set_backend_threads(buckets.front().placement.threads);
  return export_artifact_buckets(list, or_all(options.backends), options.model_name, options.path);
}

}  // namespace collage::workflow
