// The main window's search flow: tune and refine on a worker thread, progress
// forwarded to the GUI thread, results adopted and shown.
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSettings>
#include <QShortcut>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "app/explorer/explorer_helpers.h"
#include "app/explorer/main_window.h"
#include "backends/registry.h"
#include "core/artifact_export.h"
#include "core/graph_analysis.h"
#include "core/onnx_import.h"
#include "core/workflow/workflow.h"
#include "widgets/backend_colors.h"
#include "widgets/cost_table.h"
#include "widgets/graph_view.h"
#include "widgets/progress_chart.h"

namespace collage {

namespace {

// Forwards core progress events to the GUI thread; cancellation via an atomic flag.
class SignalObserver : public ProgressObserver {
 public:
  SignalObserver(MainWindow* window, std::atomic<bool>& cancel) : window_(window), cancel_(cancel) {}
  void on_progress(const ProgressEvent& e) override {
    emit window_->progress(static_cast<int>(e.stage), e.done, e.total, QString::fromStdString(e.message),
                           e.best_ms, e.elapsed_ms, e.mean_ms);
  }
  // The table lives on the GUI thread: copies cross over in queued calls, in order.
  void on_candidates(const std::vector<Candidate>& candidates) override {
    CostTable* table = window_->cost_table();
    QMetaObject::invokeMethod(
        table, [table, candidates] { table->set_pending(candidates); }, Qt::QueuedConnection);
  }
  void on_measured(size_t index, const MeasuredCandidate& result) override {
    CostTable* table = window_->cost_table();
    QMetaObject::invokeMethod(
        table, [table, index, result] { table->set_result(index, result); }, Qt::QueuedConnection);
  }
  void on_best_placement(const Placement& best, double fitness_ms) override {
    MainWindow* window = window_;
    QMetaObject::invokeMethod(
        window, [window, best, fitness_ms] { window->show_refine_best(best, fitness_ms); },
        Qt::QueuedConnection);
  }
  bool cancel_requested() const override { return cancel_.load(); }

 private:
  MainWindow* window_;
  std::atomic<bool>& cancel_;
};

}  // namespace

void MainWindow::start_tune() {
  if (!graph_ || worker_.joinable()) return;
  cancel_ = false;
  chart_->clear();
  tune_action_->setEnabled(false);
  stop_action_->setEnabled(true);
  auto backends = selected_backends();
  int threads = threads_->value();
  Pins pins = pins_;
  previous_predicted_ms_ = placement_ ? placement_->predicted_ms : -1;
  log(QString("tuning with %1 backends, %2 thread(s), cost DB %3")
          .arg(backends.size())
          .arg(threads)
          .arg(cost_db_path()));
  worker_ = std::thread([this, backends, threads, pins] {
    try {
      // The workflow `collage tune` runs, with the same settings (core/workflow/settings.h).
      CostDb db(cost_db_path().toStdString());
      workflow::TuneStepOptions options;
      options.backends = backends;
      options.threads = threads;
      options.pins = pins;
      SignalObserver observer(this, cancel_);
      auto result = std::make_shared<TuneResult>(workflow::tune(*graph_, options, &db, &observer));
      // End to end: the placement checked against the native reference, then timed.
      workflow::RunOptions run_options;
      run_options.backends = backends;
      run_options.threads = threads;
      workflow::PlacementRunReport run =
          workflow::verify_and_time(*graph_, result->placement, result->inputs, run_options);
      double median = run.timing.median_ms;
      std::string mismatch = run.verify.mismatch;
      QMetaObject::invokeMethod(
          this,
          [this, result, median, mismatch] {
            tuned_ = std::move(*result);
            measured_ms_ = median;
            verification_ = mismatch;
          },
          Qt::QueuedConnection);
      emit tune_finished(true, QString());
    } catch (const std::exception& e) {
      emit tune_finished(false, QString::fromStdString(e.what()));
    }
  });
}

void MainWindow::on_progress(int stage, qulonglong done, qulonglong total, const QString& message,
                             double best_ms, double elapsed_ms, double mean_ms) {
  if (stage == static_cast<int>(ProgressEvent::Stage::RefineEvaluation)) {
    status_->setText(
        QString("refining: evaluation %1: %2 (best %3 ms)").arg(done).arg(message).arg(best_ms, 0, 'f', 3));
    return;
  }
  if (stage == static_cast<int>(ProgressEvent::Stage::Refine)) {
    chart_->add_generation(static_cast<int>(done), best_ms, mean_ms);
    status_->setText(QString("refining: %1, best %2 ms").arg(message).arg(best_ms, 0, 'f', 3));
    log(status_->text());
    return;
  }
  if (stage == static_cast<int>(ProgressEvent::Stage::Measure)) {
    progress_->setRange(0, static_cast<int>(total));
    progress_->setValue(static_cast<int>(done));
    status_->setText(QString("measuring %1/%2: %3").arg(done).arg(total).arg(message));
    if (done % 25 == 0 || done == total) log(status_->text());
  } else {
    status_->setText(QString("searching: %1 states").arg(done));
    if (best_ms >= 0) chart_->add_point(elapsed_ms / 1000, best_ms);
  }
}

void MainWindow::on_tune_finished(bool ok, const QString& message) {
  join_worker();
  tune_action_->setEnabled(true);
  stop_action_->setEnabled(false);
  if (!ok) {
    log("tune stopped: " + message);
    status_->setText("Tune stopped: " + message);
    if (!screenshot_path_.isEmpty())
      maybe_screenshot("tune failed: " + message);
    else if (!cancel_)
      notify(this, QMessageBox::Warning, "Tune failed", message);
    return;
  }
  placement_ = tuned_->placement;
  chart_->add_point(tuned_->search.elapsed_ms / 1000, tuned_->search.predicted_ms);
  view_->set_placement(&*placement_);
  fill_cost_table();
  std::map<std::string, std::pair<int, double>> per_backend;  // kernels, predicted ms
  for (const PlacedKernel& k : placement_->kernels) {
    per_backend[k.backend].first++;
    per_backend[k.backend].second += k.cost_ms;
  }
  QString summary = QString("placement: %1 kernels, predicted %2 ms (")
                        .arg(placement_->kernels.size())
                        .arg(placement_->predicted_ms, 0, 'f', 3);
  for (const auto& [b, stats] : per_backend)
    summary += QString("%1: %2 kernels %3 ms, ")
                   .arg(QString::fromStdString(b))
                   .arg(stats.first)
                   .arg(stats.second, 0, 'f', 3);
  summary.chop(2);
  summary += QString(
                 "); measured %1 ms, additive error %2%; %3 candidates, %4 measured now, %5 from the cost "
                 "DB, %6 invalid")
                 .arg(measured_ms_, 0, 'f', 3)
                 .arg(100 * (measured_ms_ - placement_->predicted_ms) / placement_->predicted_ms, 0, 'f', 1)
                 .arg(tuned_->candidates.size())
                 .arg(tuned_->measured_now)
                 .arg(tuned_->from_cache)
                 .arg(tuned_->invalid);
  if (previous_predicted_ms_ >= 0)
    summary += QString("; Δ predicted vs previous placement %1 ms")
                   .arg(placement_->predicted_ms - previous_predicted_ms_, 0, 'f', 3);
  if (!verification_.empty()) {
    summary += " — DOES NOT MATCH the native reference: " + QString::fromStdString(verification_);
    notify(this, QMessageBox::Critical, "Placement disagrees with the reference",
           QString::fromStdString(verification_));
  }
  status_->setText(summary);
  log(summary);
  if (!screenshot_path_.isEmpty() && screenshot_after_refine_)
    start_refine();
  else
    maybe_screenshot();
}

void MainWindow::start_refine() {
  if (!graph_ || !placement_ || worker_.joinable()) {
    if (!placement_)
      notify(this, QMessageBox::Information, "Refine",
             "Tune first: refinement starts from the op-level placement.");
    return;
  }
  std::vector<const BackendSpec*> backends = selected_backends();
  if (workflow::graph_level_backends(backends).empty()) {
    notify(this, QMessageBox::Information, "Refine",
           "Select a graph-level backend (onednn-region, xnnpack-graph) first.");
    return;
  }
  cancel_ = false;
  tune_action_->setEnabled(false);
  refine_action_->setEnabled(false);
  stop_action_->setEnabled(true);
  Placement start = *placement_;
  std::vector<Tensor> inputs = tuned_ ? tuned_->inputs : std::vector<Tensor>{};
  int threads = threads_->value();
  log(QString("refining with measured fitness (median of %1 runs per genome)")
          .arg(workflow::kSettings.fitness_runs));
  worker_ = std::thread([this, start, backends, inputs, threads] {
    try {
      // The workflow `collage tune --refine` runs, with the same settings (core/workflow/settings.h).
      workflow::RefineStepOptions options;
      options.backends = backends;
      options.threads = threads;
      SignalObserver observer(this, cancel_);
      CostDb db(cost_db_path().toStdString());
      auto report = std::make_shared<workflow::RefineReport>(
          workflow::refine(*graph_, start, inputs, options, &db, &observer));
      const RefineResult* result = &report->result;
      // The final check of `collage tune --refine`: both placements alternated (skipped when stopped).
      workflow::SideBySideReport ab;
      if (!cancel_) {
        workflow::SideBySideOptions sopts;
        sopts.backends = backends;
        sopts.threads = threads;
        ab = workflow::compare_side_by_side(*graph_, start, *report, inputs, sopts);
      }
      QMetaObject::invokeMethod(
          this,
          [this, report, result, start, ab] {
            log(QString(
                    "refined: op-level %1 ms -> %2 ms measured fitness (%3x), %4 generations, %5 evaluations")
                    .arg(result->seed_fitness, 0, 'f', 3)
                    .arg(result->best_fitness, 0, 'f', 3)
                    .arg(result->seed_fitness / result->best_fitness, 0, 'f', 2)
                    .arg(result->generations)
                    .arg(result->evaluations));
            placement_ = result->best;
            if (result->cancelled) log("refine stopped: keeping the best placement found so far");
            if (ab.compared) {
              log(QString("side by side over %1 alternating runs each: op-level %2 ms, refined %3 ms")
                      .arg(ab.timing.rounds)
                      .arg(ab.timing.a_ms, 0, 'f', 3)
                      .arg(ab.timing.b_ms, 0, 'f', 3));
              if (!ab.keep_refined) {
                log("the refined placement is not faster when re-measured: keeping the op-level one");
                placement_ = start;
              }
            }
          },
          Qt::QueuedConnection);
      emit refine_finished(true, QString());
    } catch (const std::exception& e) {
      emit refine_finished(false, QString::fromStdString(e.what()));
    }
  });
}

void MainWindow::show_refine_best(const Placement& best, double fitness_ms) {
  placement_ = best;
  view_->set_placement(&*placement_);
  log(QString("refining: new best %1 ms (%2 kernels)").arg(fitness_ms, 0, 'f', 3).arg(best.kernels.size()));
}

void MainWindow::on_refine_finished(bool ok, const QString& message) {
  join_worker();
  tune_action_->setEnabled(true);
  refine_action_->setEnabled(true);
  stop_action_->setEnabled(false);
  if (!ok) {
    log("refine stopped: " + message);
    status_->setText("Refine stopped: " + message);
    maybe_screenshot("refine failed: " + message);
    return;
  }
  view_->set_placement(&*placement_);  // recolour with the regions
  status_->setText(QString("refined placement: %1 kernels").arg(placement_->kernels.size()));
  maybe_screenshot();
}

void MainWindow::fill_cost_table() { cost_table_->finish(tuned_->candidates, tuned_->costs); }

}  // namespace collage
