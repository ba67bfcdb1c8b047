// The refine's side-by-side contests (docs/design.md, "Contests"): the whole-library seeds and
// the segment moves against the search's best, and the timing they and the library contests
// share. Internal to the workflow: run by refine() and run_refine() only.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
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

// check_held_out of `placement` compiled afresh; the draw is computed at its first use in `draw`.
// A placement without a budget (fp32), or one already failing, is returned as it is.
VerifyReport with_held_out(const Graph& graph, const Placement& placement, VerifyReport first,
                           const RunOptions& options, std::optional<HeldOutDraw>& draw);

// What one refine's contests share: the native reference's outputs (computed at the first
// verified contest) and the best placement compiled once, again only when a contest replaced it.
// A contest's two medians are stored in the cost DB: a later refine on the same DB (the explorer
// after `collage tune`) takes the same decision without compiling or timing anything.
class ContestBench {
 public:
  ContestBench(const Graph& graph, const std::vector<Tensor>& inputs, const RefineStepOptions& options,
               CostDb* db);
  ~ContestBench();

  struct Outcome {
    std::string mismatch;     // the rival disagrees with the native reference, or cannot be built: not timed
    SideBySide timing;        // the deciding timing, a = best, b = rival: the last confirmation's if one ran
    bool rival_wins = false;  // faster by min_gain in the first timing and in every confirmation
    std::optional<SideBySide> won_first;  // the first timing, when the rival won it and was timed again
  };
  // `rival` against `best`, alternated (max(repeat, side_by_side_min_rounds) rounds, given up after
  // kSettings.contest_give_up_rounds lost ones); a rival faster by `min_gain` (b < a * (1 - min_gain))
  // is timed again kSettings.contest_confirmations times and wins only if it wins each. When
  // `verify_rival`, its warm-up run is first checked against the native reference (a stored timing
  // was verified when it was timed). A rival with an accuracy budget is always verified, under it
  // with kSettings.accuracy_margin and on the held-out draw too.
  Outcome contest(const Placement& best, const Placement& rival, bool verify_rival, double min_gain = 0);

  // The timing of one contest (compare_executors by default); tests script it.
  using Timer = std::function<SideBySide(Executor& best, Executor& rival)>;
  void set_timer(Timer timer) { timer_ = std::move(timer); }

 private:
  const Graph& graph_;
  const std::vector<Tensor>& inputs_;
  const RefineStepOptions& options_;
  CostDb* db_;
  std::string model_;  // model_fingerprint(graph_), a contest's cost key
  std::optional<std::vector<Tensor>> reference_;
  std::optional<HeldOutDraw> held_out_;  // under a budget: computed at the first verified rival
  std::string best_signature_;           // of the placement best_ holds compiled
  std::unique_ptr<Executor> best_;
  Timer timer_;
};

// "X ms vs Y ms", the rival's time first, and the first timing before it when the rival won that
// and a confirmation ran ("X' ms vs Y' ms, again X ms vs Y ms").
std::string contest_times(const SideBySide& timing, const std::optional<SideBySide>& won_first);

// Each whole-library seed with a fitness, timed against r.result's best; a faster one becomes the
// best (r.seed_contests records each).
void contest_seeds(const Graph& graph, const Placement& op_level, ContestBench& bench, RefineReport& r,
                   ProgressObserver* observer);

// The segment contests (SegmentContest, workflow.h), after the seed contests.
// They stop once they have taken options.budget_s; r.segment_moves_not_tried counts the rest.
void contest_segments(const Graph& graph, const Placement& op_level,
                      const std::vector<const BackendSpec*>& graph_level, ContestBench& bench,
                      const RefineStepOptions& options, RefineReport& r, ProgressObserver* observer);

}  // namespace collage::workflow::detail
