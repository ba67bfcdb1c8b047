// The profile of a placement's real run (workflow::profile, app/workflow): each kernel timed inside
// the end-to-end run (Executor::set_profiling) beside its isolated measured cost, and
// its writers (report JSON, Chrome trace event format). Invariants: `kernels` is in
// execution order, one per placement kernel (kernels[k] is placement.kernels[k]); every
// run has one StepTime per kernel; the additive error e2e - Σ isolated equals
// Σ kernels' delta_ms() + outside_kernels_ms() by construction.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/runtime/executor.h"

namespace collage {

struct KernelProfile {
  std::string label;  // the kernel's ops ("Conv+Relu"), as its executor step names it
  std::string backend;
  std::vector<NodeId> nodes;
  double in_run_ms = 0;    // median over the runs of its time inside the run
  double start_ms = 0;     // median start offset from just before the run's first kernel
  double isolated_ms = 0;  // its cost measured alone: the placement's cost_ms (0 if unknown)
  double flops = 0;        // its nodes' arithmetic (node_cost: a multiply-add counts as 2)
  double delta_ms() const { return in_run_ms - isolated_ms; }
  // The rate it ran at inside the run: against the CPU's FMA peak, how much time is left to take.
  double gflop_per_s() const { return in_run_ms > 0 ? flops / in_run_ms * 1e-6 : 0; }
};

struct ProfiledRun {
  double start_ms = 0;  // from the first profiled run's start
  double total_ms = 0;  // the whole Executor::run
  std::vector<StepTime> steps;
};

struct ProfileReport {
  std::vector<KernelProfile> kernels;
  std::vector<ProfiledRun> runs;
  int threads = 1;
  double e2e_median_ms = 0;    // median of runs[].total_ms
  double kernel_sum_ms = 0;    // Σ kernels' in_run_ms
  double isolated_sum_ms = 0;  // Σ kernels' isolated_ms
  double predicted_ms = 0;     // the placement's prediction (isolated costs + dispatch epsilon)
  double flops = 0;            // Σ kernels' flops: the whole graph's arithmetic

  // Measured end to end minus the sum of isolated costs.
  double additive_error_ms() const { return e2e_median_ms - isolated_sum_ms; }
  // The run's time outside any kernel: input checks, buffer bookkeeping, gaps.
  double outside_kernels_ms() const { return e2e_median_ms - kernel_sum_ms; }
  double gflop_per_s() const { return e2e_median_ms > 0 ? flops / e2e_median_ms * 1e-6 : 0; }
};

// {"threads", "runs", "e2e_median_ms", "kernel_sum_ms", "isolated_sum_ms", "additive_error_ms",
//  "outside_kernels_ms", "predicted_ms", "flops", "gflop_per_s", "kernels": [{"label", "backend", "nodes",
//  "in_run_ms", "start_ms", "isolated_ms", "delta_ms", "share", "flops", "gflop_per_s"}]};
//  share = in_run_ms / e2e_median_ms; gflop_per_s end to end = flops / e2e_median_ms.
std::string profile_to_json(const ProfileReport& report);

// Chrome trace event format as ONNX Runtime's profiler writes it (a JSON array, opens in
// Perfetto and chrome://tracing): per run one "X" event (cat "run") and inside it one "X"
// event per kernel (name = label, cat = backend, ts/dur in microseconds, args: nodes,
// isolated_ms, kernel index), plus process/thread name metadata ("M") events.
std::string profile_chrome_trace(const ProfileReport& report);

}  // namespace collage
