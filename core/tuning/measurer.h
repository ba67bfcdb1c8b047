// Measures candidate kernels on this machine: build once, verify against the
// reference values on first run, then time warm-up + repeats. Costs are cached
// in the CostDb; candidates with the same signature are measured once.
#pragma once

#include <memory>
#include <vector>

#include "core/backend_api/backend.h"
#include "core/ir/accuracy.h"
#include "core/ir/settings.h"
#include "core/ir/tensor_compare.h"
#include "core/tuning/candidates.h"
#include "core/tuning/cost.h"
#include "core/tuning/cost_db.h"
#include "core/tuning/measure_worker.h"
#include "core/tuning/progress.h"

namespace collage {

struct MeasureOptions {
  int threads = 1;
  int warmup_runs = kSettings.measure_warmup_runs;
  int min_samples = kSettings.measure_min_samples;
  int max_samples = kSettings.measure_max_samples;
  double min_time_ms =
      kSettings.measure_min_time_ms;  // keep sampling until this much time was spent timing...
  double max_time_ms =
      kSettings.measure_max_time_ms;                 // ...but slow kernels stop here once they have 3 samples
  Tolerance tolerance = kSettings.kernel_tolerance;  // agreement with the native reference
  // Reduced-precision kernels: each output's own error must fit this budget's max-rel and
  // cosine bounds instead of `tolerance` (core/ir/accuracy.h).
  AccuracyBudget accuracy;
  // Look costs up only: a candidate the cost DB lacks gets Cost::not_measured(),
  // nothing is built or timed and no reference values are needed.
  bool cached_only = false;
  // Non-empty worker.command: build and time each candidate in a worker process
  // (measure_worker.h) so a crashing or hanging library costs only that candidate.
  WorkerOptions worker;
  // A postgresql:// cost DB (the one `db` is): the candidates it lacks become jobs of its
  // measurement queue (measure_queue.h) for the `collage worker`s of this machine kind,
  // and their costs are awaited; measured here when no such worker is alive (a notice says so).
  std::string remote_queue;
  double worker_lease_s = kSettings.worker_lease_s;  // a worker silent this long is taken for gone
};

struct MeasuredCandidate {
  std::string signature;
  Cost cost;
  bool from_cache = false;
  bool remeasured = false;  // measured again side by side with rivals (core/search/close_contests.h)
};

// Every value of the graph computed with `evaluator` on `inputs`: the data each
// candidate is fed and checked against. `node_ms`, if given, receives each node's time.
std::vector<Tensor> reference_values(const Graph& graph, const std::vector<Tensor>& inputs,
                                     const NodeEvaluator& evaluator, std::vector<double>* node_ms = nullptr);

// "" when `got` (a kernel's outputs for `sub`) agrees with the reference `values`, else what
// differs, under compare_tensors() (the tuner's rule by default).
std::string compare_outputs(const Graph& graph, const SubGraph& sub, const std::vector<Tensor>& got,
                            const std::vector<Tensor>& values, const Tolerance& tolerance = kKernelTolerance);

// A reduced-precision kernel's own error: the worst of its outputs `got` for `sub` against the
// reference `values` under `budget` (largest max-rel, smallest cosine, the first failure; the
// top1 bound is for a model's outputs, not one kernel's). The measurer's check and the
// workflow's back-off ranking both use it.
AccuracyMeasure kernel_accuracy(const Graph& graph, const SubGraph& sub, const std::vector<Tensor>& got,
                                const std::vector<Tensor>& values, const AccuracyBudget& budget);

// Median cost of dispatching an empty kernel through the executor's interface:
// the default ε of the search (one kernel's fixed overhead).
double measure_dispatch_overhead_ms();

class Measurer {
 public:
  // `db` may be null (no persistence).
  Measurer(const Graph& graph, std::vector<Tensor> reference_values, CostDb* db, MeasureOptions options);
  ~Measurer();

  // One entry per candidate, aligned. Throws Error(Cancelled) when `observer` asks;
  // everything measured before that is already in the DB.
  std::vector<MeasuredCandidate> measure(const std::vector<Candidate>& candidates,
                                         const std::vector<const BackendSpec*>& backends,
                                         ProgressObserver* observer = nullptr);

  // Measures each of `rivals` (kernels one choice of the search is between) `rounds` times,
  // alternating them (forward, then backward, ...), and keeps each one's median round (its
  // first failure if a round failed), which replaces its cost in the DB. A slow drift of the
  // machine's speed over the seconds this takes then reaches every rival alike.
  // `signatures` is aligned with `rivals` (MeasuredCandidate::signature: the DB keys).
  std::vector<Cost> measure_alternating(const std::vector<Candidate>& rivals,
                                        const std::vector<std::string>& signatures,
                                        const std::vector<const BackendSpec*>& backends, int rounds,
                                        ProgressObserver* observer = nullptr);

  // Times one compiled kernel on the reference inputs of `sub` (also used for whole placements).
  Cost time_kernel(Kernel& kernel, const SubGraph& sub) const;

  // Builds, verifies and times `sub` in this process (what a measure worker runs).
  Cost measure_in_process(const BackendSpec& backend, const SubGraph& sub) const;
  // Each node's native time from the reference run: remote jobs carry it (with the
  // reference outputs) so workers need not recompute the reference.
  void set_node_ms(std::vector<double> node_ms) { node_ms_ = std::move(node_ms); }
  // Measures in `worker`'s session (options.worker.command set), switched to its bucket `bucket`
  // on the first candidate to measure, instead of starting a worker of its own: one worker
  // process and one copy of the weights for every shape bucket of a tune. The caller owns it.
  void share_worker(MeasureWorker* worker, size_t bucket);
  // Worker processes started by this measurer (0 when measuring in-process).
  int workers_started() const;

 private:
  const Graph& graph_;
  std::vector<Tensor> values_;
  std::vector<double> node_ms_;
  CostDb* db_;
  MeasureOptions options_;
  std::unique_ptr<MeasureWorker> worker_;   // started on the first candidate to measure
  bool lock_noticed_ = false;               // in-process: the user was told another process times
  MeasureWorker* shared_worker_ = nullptr;  // share_worker: used instead of worker_
  size_t shared_bucket_ = 0;
  bool shared_selected_ = false;
  int shared_started_before_ = 0;

  MeasureWorker& worker();
  // In the worker or in-process; a worker's wait ends with Error(Cancelled) when `observer` asks.
  Cost measure_now(const Candidate& c, const BackendSpec& backend, ProgressObserver* observer);
  void store(const Candidate& c, const BackendSpec& backend, const std::string& signature, const Cost& cost);

  // The remote phase (measurer_remote.cc): settles what the queue's workers measure.
  void measure_remotely(const std::vector<Candidate>& candidates, const std::vector<std::string>& signatures,
                        const std::vector<const BackendSpec*>& backend_of,
                        std::vector<MeasuredCandidate>& out, std::vector<bool>& settled,
                        ProgressObserver* observer);
};

}  // namespace collage
