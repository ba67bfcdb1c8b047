#include "app/explorer/batch_screenshot.h"

#include <QApplication>
#include <QTimer>
#include <cstdio>

#include "app/explorer/main_window.h"
#include "widgets/graph_view.h"

namespace collage {

BatchScreenshot::BatchScreenshot(MainWindow* window, const QString& path, bool tune, bool refine,
                                 const QString& select)
    : QObject(window), window_(window), path_(path), tune_(tune || refine), refine_(refine), select_(select) {
  window->set_dialogs_enabled(false);
  connect(window->controller(), &ExplorerController::job_finished, this, &BatchScreenshot::on_finished);
  connect(window->controller(), &ExplorerController::job_failed, this, &BatchScreenshot::on_failed);
}

void BatchScreenshot::on_finished(const JobReport& report) {
  if (report.job == Job::Load && tune_)
    window_->start_tune();
  else if (report.job == Job::Tune && refine_)
    window_->start_refine();  // a refusal arrives as job_failed
  else
    shoot(QString());
}

void BatchScreenshot::on_failed(const JobFailure& failure) {
  const char* step = failure.job == Job::Load   ? "cannot open model"
                     : failure.job == Job::Tune ? "tune failed"
                                                : "refine failed";
  shoot(QString("%1: %2").arg(step, failure.message));
}

void BatchScreenshot::shoot(const QString& failed_step) {
  if (done_) return;
  done_ = true;
  window_->graph_view()->fit();  // the whole graph, coloured by the final placement
  // Later handlers of the same signal (e.g. --placement's) run first; then the last repaint lands.
  QTimer::singleShot(200, this, [this, failure = failed_step]() mutable {
    if (!select_.isEmpty() && window_->controller()->graph()) {
      int node = window_->controller()->node_id(select_.toStdString());
      if (node >= 0)
        window_->select_node(node);
      else if (failure.isEmpty())
        failure = QString("--select %1: the model has no node with that name").arg(select_);
    }
    // The picture is still saved, but a failure is the exit status (2), as in the CLI.
    if (!failure.isEmpty()) std::fprintf(stderr, "error: %s\n", failure.toStdString().c_str());
    bool ok = window_->grab().save(path_, "PNG");
    std::fprintf(stderr, "%s %s\n", ok ? "screenshot saved to" : "cannot save screenshot to",
                 path_.toStdString().c_str());
    QApplication::exit(ok && failure.isEmpty() ? 0 : 2);
  });
}

}  // namespace collage
