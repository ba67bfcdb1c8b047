#include "app/explorer/batch_screenshot.h"

#include <QApplication>
#include <QTimer>
#include <cstdio>
#include <exception>

#include "app/explorer/main_window.h"
#include "widgets/graph_view.h"

namespace collage {

BatchScreenshot::BatchScreenshot(MainWindow* window, const QString& path, Steps steps)
    : QObject(window), window_(window), path_(path), steps_(std::move(steps)) {
  steps_.tune = steps_.tune || steps_.refine;
  window->set_dialogs_enabled(false);
  connect(window->controller(), &ExplorerController::job_finished, this, &BatchScreenshot::on_finished);
  connect(window->controller(), &ExplorerController::job_failed, this, &BatchScreenshot::on_failed);
}

void BatchScreenshot::on_finished(const JobReport& report) {
  if (report.job == Job::Load && !steps_.placement.isEmpty()) {
    try {
      window_->controller()->load_placement(steps_.placement);  // then PlacementCosts
      window_->graph_view()->set_placement(&*window_->controller()->placement());
    } catch (const std::exception& e) {
      shoot(QString("cannot load placement: %1").arg(e.what()));
    }
  } else if ((report.job == Job::Load || report.job == Job::PlacementCosts) && steps_.tune) {
    window_->start_tune();
  } else if (report.job == Job::Tune && steps_.refine) {
    window_->start_refine();  // a refusal arrives as job_failed
  } else {
    shoot(QString());
  }
}

void BatchScreenshot::on_failed(const JobFailure& failure) {
  const char* step = failure.job == Job::Load             ? "cannot open model"
                     : failure.job == Job::Tune           ? "tune failed"
                     : failure.job == Job::PlacementCosts ? "cannot read the placement's costs"
                                                          : "refine failed";
  shoot(QString("%1: %2").arg(step, failure.message));
}

void BatchScreenshot::shoot(const QString& failure) {
  if (done_) return;
  done_ = true;
  failed_ = !failure.isEmpty();
  // The picture is still saved, but a failure is the exit status (2), as in the CLI.
  if (failed_) std::fprintf(stderr, "error: %s\n", failure.toStdString().c_str());
  GraphView* view = window_->graph_view();
  connect(view, &GraphView::layout_changed, this, &BatchScreenshot::laid_out);
  if (steps_.collapse_depth >= 1 && view->scope_tree())
    view->collapse_to_depth(steps_.collapse_depth);  // supersedes a running relayout
  laid_out();
}

void BatchScreenshot::laid_out() {
  if (!window_->graph_view()->layout_pending()) save();  // else the next layout_changed()
}

void BatchScreenshot::save() {
  if (saving_) return;
  saving_ = true;
  window_->graph_view()->fit();           // the whole graph, coloured by the final placement
  QTimer::singleShot(200, this, [this] {  // let the last repaint land
    bool ok = window_->grab().save(path_, "PNG");
    std::fprintf(stderr, "%s %s\n", ok ? "screenshot saved to" : "cannot save screenshot to",
                 path_.toStdString().c_str());
    QApplication::exit(ok && !failed_ ? 0 : 2);
  });
}

}  // namespace collage
