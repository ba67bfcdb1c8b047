#include "app/explorer/model/explorer_controller.h"

#include <QFileInfo>
#include <QThread>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/ir/error.h"
#include "core/ir/graph_analysis.h"
#include "core/ir/random_inputs.h"
#include "core/ir/settings.h"
#include "core/ir/subgraph.h"
#include "core/search/placement_buckets.h"
#include "core/tuning/candidates.h"
#include "core/tuning/cost_store.h"
#include "core/tuning/measure_worker.h"

namespace collage {

// Forwards core progress to the controller's thread as queued calls, in order;
// events of an older job (a newer generation started) are dropped there.
class ExplorerController::Observer : public ProgressObserver {
 public:
  Observer(ExplorerController* controller, unsigned generation)
      : controller_(controller), generation_(generation) {}
  void on_progress(const ProgressEvent& e) override {
    post([e](ExplorerController& c) { emit c.progress(e); });
  }
  void on_candidates(const std::vector<Candidate>& candidates) override {
    post([list = CandidateList{candidates}](ExplorerController& c) { emit c.candidates_listed(list); });
  }
  void on_measured(size_t index, const MeasuredCandidate& result) override {
    post([cost = MeasuredCost{index, result}](ExplorerController& c) { emit c.cost_measured(cost); });
  }
  void on_best_placement(const Placement& best, double fitness_ms) override {
    post([b = BestPlacement{best, fitness_ms}](ExplorerController& c) {
      c.placement_ = b.placement;  // adopted at once: Export and the view follow the best so far
      emit c.best_placement(b);
    });
  }
  void on_notice(const std::string& line) override {
    post([text = QString::fromStdString(line)](ExplorerController& c) { emit c.message(text); });
  }
  bool cancel_requested() const override { return controller_->cancel_.load(); }

 private:
  template <class F>
  void post(F f) {
    ExplorerController* c = controller_;
    unsigned generation = generation_;
    QMetaObject::invokeMethod(
        c,
        [c, generation, f = std::move(f)] {
          if (c->generation_ == generation) f(*c);
        },
        Qt::QueuedConnection);
  }
  ExplorerController* controller_;  // outlives the job: its destructor waits for it
  unsigned generation_;
};

ExplorerController::ExplorerController(QObject* parent)
    : QObject(parent), cost_db_path_(QString::fromStdString(workflow::cost_db_path())) {
  qRegisterMetaType<ProgressEvent>();
  qRegisterMetaType<CandidateList>();
  qRegisterMetaType<MeasuredCost>();
  qRegisterMetaType<BestPlacement>();
  qRegisterMetaType<JobReport>();
  qRegisterMetaType<JobFailure>();
  qRegisterMetaType<ProfileReport>();
  qRegisterMetaType<QueueStatus>();
  set_backends(default_backends());  // fp32 until an accuracy budget is set
}

ExplorerController::~ExplorerController() {
  wait_for_job();
  if (status_thread_) {  // a read of the queue: it ends on its own
    status_thread_->wait();
    delete status_thread_;
  }
}

void ExplorerController::set_backends(std::vector<const BackendSpec*> backends) {
  backends_ = workflow::search_backends(backends);  // the one backend policy (native fills gaps)
}

bool ExplorerController::run(Job job, std::function<Apply(ProgressObserver&)> work) {
  if (thread_) return false;
  cancel_ = false;
  struct Outcome {
    Apply apply;
    QString error;
    double seconds = 0;
  };
  auto outcome = std::make_shared<Outcome>();
  auto observer = std::make_shared<Observer>(this, ++generation_);
  thread_ = QThread::create([work = std::move(work), observer, outcome] {
    auto t0 = std::chrono::steady_clock::now();
    try {
      outcome->apply = work(*observer);
    } catch (const std::exception& e) {
      outcome->error = QString::fromStdString(e.what());
    }
    outcome->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  connect(thread_, &QThread::finished, this, [this, job, generation = generation_, outcome] {
    if (generation != generation_ || !thread_) return;  // dropped by wait_for_job()
    thread_->wait();
    thread_->deleteLater();
    thread_ = nullptr;
    job_ended(job, std::move(outcome->apply), outcome->error, outcome->seconds);
  });
  thread_->start();
  return true;
}

void ExplorerController::wait_for_job() {
  if (!thread_) return;
  cancel_ = true;  // a running tune stops within one candidate
  ++generation_;   // its queued events and result are dropped
  thread_->wait();
  delete thread_;  // now, not deleteLater(): the destructor may run with no event loop left
  thread_ = nullptr;
}

void ExplorerController::job_ended(Job job, Apply apply, QString error, double seconds) {
  if (!apply) {
    emit job_failed(JobFailure{job, error, cancel_.load()});
    return;
  }
  JobReport report = apply(*this);
  report.job = job;
  report.seconds = seconds;
  emit job_finished(report);
}

bool ExplorerController::open_model(const QString& path, const DimValues& dims) {
  wait_for_job();
  bucket_dims_.clear();
  bucket_placements_.clear();
  buckets_file_.clear();
  return run(Job::Load, [path, dims](ProgressObserver&) -> Apply {
    workflow::LoadOptions load;
    load.dims = dims;
    // A model whose shapes follow values computed as it runs (a detector's kept boxes) opens as
    // `--shapes dynamic` imports it; binding an image to open a detector would be no answer.
    std::shared_ptr<const Graph> graph;
    try {
      graph = std::make_shared<const Graph>(workflow::load_model(path.toStdString(), load));
    } catch (const ValueDependentShapeError&) {
      load.dynamic_shapes = true;
      graph = std::make_shared<const Graph>(workflow::load_model(path.toStdString(), load));
    }
    auto layout = std::make_shared<GraphLayout>(layout_graph(*graph));
    const bool dynamic = load.dynamic_shapes;
    return [path, dims, graph, layout, dynamic](ExplorerController& c) {
      c.model_path_ = path;
      c.dynamic_shapes_ = dynamic;
      c.dims_ = dims;
      c.graph_ = graph;
      c.layout_ = std::move(*layout);
      c.tuned_.reset();
      c.tuned_timing_.reset();
      c.placement_.reset();
      c.op_level_.reset();
      c.refined_.reset();
      c.profile_.reset();
      c.pins_ = Pins{};
      JobReport r;
      r.summary = QString("%1%4: %2 nodes (%3 layout)")
                      .arg(path)
                      .arg(graph->num_nodes())
                      .arg(QString::fromStdString(c.layout_.engine))
                      .arg(dims.empty() ? QString() : " at " + QString::fromStdString(bucket_label(dims)));
      if (dynamic)
        r.summary += QString(
                         "; %1 nodes with shapes decided as it runs (--shapes dynamic): native kernels, "
                         "OpenBLAS for their Gemm/MatMul")
                         .arg(nodes_with_dynamic_shapes(*graph).popcount());
      return r;
    };
  });
}

bool ExplorerController::start_tune() {
  if (!graph_ || thread_) return false;
  std::shared_ptr<const Graph> graph = graph_;
  std::vector<const BackendSpec*> backends = backends_;
  int threads = threads_;
  double epsilon_ms = epsilon_ms_;
  Pins pins = pins_;
  std::string db_path = cost_db_path_.toStdString();
  std::optional<double> previous_ms;
  if (placement_) previous_ms = placement_->predicted_ms;
  bool remote = remote_;
  AccuracyBudget accuracy = accuracy_;
  emit message(QString("tuning with %1 backends, %2 thread(s), cost DB %3%4%5")
                   .arg(backends.size())
                   .arg(threads)
                   .arg(QString::fromStdString(cost_store::redacted(cost_db_path_.toStdString())))
                   .arg(remote ? ", measured by the team's workers" : "")
                   .arg(accuracy.enabled()
                            ? ", accuracy budget " + QString::fromStdString(accuracy.to_string())
                            : QString()));
  return run(Job::Tune, [=](ProgressObserver& observer) -> Apply {
    // The chain `collage tune` runs (app/workflow): tune, verify, time, with its settings.
    CostDb db(db_path);
    workflow::TuneStepOptions options;
    options.backends = backends;
    options.threads = threads;
    options.pins = pins;
    options.epsilon_ms = epsilon_ms;
    options.remote = remote;
    options.accuracy = accuracy;
    workflow::TuneRunReport chain = workflow::run_tune(*graph, options, &db, &observer);
    auto result = std::make_shared<TuneResult>(std::move(chain.tuned));
    auto run = std::make_shared<workflow::PlacementRunReport>(std::move(chain.run));
    auto backoff = std::make_shared<std::vector<std::string>>(std::move(chain.backoff));
    return [result, run, backoff, previous_ms](ExplorerController& c) {
      c.tuned_ = std::move(*result);
      c.placement_ = c.tuned_->placement;
      c.tuned_timing_.emplace(c.tuned_->placement, run->timing.median_ms);
      c.op_level_.reset();
      c.refined_.reset();
      c.profile_.reset();
      JobReport r;
      r.mismatch = QString::fromStdString(run->verify.mismatch);
      r.summary = tune_summary(*c.tuned_, run->timing.median_ms, previous_ms, run->verify.mismatch);
      r.log << r.summary;
      // Under a budget, as `collage tune` prints them: each kernel sent back to fp32, then the
      // accuracy the placement reached per output.
      for (const std::string& step : *backoff) r.log << QString::fromStdString("accuracy back-off: " + step);
      for (const std::string& line : run->verify.accuracy)
        r.log << QString::fromStdString("accuracy " + line);
      // A worker lost to a candidate is news (a library bug on this shape); routine refusals are not.
      for (size_t i = 0; i < c.tuned_->costs.size(); ++i) {
        const MeasuredCandidate& m = c.tuned_->costs[i];
        if (m.from_cache || m.cost.status != CostStatus::Lost) continue;
        const Candidate& cand = c.tuned_->candidates[i];
        r.log << QString("candidate %1 %2: %3; tuned without it")
                     .arg(QString::fromStdString(cand.backend), QString::fromStdString(cand.label),
                          QString::fromStdString(m.cost.invalid_reason));
      }
      return r;
    };
  });
}

bool ExplorerController::start_refine() {
  if (!graph_ || thread_) return false;
  auto refuse = [this](const char* why) {
    emit job_failed(JobFailure{Job::Refine, why, false});
    return false;
  };
  if (!placement_) return refuse("Tune first: refinement starts from the op-level placement.");
  if (workflow::graph_level_backends(backends_).empty())
    return refuse("Select a graph-level backend (onednn-region, xnnpack-graph) first.");
  std::shared_ptr<const Graph> graph = graph_;
  std::vector<const BackendSpec*> backends = backends_;
  int threads = threads_;
  Placement start = *placement_;
  std::vector<Tensor> inputs = tuned_ ? tuned_->inputs : std::vector<Tensor>{};
  // The libraries alone contest the result (workflow::library_rivals); a loaded placement has no costs for
  // them.
  std::shared_ptr<const TuneResult> tuned = tuned_ ? std::make_shared<TuneResult>(*tuned_) : nullptr;
  // What the tune timed, if the start is still that placement at that thread count.
  const double start_measured_ms =
      tuned_timing_ && same_kernels(tuned_timing_->first, start) && tuned_timing_->first.threads == threads
          ? tuned_timing_->second
          : 0;
  std::string db_path = cost_db_path_.toStdString();
  bool remote = remote_;
  emit message(
      QString("refining with measured fitness (median of %1 runs per genome)").arg(kSettings.fitness_runs));
  return run(Job::Refine, [=](ProgressObserver& observer) -> Apply {
    // The chain `collage tune --refine` runs (app/workflow): refine, verify the refined
    // placement, compare both side by side, keep or revert, with its settings.
    workflow::RefineStepOptions options;
    options.backends = backends;
    options.threads = threads;
    options.remote = remote;
    if (tuned) options.rivals = workflow::library_rivals(*graph, *tuned, start, backends, start_measured_ms);
    CostDb db(db_path);
    auto chain = std::make_shared<workflow::RefineRunReport>(
        workflow::run_refine(*graph, start, inputs, options, &db, &observer));
    return [chain, start](ExplorerController& c) {
      const RefineResult& result = chain->refine.result;
      JobReport r;
      auto ms = [](const Cost& f) {
        return f.valid() ? QString("%1 ms").arg(f.median_ms, 0, 'f', 3) : QString("-");
      };
      const bool both = result.seed_fitness.valid() && result.best_fitness.valid();
      r.log << QString("refined: op-level %1 -> %2 measured fitness (%3), %4 generations, %5 evaluations")
                   .arg(ms(result.seed_fitness), ms(result.best_fitness),
                        both ? QString("%1x").arg(
                                   result.seed_fitness.median_ms / result.best_fitness.median_ms, 0, 'f', 2)
                             : QString("-"))
                   .arg(result.generations)
                   .arg(result.evaluations);
      if (result.cancelled) r.log << "refine stopped: continuing with the best placement found so far";
      r.log << QString("refined placement verified against the native reference: %1")
                   .arg(chain->refined_run.verify.ok()
                            ? QString("ok")
                            : QString::fromStdString(chain->refined_run.verify.mismatch));
      const workflow::SideBySideReport& ab = chain->side_by_side;
      if (ab.compared)
        r.log << QString("side by side over %1 alternating runs each: op-level %2 ms, refined %3 ms")
                     .arg(ab.timing.rounds)
                     .arg(ab.timing.a_ms, 0, 'f', 3)
                     .arg(ab.timing.b_ms, 0, 'f', 3);
      for (const workflow::LibraryContest& lc : chain->library_contests)
        if (lc.mismatch.empty())
          r.log << QString("side by side over %1 alternating runs each: kept %2 ms, %3 alone %4 ms")
                       .arg(lc.timing.rounds)
                       .arg(lc.timing.a_ms, 0, 'f', 3)
                       .arg(QString::fromStdString(lc.backend))
                       .arg(lc.timing.b_ms, 0, 'f', 3);
      r.log << QString::fromStdString(workflow::describe(*chain));
      // Over the budget, the op-level placement kept holds it: the log says why, no alarm.
      if (chain->kept_why == workflow::KeptPlacement::OpLevelMismatch)
        r.mismatch = QString::fromStdString(chain->refined_run.verify.mismatch);
      c.placement_ = chain->kept;
      c.op_level_ = start;
      c.refined_ = result.best;
      c.profile_.reset();
      r.summary = QString("%1 placement: %2 kernels")
                      .arg(chain->kept_refined() ? QString("refined")
                           : chain->kept_why == workflow::KeptPlacement::Library
                               ? QString::fromStdString(chain->kept_library + " alone")
                               : QString("op-level"))
                      .arg(c.placement_->kernels.size());
      return r;
    };
  });
}

bool ExplorerController::start_profile() {
  if (!graph_ || thread_) return false;
  if (!placement_) {
    emit job_failed(JobFailure{Job::Profile, "Tune or load a placement first: Profile runs it.", false});
    return false;
  }
  std::shared_ptr<const Graph> graph = graph_;
  std::vector<const BackendSpec*> backends = backends_;
  Placement placement = *placement_;
  std::vector<Tensor> inputs = tuned_ && !tuned_->inputs.empty() ? tuned_->inputs : std::vector<Tensor>{};
  emit message(QString("profiling: %1 kernels, %2 runs after a warm-up, %3 thread(s)")
                   .arg(placement.kernels.size())
                   .arg(kSettings.repeat)
                   .arg(placement.threads));
  return run(Job::Profile, [=](ProgressObserver&) -> Apply {
    // The step `collage profile` runs: at the placement's thread count (its costs were measured there).
    workflow::RunOptions options;
    options.backends = backends;
    options.threads = placement.threads;
    auto report = std::make_shared<ProfileReport>(
        workflow::profile(*graph, placement, inputs.empty() ? random_inputs(*graph, 1) : inputs, options));
    return [report](ExplorerController& c) {
      c.profile_ = *report;
      emit c.profiled(*report);
      JobReport r;
      r.summary =
          QString(
              "profile: %1 ms end to end, kernels %2 ms in the run vs %3 ms isolated, outside kernels %4 ms")
              .arg(report->e2e_median_ms, 0, 'f', 3)
              .arg(report->kernel_sum_ms, 0, 'f', 3)
              .arg(report->isolated_sum_ms, 0, 'f', 3)
              .arg(report->outside_kernels_ms(), 0, 'f', 3);
      r.log << r.summary;
      return r;
    };
  });
}

bool ExplorerController::start_queue_status() {
  if (status_thread_) return false;
  const std::string location = cost_db_path_.toStdString();
  auto status = std::make_shared<QueueStatus>();
  status_thread_ = QThread::create([location, status] {
    status->location = QString::fromStdString(cost_store::redacted(location));
    try {
      if (!cost_store::is_postgres_location(location))
        throw Error(ErrorKind::InvalidInput,
                    status->location.toStdString() +
                        " is not a shared cost DB: workers serve a shared PostgreSQL cost DB "
                        "(postgresql://...); choose one under Measure → Cost database.");
      MeasureQueue queue(location);
      std::map<std::string, int64_t> counts = queue.job_counts();
      status->pending = counts["pending"];
      status->running = counts["running"];
      status->done = counts["done"];
      status->workers = queue.workers(kSettings.worker_lease_s);
    } catch (const std::exception& e) {
      *status = QueueStatus{status->location, 0, 0, 0, {}, QString::fromStdString(e.what())};
    }
  });
  connect(status_thread_, &QThread::finished, this, [this, status] {
    if (!status_thread_) return;
    status_thread_->wait();
    status_thread_->deleteLater();
    status_thread_ = nullptr;
    emit queue_status(*status);
  });
  status_thread_->start();
  return true;
}

int ExplorerController::node_id(const std::string& name) const {
  if (graph_)
    for (NodeId n = 0; n < graph_->num_nodes(); ++n)
      if (graph_->node(n).name == name) return n;
  return -1;
}

void ExplorerController::set_pin(int node, const QString& backend) {
  pins_.pinned[node] = backend.toStdString();
  pins_.forbidden.erase(node);
  emit message(QString("pin node %1 to %2").arg(node).arg(backend));
}

void ExplorerController::set_forbid(int node, const QString& backend) {
  pins_.forbidden[node].insert(backend.toStdString());
  emit message(QString("forbid %2 on node %1").arg(node).arg(backend));
}

void ExplorerController::clear_pins(int node) {
  pins_.pinned.erase(node);
  pins_.forbidden.erase(node);
  emit message(QString("pins cleared on node %1").arg(node));
}

std::vector<NodeId> ExplorerController::candidate_nodes(size_t index) const {
  if (tuned_ && index < tuned_->candidates.size()) return node_ids(tuned_->candidates[index].nodes);
  return {};
}

std::optional<PlacementExplainer> ExplorerController::explainer() const {
  if (!graph_ || !tuned_ || !placement_) return std::nullopt;
  std::set<std::string> graph_level;
  for (const BackendSpec* b : workflow::graph_level_backends(all_backends())) graph_level.insert(b->name);
  try {
    return std::make_optional<PlacementExplainer>(*graph_, tuned_->candidates, costs_of(tuned_->costs),
                                                  *placement_, pins_, placement_->epsilon_ms, graph_level);
  } catch (const Error&) {
    return std::nullopt;  // the placement does not fit these candidates: nothing to explain
  }
}

std::optional<NodeExplanation> ExplorerController::explain_node(int node) const {
  if (!graph_ || node < 0 || node >= graph_->num_nodes()) return std::nullopt;
  std::optional<PlacementExplainer> ex = explainer();
  if (!ex) return std::nullopt;
  return ex->explain(node);
}

std::vector<WhatIf> ExplorerController::what_ifs(int node) const {
  if (!graph_ || node < 0 || node >= graph_->num_nodes()) return {};
  std::optional<PlacementExplainer> ex = explainer();
  return ex ? ex->what_ifs(node) : std::vector<WhatIf>{};
}

QString ExplorerController::delta_baseline() const {
  std::optional<PlacementExplainer> ex = explainer();
  return ex ? QString(baseline_words(ex->baseline())) : QString();
}

void ExplorerController::load_placement(const QString& path) {
  if (!graph_) throw Error(ErrorKind::InvalidInput, "open a model first");
  std::vector<PlacementFileBucket> buckets =
      read_placement_buckets(workflow::read_placement_text(path.toStdString()));
  if (buckets.size() == 1 && buckets.front().dims.empty()) {
    Placement loaded = placement_from_json(buckets.front().placement_json, *graph_, all_backends());
    wait_for_job();
    bucket_dims_.clear();
    bucket_placements_.clear();
    buckets_file_.clear();
    adopt_placement(std::move(loaded), path);
    return;
  }
  wait_for_job();
  bucket_dims_.clear();
  bucket_placements_.clear();
  for (const PlacementFileBucket& b : buckets) {
    bucket_dims_.push_back(b.dims);
    bucket_placements_.push_back(b.placement_json);
  }
  buckets_file_ = path;
  emit message(QString("%1 holds %2 shape buckets (%3)")
                   .arg(path)
                   .arg(buckets.size())
                   .arg(QString::fromStdString(bucket_list(bucket_dims_))));
  int current = current_bucket();
  if (current >= 0) {  // the open graph is one of them: adopt its placement now
    adopt_placement(
        placement_from_json(bucket_placements_[static_cast<size_t>(current)], *graph_, all_backends()),
        path + " [" + QString::fromStdString(bucket_label(dims_)) + "]");
    return;
  }
  switch_bucket(0);
}

int ExplorerController::current_bucket() const {
  for (size_t i = 0; i < bucket_dims_.size(); ++i)
    if (bucket_dims_[i] == dims_) return static_cast<int>(i);
  return -1;
}

bool ExplorerController::switch_bucket(size_t index) {
  if (thread_ || index >= bucket_dims_.size() || model_path_.isEmpty()) return false;
  keep_bucket_placement();  // a bucket re-tuned or re-searched here keeps that placement
  const QString path = model_path_;
  const DimValues dims = bucket_dims_[index];
  const std::string text = bucket_placements_[index];
  const QString origin = buckets_file_ + " [" + QString::fromStdString(bucket_label(dims)) + "]";
  return run(Job::Load, [path, dims, text, origin, dynamic = dynamic_shapes_](ProgressObserver&) -> Apply {
    workflow::LoadOptions load;
    load.dims = dims;
    load.dynamic_shapes = dynamic;
    auto graph = std::make_shared<const Graph>(workflow::load_model(path.toStdString(), load));
    auto placement = std::make_shared<Placement>(placement_from_json(text, *graph, all_backends()));
    auto layout = std::make_shared<GraphLayout>(layout_graph(*graph));
    return [path, dims, graph, layout, placement, origin](ExplorerController& c) {
      c.dims_ = dims;
      c.graph_ = graph;
      c.layout_ = std::move(*layout);
      c.placement_.reset();
      c.op_level_.reset();
      c.refined_.reset();
      c.profile_.reset();
      c.tuned_.reset();
      c.tuned_timing_.reset();
      JobReport r;
      r.summary = QString("%1 at %2: %3 nodes (%4 layout)")
                      .arg(path, QString::fromStdString(bucket_label(dims)))
                      .arg(graph->num_nodes())
                      .arg(QString::fromStdString(c.layout_.engine));
      // No job runs now (this is its end): the bucket's placement and its costs follow.
      c.adopt_placement(std::move(*placement), origin);
      return r;
    };
  });
}

PlacementComparison ExplorerController::compare_with_bucket(size_t index) const {
  if (!graph_ || !placement_ || current_bucket() < 0)
    throw Error(ErrorKind::InvalidInput, "load a placement file with shape buckets first");
  if (index >= bucket_dims_.size()) throw Error(ErrorKind::InvalidInput, "no such bucket");
  workflow::LoadOptions load;
  load.dims = bucket_dims_[index];
  load.dynamic_shapes = dynamic_shapes_;
  Graph other_graph = workflow::load_model(model_path_.toStdString(), load);
  Placement other = placement_from_json(bucket_placements_[index], other_graph, all_backends());
  std::string a = bucket_label(dims_), b = bucket_label(bucket_dims_[index]);
  return {QString::fromStdString(a), QString::fromStdString(b),
          diff_buckets(*graph_, *placement_, other_graph, other, a, b)};
}

void ExplorerController::adopt_placement(Placement loaded, const QString& path) {
  placement_ = std::move(loaded);
  pins_ = placement_->pins;  // pins persist with the placement
  op_level_.reset();
  refined_.reset();
  profile_.reset();
  tuned_.reset();
  tuned_timing_.reset();
  emit message("placement loaded from " + path);
  emit placement_threads(placement_->threads);
  if (!placement_->accuracy.empty()) {  // validated when the file was read
    accuracy_ = parse_accuracy(placement_->accuracy);
    emit placement_accuracy(QString::fromStdString(placement_->accuracy));
  }
  std::shared_ptr<const Graph> graph = graph_;
  workflow::TuneStepOptions options;
  options.backends = backends_;  // after the signals: the view may select backends for the budget
  options.threads = placement_->threads;
  options.pins = pins_;
  options.accuracy = accuracy_;
  std::string db_path = cost_db_path_.toStdString();
  run(Job::PlacementCosts, [=](ProgressObserver&) -> Apply {
    CostDb db(db_path);
    auto result = std::make_shared<TuneResult>(workflow::cached_costs(*graph, options, &db));
    result->inputs = random_inputs(*graph, TuneOptions{}.input_seed);  // what a tune measures on (Refine)
    return [result, path](ExplorerController& c) {
      c.tuned_ = std::move(*result);
      c.tuned_->placement = *c.placement_;
      emit c.candidates_listed(CandidateList{c.tuned_->candidates});
      size_t not_measured = 0;
      for (size_t i = 0; i < c.tuned_->costs.size(); ++i) {
        not_measured += c.tuned_->costs[i].cost.status == CostStatus::NotMeasured;
        emit c.cost_measured(MeasuredCost{i, c.tuned_->costs[i]});
      }
      JobReport r;
      r.summary = QString(
                      "placement %1: %2 kernels, predicted %3 ms; %4 candidates, %5 costs from the cost DB, "
                      "%6 not measured, %7 invalid")
                      .arg(path)
                      .arg(c.placement_->kernels.size())
                      .arg(c.placement_->predicted_ms, 0, 'f', 3)
                      .arg(c.tuned_->candidates.size())
                      .arg(c.tuned_->from_cache)
                      .arg(not_measured)
                      .arg(c.tuned_->invalid - not_measured);
      r.log << r.summary;
      return r;
    };
  });
}

void ExplorerController::save_placement(const QString& path) const {
  if (!placement_ || !graph_) throw Error(ErrorKind::InvalidInput, "no placement to export");
  std::string text = placement_to_json(*placement_, *graph_);
  if (const int current = current_bucket(); current >= 0) {  // every bucket, the one in view as it is now
    std::vector<PlacementFileBucket> buckets;
    for (size_t i = 0; i < bucket_dims_.size(); ++i)
      buckets.push_back({bucket_dims_[i], static_cast<int>(i) == current ? text : bucket_placements_[i]});
    text = write_placement_buckets(buckets);
  }
  std::ofstream out(path.toStdString(), std::ios::trunc);
  out << text << "\n";
  if (!out) throw Error(ErrorKind::Io, "cannot write " + path.toStdString());
}

void ExplorerController::keep_bucket_placement() {
  const int current = current_bucket();
  if (current >= 0 && placement_ && graph_)
    bucket_placements_[static_cast<size_t>(current)] = placement_to_json(*placement_, *graph_);
}

bool ExplorerController::start_export_artifact(const QString& path) {
  if (!graph_ || thread_) return false;
  if (!placement_) {
    emit job_failed(
        JobFailure{Job::ExportArtifact, "Tune or load a placement first: Export compiles it.", false});
    return false;
  }
  std::shared_ptr<const Graph> graph = graph_;
  Placement placement = *placement_;
  std::string model_name = QFileInfo(model_path_).completeBaseName().toStdString();
  return run(Job::ExportArtifact, [=](ProgressObserver&) -> Apply {
    workflow::ExportStepOptions options;
    options.model_name = model_name;
    options.path = path.toStdString();
    ExportReport r = workflow::export_placement(*graph, placement, options);
    if (!r.mismatch.empty())
      throw Error(ErrorKind::Internal,
                  "the artifact's outputs disagree with the in-process run: " + r.mismatch);
    return [r, path](ExplorerController&) {
      JobReport report;
      report.summary =
          QString(
              "artifact written to %1: %2 MiB, arena %3 MiB (%4 MiB without reuse), outputs %5 the "
              "in-process run")
              .arg(path)
              .arg(static_cast<double>(r.file_bytes) / (1 << 20), 0, 'f', 2)
              .arg(static_cast<double>(r.arena_bytes) / (1 << 20), 0, 'f', 2)
              .arg(static_cast<double>(r.unplanned_bytes) / (1 << 20), 0, 'f', 2)
              .arg(r.bitwise_equal ? "bitwise equal to" : "within tolerance of");
      report.log << report.summary;
      return report;
    };
  });
}

QString what_if_label(const Alternative& a) {
  if (!a.feasible) return "impossible";
  return QString::asprintf("%+.3f ms", a.delta_ms) + (a.near_tie ? ", near tie" : "");
}

PlacementComparison ExplorerController::compare_with_file(const QString& path) const {
  if (!graph_) throw Error(ErrorKind::InvalidInput, "open a model first");
  if (!placement_)
    throw Error(ErrorKind::InvalidInput, "tune or load a placement first: it is compared with the file");
  Placement other = workflow::read_placement(path.toStdString(), *graph_);
  QString name = QFileInfo(path).fileName();
  return {"current placement", name,
          diff_placements(*placement_, other, "the current placement", name.toStdString())};
}

PlacementComparison ExplorerController::compare_op_level_with_refined() const {
  if (!op_level_ || !refined_)
    throw Error(ErrorKind::InvalidInput, "refine first: it compares the op-level and the refined placement");
  return {"op-level", "refined", diff_placements(*op_level_, *refined_, "op-level", "refined")};
}

QString queue_status_text(const QueueStatus& status) {
  if (!status.error.isEmpty()) return status.error;
  QString text = QString("jobs: %1 pending, %2 running, %3 done\n\n")
                     .arg(status.pending)
                     .arg(status.running)
                     .arg(status.done);
  for (const WorkerStatus& w : status.workers)
    text += QString("%1 (%2): %3, %4 threads, %5 jobs done%6\n  %7\n")
                .arg(QString::fromStdString(w.info.name), w.alive ? "alive" : "gone",
                     QString::fromStdString(w.state))
                .arg(w.info.threads)
                .arg(w.jobs_done)
                .arg(w.current.empty() ? QString() : ", measuring " + QString::fromStdString(w.current))
                .arg(QString::fromStdString(w.info.device));
  return text;
}

QString tune_summary(const TuneResult& tuned, double measured_ms, std::optional<double> previous_predicted_ms,
                     const std::string& mismatch) {
  const Placement& placement = tuned.placement;
  QString summary = QString("placement: %1 kernels, predicted %2 ms (")
                        .arg(placement.kernels.size())
                        .arg(placement.predicted_ms, 0, 'f', 3);
  for (const auto& [b, share] : time_per_backend(placement))
    summary += QString("%1: %2 kernels %3 ms, ")
                   .arg(QString::fromStdString(b))
                   .arg(share.kernels)
                   .arg(share.predicted_ms, 0, 'f', 3);
  summary.chop(2);
  summary += QString(
                 "); measured %1 ms, additive error %2%; %3 candidates, %4 measured now, %5 from the cost "
                 "DB, %6 invalid")
                 .arg(measured_ms, 0, 'f', 3)
                 .arg(100 * (measured_ms - placement.predicted_ms) / placement.predicted_ms, 0, 'f', 1)
                 .arg(tuned.candidates.size())
                 .arg(tuned.measured_now)
                 .arg(tuned.from_cache)
                 .arg(tuned.invalid);
  if (!tuned.contests.empty()) {
    int changed = 0;
    for (const SettledContest& c : tuned.contests) changed += !c.kept;
    summary += QString("; %1 close contests measured again side by side (%2 s), %3 changed the placement")
                   .arg(tuned.contests.size())
                   .arg(tuned.contest_ms / 1000, 0, 'f', 1)
                   .arg(changed);
  }
  if (previous_predicted_ms)
    summary += QString("; Δ predicted vs previous placement %1 ms")
                   .arg(placement.predicted_ms - *previous_predicted_ms, 0, 'f', 3);
  if (!mismatch.empty())
    summary += " — DOES NOT MATCH the native reference: " + QString::fromStdString(mismatch);
  return summary;
}

}  // namespace collage
