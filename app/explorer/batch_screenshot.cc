#include "app/explorer/batch_screenshot.h"

#include <QApplication>
#include <QTimer>
#include <cstdio>

#include "app/explorer/main_window.h"
#include "widgets/graph_view.h"

namespace collage {

BatchScreenshot::BatchScreenshot(MainWindow* window, BatchOptions options)
    : QObject(window), window_(window), options_(std::move(options)) {
  options_.tune = options_.tune || options_.refine;
  window->set_dialogs_enabled(false);
  connect(window->controller(), &ExplorerController::job_finished, this, &BatchScreenshot::on_finished);
  connect(window->controller(), &ExplorerController::job_failed, this, &BatchScreenshot::on_failed);
}

void BatchScreenshot::on_finished(const JobReport& report) {
  switch (report.job) {
    case Job::Load:
      if (!options_.placement.isEmpty() && !window_->load_placement(options_.placement))
        return shoot("cannot load placement " + options_.placement);
      if (options_.tune) return window_->start_tune();
      return after_placement();
    case Job::Tune:
      if (options_.refine) return window_->start_refine();  // a refusal arrives as job_failed
      return after_placement();
    case Job::Refine:
      return after_placement();
    case Job::Profile:
      return after_profile();
  }
}

void BatchScreenshot::after_placement() {
  if (options_.profile) return window_->start_profile();  // a refusal arrives as job_failed
  after_profile();
}

void BatchScreenshot::after_profile() {
  if (!options_.diff.isEmpty() && !window_->compare_with_placement(options_.diff))
    return shoot("cannot compare with " + options_.diff);
  shoot(QString());
}

void BatchScreenshot::on_failed(const JobFailure& failure) {
  const char* step = failure.job == Job::Load     ? "cannot open model"
                     : failure.job == Job::Tune   ? "tune failed"
                     : failure.job == Job::Refine ? "refine failed"
                                                  : "profile failed";
  shoot(QString("%1: %2").arg(step, failure.message));
}

void BatchScreenshot::shoot(const QString& failed_step) {
  if (done_) return;
  done_ = true;
  QString failure = failed_step;
  window_->graph_view()->fit();  // the whole graph, coloured by the final placement
  if (!options_.select.isEmpty() && window_->controller()->graph()) {
    int node = window_->controller()->node_id(options_.select.toStdString());
    if (node >= 0)
      window_->select_node(node);
    else if (failure.isEmpty())
      failure = QString("--select %1: the model has no node with that name").arg(options_.select);
  }
  // The picture is still saved, but a failure is the exit status (2), as in the CLI.
  if (!failure.isEmpty()) std::fprintf(stderr, "error: %s\n", failure.toStdString().c_str());
  QTimer::singleShot(200, this, [this, failed = !failure.isEmpty()] {  // let the last repaint land
    bool ok = window_->grab().save(options_.screenshot, "PNG");
    std::fprintf(stderr, "%s %s\n", ok ? "screenshot saved to" : "cannot save screenshot to",
                 options_.screenshot.toStdString().c_str());
    QApplication::exit(ok && !failed ? 0 : 2);
  });
}

}  // namespace collage
