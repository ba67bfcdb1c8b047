// The workflow both front ends run, written once:
//   tune -> verify against the native reference -> time end to end (or profile kernel
//   by kernel) -> refine -> compare side by side (keep or revert) -> export.
// Each step takes an options struct whose defaults are kSettings (settings.h) and
// returns a report of plain data; long steps report progress and are cancelled
// through the ProgressObserver. No Qt: the CLI prints the reports, the explorer
// shows them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/import/onnx_import.h"
#include "core/import/qdq_writer.h"
#include "core/ir/accuracy.h"
#include "core/ir/settings.h"
#include "core/ir/shape_buckets.h"
#include "core/search/artifact_export.h"
#include "core/search/placement_timing.h"
#include "core/search/profile_report.h"
#include "core/search/refine.h"
#include "core/search/tuner.h"
#include "core/tuning/cost_db.h"
#include "core/tuning/measure_worker.h"
#include "core/tuning/progress.h"

namespace collage::workflow {

// ---- load: the model as both front ends import it ----
struct LoadOptions {
  // `--dim NAME=N`: symbolic input dims (unlisted ones are 1).
  std::map<std::string, int64_t> dims;
  // `--bind NAME=FILE.pb`: graph inputs specialised on a value (they become constants),
  // so shapes that depend on input values can be computed. Without them such a model
  // is refused with ValueDependentShapeError, which names the inputs to bind.
  std::map<std::string, Tensor> bound_inputs;
  // `--memory-budget 4G`: the largest tensor the model may ask for (0: a quarter of RAM).
  int64_t memory_budget_bytes = 0;
  // `--shapes dynamic`: shapes that depend on values computed at run time are decided as the
  // model runs (ImportOptions::dynamic_shapes) instead of refusing the model.
  bool dynamic_shapes = false;
};

// Imports `path` with the native kernels folding constants.
Graph load_model(const std::string& path, const LoadOptions& options, ImportReport* report = nullptr);

// The cost DB to open: `given` if not empty, else CostDb::default_path()
// ($COLLAGE_COST_DB, else $XDG_DATA_HOME/collage-explorer/costs.sqlite).
std::string cost_db_path(const std::string& given = "");

// A placement file's text; Io naming the file when it cannot be read.
std::string read_placement_text(const std::string& path);
// A placement JSON file (docs/placement-format.md) for `graph`, over every backend compiled in.
Placement read_placement(const std::string& path, const Graph& graph);

// ---- shape buckets: a placement file with one placement per shape (core/ir/shape_buckets.h) ----
struct PlacedBucket {
  DimValues dims;  // empty for a one-shape (version-1) placement file
  Graph graph;     // the model imported with `base` plus these dims
  Placement placement;
};

// The buckets of placement file `placement_path` that `wanted` names (--dim; one empty bucket
// means every bucket of the file), each with the model imported for it and validated as
// read_placement validates. A one-shape file is read onto the model imported with the one
// wanted bucket's dims (several are InvalidInput: that file holds one shape); a bucket the
// file lacks is InvalidInput listing the file's buckets.
std::vector<PlacedBucket> read_placed_buckets(const std::string& model_path,
                                              const std::string& placement_path, const LoadOptions& base,
                                              const std::vector<DimValues>& wanted);

// The graph-level backends among `backends`, in order.
std::vector<const BackendSpec*> graph_level_backends(const std::vector<const BackendSpec*>& backends);

// The backend policy of every search, for both front ends: the selection (empty: every
// backend compiled in) plus native, which runs every op, so a node no selected library
// takes still has a kernel.
std::vector<const BackendSpec*> search_backends(const std::vector<const BackendSpec*>& selected);

// ---- tune: candidates, measured costs (cost DB), op-level search ----

// `tune --dim` with several shape buckets: what the buckets before measured. A candidate that
// was more than `TuneStepOptions::prune_ratio` times slower than the best kernel of exactly the
// same nodes, in the last bucket that measured it, is not measured again (a shape step rarely
// reverses such a margin; the placement's end-to-end check still holds). The margin carries
// over a bucket that skipped the candidate, so a loser stays skipped rather than coming back
// every other bucket. Used only when both graphs have the same nodes (names and ops, in
// order), so node ids name the same nodes.
struct BucketPrior {
  DimValues dims;
  std::vector<std::string> nodes;  // "name|op" per node of that bucket's graph
  struct Margin {
    double ratio = 1;  // its cost / the best cost of its nodes
    DimValues where;   // the bucket that measured both
  };
  std::map<std::string, Margin> margins;  // "backend|nodes" -> its margin
};
// `tuned`'s margins, over `previous`'s for the candidates `tuned` skipped.
BucketPrior bucket_prior(const DimValues& dims, const Graph& graph, const TuneResult& tuned,
                         const BucketPrior* previous = nullptr);

struct TuneStepOptions {
  std::vector<const BackendSpec*> backends;
  int threads = 1;
  Pins pins;
  double epsilon_ms = -1;  // < 0: measure the dispatch overhead
  double min_time_ms = MeasureOptions{}.min_time_ms;
  Tolerance tolerance = kSettings.kernel_tolerance;
  // `tune --accuracy`: reduced-precision backends take part (all of them when `backends` is
  // empty), each such kernel checked against the budget instead of `tolerance`; run_tune
  // holds the placement to it end to end and backs off until it does. Not enabled: a
  // reduced-precision backend among `backends` is InvalidInput.
  AccuracyBudget accuracy;
  // Build and time candidates in worker processes (default_worker_command(), set by the
  // front ends' main) so a crashing or hanging library costs one candidate; false or no
  // worker command: in this process (`tune --in-process`).
  bool isolated = kSettings.isolate_measurement;
  // `tune --remote`: the candidates a PostgreSQL cost DB lacks are measured by its
  // `collage worker`s (core/tuning/measure_queue.h), locally when none of this kind is
  // alive. InvalidInput with an SQLite cost DB or none.
  bool remote = false;
  double worker_lease_s = kSettings.worker_lease_s;
  // run_tune: timed end-to-end runs of the placement after its verified warm-up.
  int repeat = kSettings.repeat;
  // The previous shape bucket's costs (BucketPrior) and the margin that skips a candidate here.
  std::optional<BucketPrior> prior;
  double prune_ratio = kSettings.bucket_prune_ratio;
  // Close contests measured again this many times, alternated (`--contest-rounds`; 0: none).
  int contest_rounds = kSettings.contest_rounds;
  // bucket_measure_session's session, whose bucket `shared_bucket` this graph is (isolated
  // local measuring only; null: a worker of this tune's own).
  MeasureWorker* shared_worker = nullptr;
  size_t shared_bucket = 0;
};

// One measurement session for all shape buckets of a tune: their graphs go to one worker
// process in one file, the weights they share once, instead of a session per bucket (which
// writes and maps every weight again). Null when there is one bucket or measuring is
// in-process or remote: each bucket then measures as a one-shape tune does.
std::unique_ptr<MeasureWorker> bucket_measure_session(
    const std::vector<MeasureWorker::SessionBucket>& buckets, const TuneStepOptions& options);

// The TuneResult (placement, candidates and their costs, the inputs measured on, counts).
TuneResult tune(const Graph& graph, const TuneStepOptions& options, CostDb* db,
                ProgressObserver* observer = nullptr);

// The candidates and their costs from the cost DB alone: nothing is measured, a candidate
// the DB lacks has Cost::not_measured(); no search runs (`placement` and `search`
// stay empty, `inputs` too). Loading a placement fills the explorer's table from this, and
// `collage explain` reasons over it.
TuneResult cached_costs(const Graph& graph, const TuneStepOptions& options, CostDb* db);

// ---- verify and time a whole placement ----
struct RunOptions {
  std::vector<const BackendSpec*> backends;
  int threads = 1;
  int repeat = kSettings.repeat;  // timed runs (time_placement, verify_and_time)
  Tolerance tolerance = kSettings.verify_tolerance;
  // A placement with reduced-precision kernels is held to this budget; when not enabled, to
  // the one it was tuned under (Placement::accuracy).
  AccuracyBudget accuracy;
};
// Whether some kernel of `placement` runs on a reduced-precision backend.
bool reduced_precision(const Placement& placement);

// What `export --qdq` writes for a placement: the MatMuls its int8 kernels quantize, with the
// very weights they use (an op-level int8 kernel's head; every int8_weights_matmul inside an int8
// graph-level region), and what stays fp32 for want of an ONNX integer form.
struct QdqPlan {
  std::vector<QdqMatmul> matmuls;
  size_t int8_left_fp32 = 0;  // int8 kernels whose head is no MatMul or Gemm of constant weights
  size_t bf16_left_fp32 = 0;  // bf16 kernels: ONNX has no integer form for them
};
QdqPlan qdq_plan(const Graph& graph, const Placement& placement);

struct VerifyReport {
  std::vector<Tensor> outputs;
  double max_abs_error = 0;           // over all outputs; infinity when some difference is NaN
  std::string mismatch;               // empty when the outputs agree: "<output>[i] = x, native reference y"
  std::vector<std::string> accuracy;  // under a budget: per output "name: max-rel .., cosine .., top-1 .."
  bool ok() const { return mismatch.empty(); }
};

struct TimingReport {
  double median_ms = 0;
  double min_ms = 0;
  int runs = 0;
};

struct PlacementRunReport {
  VerifyReport verify;
  TimingReport timing;
};

// Runs `placement` once on `inputs` and compares each output with the native reference.
VerifyReport verify(const Graph& graph, const Placement& placement, const std::vector<Tensor>& inputs,
                    const RunOptions& options);
// The native reference's outputs on `inputs`: what verify() holds a placement to.
std::vector<Tensor> native_reference(const Graph& graph, const std::vector<Tensor>& inputs);
// verify() of outputs `placement` already produced, against native_reference()'s `reference`.
VerifyReport verify_outputs(const Graph& graph, const Placement& placement, std::vector<Tensor> got,
                            const std::vector<Tensor>& reference, const RunOptions& options);
// The held-out draw a placement under a budget is checked on besides the tune's inputs
// (kSettings.held_out_seed), with its native reference: computed once per model and reused.
struct HeldOutDraw {
  std::vector<Tensor> inputs, reference;
};
HeldOutDraw held_out_draw(const Graph& graph);
// Under `placement`'s budget (options.accuracy, else its own), `first` (its check on the tune's
// inputs) and then `placed` run on `draw`: ok only when both hold; a miss on the draw says so.
// Without a budget, or when `first` failed, `first` as it is.
VerifyReport check_held_out(const Graph& graph, const Placement& placement, VerifyReport first,
                            Executor& placed, const HeldOutDraw& draw, const RunOptions& options);
// One warm-up run, then `options.repeat` timed runs.
TimingReport time_placement(const Graph& graph, const Placement& placement, const std::vector<Tensor>& inputs,
                            const RunOptions& options);
// Both with one compilation: the warm-up run is the one verified.
PlacementRunReport verify_and_time(const Graph& graph, const Placement& placement,
                                   const std::vector<Tensor>& inputs, const RunOptions& options);

// ---- profile: every kernel timed inside the real run ----
// Compiled and threaded as time_placement (one warm-up run), then `options.repeat` runs
// with the executor's per-step timing on: per kernel its median in-run time and start
// offset beside its isolated cost (placement.kernels[k].cost_ms), and the end-to-end
// median. InvalidInput when options.repeat < 1.
ProfileReport profile(const Graph& graph, const Placement& placement, const std::vector<Tensor>& inputs,
                      const RunOptions& options);

// ---- refine: graph-level search with the measured fitness, cached in the cost DB ----
// One library alone (core/search/tuner.h, library_placement), a rival of the chain's result.
struct LibraryRival {
  std::string backend;
  Placement placement;
};

struct RefineStepOptions {
  std::vector<const BackendSpec*> backends;  // all selected; the graph-level ones are searched
  int threads = 1;
  int population = kSettings.refine_population;
  int generations = kSettings.refine_generations;
  int patience = kSettings.refine_patience;
  int fitness_runs = kSettings.fitness_runs;
  double budget_s = kSettings.refine_budget_s;
  uint64_t seed = kSettings.refine_seed;
  // Empty: measured_fitness() over `fitness_runs` runs, in a measure worker when
  // `isolated` (as TuneStepOptions::isolated). Tests inject a deterministic one.
  FitnessFn fitness;
  bool isolated = kSettings.isolate_measurement;
  // As TuneStepOptions::remote: each genome is timed by a `collage worker` of this kind
  // (app/workflow/remote_fitness.h), locally when none is alive.
  bool remote = false;
  double worker_lease_s = kSettings.worker_lease_s;
  // run_refine: timed runs of the refined placement, and side by side max(repeat,
  // kSettings.side_by_side_min_rounds) rounds.
  int repeat = kSettings.repeat;
  // As TuneStepOptions::shared_worker: fitness is timed in that session's worker (bucket
  // `shared_bucket`, on the same inputs as the tune) instead of a session of its own.
  MeasureWorker* shared_worker = nullptr;
  size_t shared_bucket = 0;
  // run_refine: libraries alone timed against its result at the end (library_rivals).
  std::vector<LibraryRival> rivals;
};

struct RegionSummary {
  std::string backend;
  bool moved = false;       // holds op-level kernels the search moved (else kept as placed)
  std::string description;  // "64 nodes: 27 Conv, 27 BatchNormalization from 'a' to 'b'"
};

// The search's best against a whole-library seed close behind it, alternated in one run.
struct SeedContest {
  std::string backend;   // the seed's library: every kernel it can take runs on it
  SideBySide timing;     // a = the search's best at the time, b = the seed (the deciding timing)
  bool adopted = false;  // the seed was faster, and again when timed again: it became result.best
  std::optional<SideBySide> won_first;  // the timing the seed won first, when it was timed again
};

// Then a run of the kernels in execution order (a stage) moved whole to another graph-level
// library, verified and timed against the best so far: random genomes almost never move a stage.
struct SegmentContest {
  std::string backend;                  // where the run went
  std::string from_node, to_node;       // the run's first and last node
  size_t kernels = 0;                   // op-level kernels in the run
  std::string mismatch;                 // the move disagreed with the native reference (not timed, not kept)
  SideBySide timing;                    // a = the best at the time, b = with the run moved (deciding)
  bool adopted = false;                 // faster by kSettings.segment_min_gain, twice: it became result.best
  std::optional<SideBySide> won_first;  // the timing the move won first, when it was timed again
};

struct RefineReport {
  RefineResult result;
  std::vector<SeedContest> seed_contests;        // in the order run (none when cancelled)
  std::vector<SegmentContest> segment_contests;  // in the order run (none when cancelled)
  size_t segment_moves_not_tried = 0;            // left when the segment contests' budget ran out
  double seconds = 0;
  int best_generation = 0;                    // first generation whose best is the final best (0 = a seed)
  std::vector<RegionSummary> regions;         // the graph-level kernels of result.best, in order
  std::vector<std::string> lost_evaluations;  // genomes whose worker crashed or overran (the reason)
};

// After the search, each whole-library seed is timed against the best side by side
// (max(repeat, side_by_side_min_rounds) rounds) and replaces it when faster. Then the segment
// contests: the kernels cut into kSettings.refine_segments runs (refine_segments()), each run
// moved to each graph-level library whose seed is within kSettings.segment_library_margin; a move that
// agrees with the native reference and runs faster side by side by kSettings.segment_min_gain
// becomes the best, and the next moves start from it. The segment contests stop once they have
// taken `options.budget_s` (the search's budget again); the moves left are counted, not tried.
// Throws InvalidInput when `options.backends` holds no graph-level backend.
RefineReport refine(const Graph& graph, const Placement& op_level, const std::vector<Tensor>& inputs,
                    const RefineStepOptions& options, CostDb* db, ProgressObserver* observer = nullptr);

// ---- the final check: both placements alternated, keep or revert ----
struct SideBySideOptions {
  std::vector<const BackendSpec*> backends;
  int threads = 1;
  int repeat = kSettings.repeat;  // rounds: max(repeat, kSettings.side_by_side_min_rounds)
};

struct SideBySideReport {
  bool compared = false;  // false when the refined placement moved nothing (it is the op-level one)
  SideBySide timing;      // a = op-level, b = refined
  bool keep_refined = true;
};

// Fitness medians come from a few runs minutes apart; the final word is a longer run
// of both placements alternated, so drift of a noisy machine cannot decide it. The
// refined placement is kept only when it is faster there.
SideBySideReport compare_side_by_side(const Graph& graph, const Placement& op_level,
                                      const RefineReport& refined, const std::vector<Tensor>& inputs,
                                      const SideBySideOptions& options);

// ---- the chains `collage tune [--refine]` and the explorer's Tune / Refine run ----
// Written once, so both front ends verify, time, compare and keep alike; they only
// print or show the reports.

struct TuneRunReport {
  TuneResult tuned;        // the op-level placement, candidates, costs, inputs
  PlacementRunReport run;  // that placement verified against the native reference, then timed
  // Under an accuracy budget: each back-off step ("why; which kernel returns to fp32"), in order;
  // `tuned` and `run` are then the final placement's.
  std::vector<std::string> backoff;
};

// tune -> verify -> time (options.repeat runs), over search_backends(options.backends).
TuneRunReport run_tune(const Graph& graph, const TuneStepOptions& options, CostDb* db,
                       ProgressObserver* observer = nullptr);

// The rivals worth timing against `start` (the op-level placement the refine starts from): per
// fp32 op-level library of search_backends(backends) with a kernel measured in `tuned`, its
// placement alone, when that differs from `start` and every earlier rival and is predicted
// within kSettings.library_contest_margin of `start`'s prediction or, when longer, of
// `start_measured_ms` (its measured median; 0: not measured).
std::vector<LibraryRival> library_rivals(const Graph& graph, const TuneResult& tuned, const Placement& start,
                                         const std::vector<const BackendSpec*>& backends,
                                         double start_measured_ms = 0);

// Which placement the chain keeps after refining, and why.
enum class KeptPlacement {
  Refined,              // verified and faster side by side
  OpLevelNothingMoved,  // the refined placement is the op-level one
  OpLevelNotFaster,     // verified, but not faster when both were re-measured alternated
  OpLevelMismatch,      // the refined placement disagrees with the native reference
  OpLevelOverBudget,    // under an accuracy budget, the refined placement misses it (a search outcome)
  Library,              // a library alone (a rival) beat the refined or op-level one side by side
};

// A rival timed against the placement kept so far, alternated in one run.
struct LibraryContest {
  std::string backend;
  SideBySide timing;     // a = the kept placement at the time, b = the library alone (deciding)
  bool adopted = false;  // the library alone was faster, and again when timed again: it is kept
  std::string mismatch;  // not timed: it disagrees with the native reference (never expected)
  std::optional<SideBySide> won_first;  // the timing the library won first, when it was timed again
};

struct RefineRunReport {
  RefineReport refine;
  PlacementRunReport refined_run;  // the refined placement verified, then timed (options.repeat runs)
  SideBySideReport side_by_side;   // compared when it moved something and verified
  std::vector<LibraryContest> library_contests;  // options.rivals, then the seeds (none after a mismatch)
  KeptPlacement kept_why = KeptPlacement::OpLevelNothingMoved;
  std::string kept_library;  // under KeptPlacement::Library: whose placement it is
  Placement kept;            // the refined, the op-level or a rival's placement, per kept_why
  bool kept_refined() const { return kept_why == KeptPlacement::Refined; }
};

// refine -> verify and time the refined placement -> side by side -> keep or revert -> each of
// options.rivals, then each whole-library seed the refine measured within
// kSettings.library_contest_margin of its best (ONNX Runtime's whole graph among them), verified
// and timed against what is kept, the faster kept. A refine stopped through
// the observer still ends with its best placement, verified and compared (docs/cli.md, "collage
// tune"). Throws InvalidInput when no graph-level backend is selected.
RefineRunReport run_refine(const Graph& graph, const Placement& op_level, const std::vector<Tensor>& inputs,
                           const RefineStepOptions& options, CostDb* db,
                           ProgressObserver* observer = nullptr);

// "kept the refined placement", "the refined placement is not faster ...": one line for people.
std::string describe(const RefineRunReport& report);

// ---- export: the artifact, written, reloaded and run beside the in-process placement ----
struct ExportStepOptions {
  std::vector<const BackendSpec*> backends;  // empty: every backend compiled in
  std::string model_name;
  std::string path;
};

ExportReport export_placement(const Graph& graph, const Placement& placement,
                              const ExportStepOptions& options);
// Every bucket's placement in one artifact (core/search/artifact_export.h).
BucketedExportReport export_buckets(const std::vector<PlacedBucket>& buckets,
                                    const ExportStepOptions& options);

}  // namespace collage::workflow
