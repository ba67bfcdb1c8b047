// The refine's side-by-side contests (docs/design.md, "Contests"): the whole-library seeds and
// the segment moves against the search's best, and the timing they and the library contests
// share. Internal to the workflow: run by refine() and run_refine() only.
#pragma once

#include <vector>

#include "app/workflow/workflow.h"
#include "backends/registry.h"

namespace collage::workflow::detail {

inline CompileOptions compile_options(int threads) {
  CompileOptions copts;
  copts.threads = threads;
  return copts;
}

// All backends when none were selected.
inline const std::vector<const BackendSpec*>& or_all(const std::vector<const BackendSpec*>& backends) {
  return backends.empty() ? all_backends() : backends;
}

// The contest's two medians (a = best, b = seed) from the cost DB, or timed and stored: a later
// refine on the same DB (the explorer after `collage tune`) takes the same decision untimed.
SideBySide contest_timing(const Graph& graph, const Placement& best, const Placement& seed,
                          const std::vector<Tensor>& inputs, const RefineStepOptions& options, CostDb* db);

// Each whole-library seed within kSettings.seed_contest_margin of r.result's best, timed against
// it; a faster one becomes the best (r.seed_contests records each).
void contest_seeds(const Graph& graph, const Placement& op_level, const std::vector<Tensor>& inputs,
                   const RefineStepOptions& options, CostDb* db, RefineReport& r, ProgressObserver* observer);

// The segment contests (SegmentContest, workflow.h), after the seed contests.
void contest_segments(const Graph& graph, const Placement& op_level,
                      const std::vector<const BackendSpec*>& graph_level, const std::vector<Tensor>& inputs,
                      const RefineStepOptions& options, CostDb* db, RefineReport& r,
                      ProgressObserver* observer);

}  // namespace collage::workflow::detail
