// Timing whole placements: the graph-level search's fitness, and the final
// side-by-side check that a refined placement really beats the op-level one.
// Shared by the CLI and the explorer so both judge placements the same way.
#pragma once

#include <functional>
#include <vector>

#include "core/ir/settings.h"
#include "core/search/placement.h"
#include "core/search/refine.h"

namespace collage {

// Fitness for refine_placement(): compiles the placement, runs it untimed to warm up (once,
// and for at least kSettings.side_by_side_settle_ms, as a side-by-side turn), then returns the
// median of `repeats` timed samples (ms per run; a sample is the mean of the runs filling
// kSettings.timed_sample_ms). A placement some library
// cannot build (Error kind Unsupported) is +infinity, so it loses. Compiled beside_others
// (CompileOptions): genome after genome in one process.
FitnessFn measured_fitness(const Graph& graph, std::vector<const BackendSpec*> backends,
                           CompileOptions options, std::vector<Tensor> inputs, int repeats);

struct SideBySide {
  double a_ms = 0;  // median over the rounds
  double b_ms = 0;
  int rounds = 0;
};

// Times `a` and `b` alternately, A B B A A B B A ..., so slow drift of the machine
// (frequency, other load) hits both sides alike; `rounds` timed runs of each. Each turn first
// runs its side untimed, at least once and for at least `settle_ms`: a side is timed in its own
// steady state, as it runs deployed, not in what the other side left behind (OpenMP workers
// spinning for milliseconds after their last kernel take the core another library's pool
// needs). A turn's timed sample runs its side at least once and until `sample_ms` have passed,
// and counts the mean run. `clock_ms` is a monotonic clock in ms (tests inject a fake one).
// `give_up_after` > 0: once that many rounds are done and `b` was slower in each of them, the
// rest are not run (`rounds` then says how many were): a rival that loses every round of the
// first half loses the contest, and on a 100 ms model each round costs a fifth of a second.
SideBySide time_side_by_side(const std::function<void()>& a, const std::function<void()>& b, int rounds,
                             const std::function<double()>& clock_ms = {},
                             double settle_ms = kSettings.side_by_side_settle_ms,
                             double sample_ms = kSettings.timed_sample_ms, int give_up_after = 0);

// One timed sample: `run` at least once and until `sample_ms` have passed on `clock_ms`; the mean
// run (ms).
double timed_sample(const std::function<void()>& run, const std::function<double()>& clock_ms,
                    double sample_ms = kSettings.timed_sample_ms);

// Both placements compiled (beside_others: CompileOptions), warmed up and timed side by side on `inputs`.
SideBySide compare_placements(const Graph& graph, const Placement& a, const Placement& b,
                              const std::vector<const BackendSpec*>& backends, const CompileOptions& options,
                              const std::vector<Tensor>& inputs, int rounds);
// Two placements already compiled (and warmed up; beside_others, or one side's pool may stay awake
// into the other's turns), timed side by side as time_side_by_side.
SideBySide compare_executors(Executor& a, Executor& b, const std::vector<Tensor>& inputs, int rounds,
                             int give_up_after = 0);

}  // namespace collage
