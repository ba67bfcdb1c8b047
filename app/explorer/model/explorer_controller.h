// The explorer's model and controller: it owns the model state (graph, layout,
// placement, pins, tune and refine results, the last profile, settings) and runs the workflow
// steps (app/workflow) as jobs on a QThread, one at a time, plus the measurement queue's
// status beside them. Progress and results arrive as typed signals on the controller's
// thread; nothing here uses widgets (this library, collage_explorer_model, does not link
// Qt5::Widgets), so it is unit-tested on its own (tests/gui/controller_test.cc,
// tests/gui/explorer_model_test.cc).
#pragma once

#include <QMetaType>
#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "app/explorer/model/graph_layout.h"
#include "app/explorer/model/node_details.h"
#include "app/explorer/model/scope_details.h"
#include "app/workflow/workflow.h"
#include "core/ir/graph.h"
#include "core/ir/shape_buckets.h"
#include "core/search/explain.h"
#include "core/search/placement_diff.h"
#include "core/search/tuner.h"
#include "core/tuning/measure_queue.h"
#include "core/tuning/progress.h"

class QThread;

namespace collage {

// PlacementCosts: after load_placement, the candidates and their costs from the cost DB (nothing measured).
// ExportArtifact: the compiled artifact written, reloaded and checked against the in-process run.
enum class Job { Load, Tune, Refine, Profile, PlacementCosts, ExportArtifact };

// Measuring has begun: every candidate kernel, before the first cost lands.
struct CandidateList {
  std::vector<Candidate> candidates;
};

// One candidate's cost, as it lands (measured, from the cost DB, or invalid).
struct MeasuredCost {
  size_t index = 0;  // into CandidateList::candidates
  MeasuredCandidate result;
};

// Refining: the best placement so far, each time it improves (already adopted).
struct BestPlacement {
  Placement placement;
  double fitness_ms = 0;
};

// A job's end. The state (graph, placement, results) is updated before it is emitted.
struct JobReport {
  Job job = Job::Load;
  QString summary;     // one line for the status bar
  QStringList log;     // lines for the log, in order
  QString mismatch;    // Tune: non-empty when the placement disagrees with the native reference
  double seconds = 0;  // wall time of the job
};

// Two placements of the model compared (core/search/placement_diff.h): A and B named for people.
struct PlacementComparison {
  QString a_name, b_name;
  PlacementDiff diff;
};

// The shared cost DB's measurement queue, as `collage workers` shows it (start_queue_status).
struct QueueStatus {
  QString location;                            // the cost DB, its password redacted
  int64_t pending = 0, running = 0, done = 0;  // jobs per state
  std::vector<WorkerStatus> workers;           // alive: a heartbeat within kSettings.worker_lease_s
  QString error;  // not a shared DB, or it could not be read: then nothing else is set
};

struct JobFailure {
  Job job = Job::Load;
  QString message;
  bool cancelled = false;  // stopped on request (not an error to report)
};

class ExplorerController : public QObject {
  Q_OBJECT

 public:
  explicit ExplorerController(QObject* parent = nullptr);
  ~ExplorerController() override;  // cancels and waits for a running job

  // ---- jobs (each refuses to start while another runs: false) ----
  // Import (symbolic dims at `dims`, unlisted ones 1) and lay out; a running job is cancelled
  // first. Forgets the shape buckets of an earlier placement file.
  bool open_model(const QString& path, const DimValues& dims = {});
  bool start_tune();    // measure + search with the settings and pins, then verify and time
  bool start_refine();  // graph-level search from the current placement, then side by side
  // Times every kernel of the current placement inside the real run (workflow::profile, the
  // settings' repeat) at the placement's thread count, on the tune's inputs (else seeded random
  // ones); emits `profiled` and keeps the report (profile()). Refused (false) without a placement.
  bool start_profile();
  // Reads the shared cost DB's job counts and workers on a thread of its own and emits
  // `queue_status`: beside the one-at-a-time jobs (a read, wanted while a remote Tune runs),
  // so it neither waits for nor blocks them. A cost DB that is not postgresql:// is an
  // answer with `error` set. False while the previous query is still out.
  bool start_queue_status();
  void stop() { cancel_ = true; }  // through ProgressObserver::cancel_requested
  bool busy() const { return thread_ != nullptr; }

  // ---- settings ----
  void set_backends(std::vector<const BackendSpec*> backends);  // native is always added
  const std::vector<const BackendSpec*>& backends() const { return backends_; }
  void set_threads(int threads) { threads_ = threads; }
  int threads() const { return threads_; }
  void set_cost_db_path(const QString& path) { cost_db_path_ = path; }
  // The search's per-kernel dispatch cost (`collage tune --epsilon`); < 0 measures it.
  void set_epsilon_ms(double epsilon_ms) { epsilon_ms_ = epsilon_ms; }
  const QString& cost_db_path() const { return cost_db_path_; }
  // Tune and Refine measure through the team's `collage worker`s (a postgresql:// cost
  // DB; `collage tune --remote`), locally when none of this machine kind is alive.
  void set_remote(bool remote) { remote_ = remote; }
  bool remote() const { return remote_; }
  // `collage tune --accuracy`: a Tune under this budget may place reduced-precision kernels
  // (those selected in set_backends) and holds the placement to it end to end, backing off to
  // fp32 kernel by kernel until it does. Not enabled (the default): fp32 only, and a
  // reduced-precision backend selected is refused by the tune. A loaded placement tuned under a
  // budget brings its budget (placement_accuracy); an fp32 one leaves the budget as it is.
  void set_accuracy(const AccuracyBudget& budget) { accuracy_ = budget; }
  const AccuracyBudget& accuracy() const { return accuracy_; }

  // ---- model state ----
  const QString& model_path() const { return model_path_; }
  const Graph* graph() const { return graph_.get(); }
  const GraphLayout& layout() const { return layout_; }
  const std::optional<Placement>& placement() const { return placement_; }
  const std::optional<TuneResult>& tuned() const { return tuned_; }
  const Pins& pins() const { return pins_; }
  // After a refine: the placement it started from (op-level) and the best it found, whether
  // adopted or reverted by the side-by-side check. Reset by Load, Tune and Load placement.
  const std::optional<Placement>& op_level_placement() const { return op_level_; }
  const std::optional<Placement>& refined_placement() const { return refined_; }
  const std::optional<ProfileReport>& profile() const { return profile_; }  // the last profile
  int node_id(const std::string& name) const;                               // -1 if absent
  void set_pin(int node, const QString& backend);     // only this backend may cover the node
  void set_forbid(int node, const QString& backend);  // this backend may not
  void clear_pins(int node);
  std::vector<NodeId> candidate_nodes(size_t index) const;  // nodes of tuned candidate `index`
  NodeDetails node_details(int node) const;                 // what the inspector shows
  ScopeDetails scope_details(int scope) const;              // of a name scope (ScopeTree::of ids)

  // ---- why here, and what if (core/search/explain.h) ----
  // From tune results and the placement only: re-searches over those costs, with the
  // placement's ε and the current pins; nothing is measured, so it runs synchronously
  // (a few ms per search on ResNet-50). nullopt / empty without tuned costs or a
  // placement, or for a node outside the graph.
  std::optional<NodeExplanation> explain_node(int node) const;
  // Per backend offering a kernel for the node: the predicted Δ of "Run on" / "Forbid" it.
  std::vector<WhatIf> what_ifs(int node) const;
  // What those Δs are measured against, in words (core/search/explain.h); empty without an explainer.
  QString delta_baseline() const;

  // ---- files (synchronous; errors as exceptions for the caller's dialog) ----
  // Reads and validates the placement (throws Error; then nothing changes), adopts it and
  // its pins at once, then fills `tuned()` as a tune would (candidates of the current
  // backends and their costs at the placement's threads) from the cost DB alone in a
  // PlacementCosts job: candidates_listed, one cost_measured per candidate, job_finished.
  // Candidates the DB lacks get Cost::not_measured(). A running job is cancelled.
  void load_placement(const QString& path);
  // Writes the placement in view; with shape buckets, the whole file (format 2): every bucket,
  // the one in view as it is now (re-tuned, re-searched), the others as last seen here.
  void save_placement(const QString& path) const;  // throws Error
  // ExportArtifact job (compiling and checking takes seconds on big models, so it runs off
  // the GUI thread, where the libraries' thread count is also set): writes the artifact,
  // reloads it and checks its outputs; the report's summary says where and how big.
  // Refused (job_failed) without a placement.
  bool start_export_artifact(const QString& path);
  // The current placement (A) against a placement file (B), validated against the model. Throws Error.
  PlacementComparison compare_with_file(const QString& path) const;

  // ---- shape buckets (a placement file with a placement per shape: core/ir/shape_buckets.h) ----
  // load_placement of such a file keeps its buckets; the graph in view is the one imported for
  // one of them (the bucket matching the open model's dims, else the file's first: then the
  // model is re-imported for it, as a Load job, before the placement is adopted).
  const std::vector<DimValues>& bucket_dims() const { return bucket_dims_; }  // empty: none
  int current_bucket() const;                      // index into bucket_dims() of the graph in view; -1: none
  const DimValues& dims() const { return dims_; }  // of the graph in view
  // Re-imports the model for bucket `index` (a Load job) and adopts its placement, whose costs
  // then load as load_placement's do. False while a job runs or for a bad index.
  bool switch_bucket(size_t index);
  // The current bucket's placement (A) against bucket `index`'s (B): where the placement changes
  // with the shape. Imports the model for B's dims (synchronously). Throws Error.
  PlacementComparison compare_with_bucket(size_t index) const;
  // The last refine's op-level placement (A) against its refined one (B). Throws Error when none ran.
  PlacementComparison compare_op_level_with_refined() const;

 signals:
  void progress(const collage::ProgressEvent& event);
  void candidates_listed(const collage::CandidateList& list);
  void cost_measured(const collage::MeasuredCost& cost);
  void best_placement(const collage::BestPlacement& best);
  void job_finished(const collage::JobReport& report);
  void profiled(const collage::ProfileReport& report);  // Profile: before its job_finished
  void job_failed(const collage::JobFailure& failure);
  void queue_status(const collage::QueueStatus& status);  // start_queue_status's answer
  void message(const QString& line);                      // a log line (pins, files)
  // A placement was loaded: the thread count it was tuned at (and is verified and profiled at).
  void placement_threads(int threads);
  // A placement tuned under an accuracy budget was loaded: that budget (its SPEC), now the tune's.
  void placement_accuracy(const QString& spec);

 private:
  class Observer;
  // Runs `work` on a new QThread; `work` returns what to apply on this thread when it ends.
  // A throw becomes job_failed. Observer events of an older job are dropped.
  using Apply = std::function<JobReport(ExplorerController&)>;
  bool run(Job job, std::function<Apply(ProgressObserver&)> work);
  void wait_for_job();  // cancels and joins; the job's result is dropped
  std::optional<PlacementExplainer> explainer() const;
  void job_ended(Job job, Apply apply, QString error, double seconds);

  std::vector<const BackendSpec*> backends_;
  int threads_ = 1;
  double epsilon_ms_ = -1;
  QString cost_db_path_;
  bool remote_ = false;
  AccuracyBudget accuracy_;

  // Adopts `placement` (already validated against graph_) and its pins, then loads the costs
  // of its candidates from the cost DB (a PlacementCosts job); `origin` names it in messages.
  void adopt_placement(Placement placement, const QString& origin);

  QString model_path_;
  bool dynamic_shapes_ = false;  // graph_ was imported with shapes decided as it runs
  DimValues dims_;               // of graph_
  std::vector<DimValues> bucket_dims_;
  std::vector<std::string> bucket_placements_;  // each bucket's placement JSON, as bucket_dims_
  void keep_bucket_placement();                 // the placement in view into its bucket's entry
  QString buckets_file_;
  std::shared_ptr<const Graph> graph_;
  GraphLayout layout_;
  // The last tune's result, or after load_placement the cost DB's candidates and costs
  // (then `tuned_->placement` is the loaded placement, `inputs` the tune's seeded random
  // inputs, `search` empty).
  std::optional<TuneResult> tuned_;
  // The last tune's placement as timed after it, with its measured median (library_rivals).
  std::optional<std::pair<Placement, double>> tuned_timing_;
  std::optional<Placement> placement_;  // in force: tuned, refined or loaded
  Pins pins_;
  std::optional<Placement> op_level_, refined_;  // the last refine's start and best
  std::optional<ProfileReport> profile_;

  QThread* thread_ = nullptr;         // the running job, owned (deleted when it ends)
  QThread* status_thread_ = nullptr;  // the queue status query, owned likewise
  std::atomic<bool> cancel_{false};
  unsigned generation_ = 0;  // bumped per job: stale observer events are dropped
};

// A what-if as a menu shows it: "+0.214 ms", "-0.010 ms, near tie", "impossible".
QString what_if_label(const Alternative& alternative);

// The queue status as the log and the workers dialog show it: the job counts, then one
// entry per worker (or the error).
QString queue_status_text(const QueueStatus& status);

// The status-bar line of a finished tune (also its log line); `previous_predicted_ms`: the
// placement it replaces, if there was one.
QString tune_summary(const TuneResult& tuned, double measured_ms, std::optional<double> previous_predicted_ms,
                     const std::string& mismatch);

}  // namespace collage

Q_DECLARE_METATYPE(collage::ProgressEvent)
Q_DECLARE_METATYPE(collage::CandidateList)
Q_DECLARE_METATYPE(collage::MeasuredCost)
Q_DECLARE_METATYPE(collage::BestPlacement)
Q_DECLARE_METATYPE(collage::JobReport)
Q_DECLARE_METATYPE(collage::JobFailure)
Q_DECLARE_METATYPE(collage::ProfileReport)
Q_DECLARE_METATYPE(collage::QueueStatus)
