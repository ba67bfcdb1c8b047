// The op-level pipeline in one call, shared by the CLI and the GUI:
// candidates -> measured costs (cost DB) -> search -> Placement.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/search/close_contests.h"
#include "core/search/placement.h"
#include "core/search/search.h"
#include "core/tuning/candidates.h"
#include "core/tuning/cost_db.h"
#include "core/tuning/measurer.h"

namespace collage {

struct TuneOptions {
  MeasureOptions measure;
  SearchOptions search;  // epsilon_ms < 0: measure the dispatch overhead
  Pins pins;
  uint64_t input_seed = 1;
  // Candidates not to measure: a non-empty reason skips one (its cost is NotMeasured with that
  // reason, so the search leaves it out and the cost DB stores nothing for it).
  std::function<std::string(const Candidate&)> skip;
  // Close contests measured again side by side before the final search (close_contests.h);
  // not with cached_only or a remote queue (nothing is measured here then).
  ContestOptions contests;
  // A measurement session shared by the shape buckets of one tune (Measurer::share_worker): this
  // graph is its bucket `shared_bucket`. Null: a worker of this tune's own (when isolated).
  MeasureWorker* shared_worker = nullptr;
  size_t shared_bucket = 0;
};

// One close contest as it was settled: each member's cost before and after (aligned with
// `members`, the placed one first; after: -1 when it failed), and what the search placed on
// the new costs: the placed one still, its rivals, or neither (other contests moved it).
struct SettledContest {
  std::vector<size_t> members;
  std::vector<double> before_ms, after_ms;
  bool kept = true;
  bool rivals_placed = false;
};

struct TuneResult {
  Placement placement;
  std::vector<Candidate> candidates;
  std::vector<MeasuredCandidate> costs;  // aligned with candidates
  SearchResult search;
  std::vector<Tensor> inputs;  // the random inputs measured on
  int workers_started = 0;     // measure worker processes (more than 1: some were replaced)
  size_t measured_now = 0, from_cache = 0, invalid = 0;
  size_t skipped = 0;  // by TuneOptions::skip (counted in `invalid` too)
  double measure_ms = 0;
  std::vector<SettledContest> contests;
  double contest_ms = 0;  // measuring them again (part of measure_ms)
  // What the tune could not do as asked (a body left to run natively, and why).
  std::vector<std::string> notes;
};

// The search again over `r`'s candidates and costs under `pins` (nothing is measured):
// r.search and r.placement are replaced, the placement's other settings kept. Throws as
// search_placement when the pins leave a node uncoverable.
void search_again(const Graph& graph, const Pins& pins, TuneResult& r, ProgressObserver* observer = nullptr);

// What one library alone runs: the search over `r`'s costs with only `backend`'s candidates and
// native's (filling what the library lacks), under `start`'s pins; `start`'s other settings (threads,
// epsilon, bodies) kept. None when that leaves a node uncoverable (a pin elsewhere, an op neither runs).
std::optional<Placement> library_placement(const Graph& graph, const TuneResult& r, const Placement& start,
                                           const std::string& backend);

// `evaluator` computes the reference values every candidate is checked against; of `backends`,
// those whose min_threads exceeds the measuring thread count take no part. Control-flow
// nodes' bodies are tuned too, each as a graph of its own (Placement::bodies); the counts and
// measure time include theirs.
TuneResult tune(const Graph& graph, const std::vector<const BackendSpec*>& backends,
                const NodeEvaluator& evaluator, const TuneOptions& options, CostDb* db,
                ProgressObserver* observer = nullptr);

}  // namespace collage
