#include "app/explorer/batch_screenshot.h"

#include <QApplication>
#include <QTimer>
#include <cstdio>

#include "app/explorer/main_window.h"
#include "widgets/body_window.h"
#include "widgets/graph_view.h"

namespace collage {

BatchScreenshot::BatchScreenshot(MainWindow* window, BatchOptions options)
    : QObject(window), window_(window), options_(std::move(options)) {
  options_.tune = options_.tune || options_.refine;
  window->set_dialogs_enabled(false);
  // The size a person sees, not the screen's (the offscreen platform's is 800x600) nor the
  // size a window last closed at.
  window->resize(options_.width, options_.height);
  connect(window->controller(), &ExplorerController::job_finished, this, &BatchScreenshot::on_finished);
  connect(window->controller(), &ExplorerController::job_failed, this, &BatchScreenshot::on_failed);
}

void BatchScreenshot::on_finished(const JobReport& report) {
  switch (report.job) {
    case Job::Load:
      // A bucket's graph, re-imported by load_placement: that bucket's costs are loading.
      if (window_->controller()->busy()) return;
      if (options_.placement.isEmpty()) return after_costs();
      // Its costs follow as a PlacementCosts job.
      if (!window_->load_placement(options_.placement)) shoot("cannot load placement " + options_.placement);
      return;
    case Job::PlacementCosts:
      return after_costs();
    case Job::Tune:
      if (options_.refine) return window_->start_refine();  // a refusal arrives as job_failed
      return after_placement();
    case Job::Refine:
      return after_placement();
    case Job::Profile:
      return after_profile();
    case Job::ExportArtifact:
      return;  // batch mode exports nothing
  }
}

void BatchScreenshot::after_costs() {
  if (options_.tune) return window_->start_tune();
  after_placement();
}

void BatchScreenshot::after_placement() {
  if (options_.profile) return window_->start_profile();  // a refusal arrives as job_failed
  after_profile();
}

void BatchScreenshot::after_profile() {
  if (!options_.diff.isEmpty() && !window_->compare_with_placement(options_.diff))
    return shoot("cannot compare with " + options_.diff);
  if (!options_.diff_bucket.isEmpty()) {
    const std::vector<DimValues>& buckets = window_->controller()->bucket_dims();
    size_t i = 0;
    while (i < buckets.size() && QString::fromStdString(bucket_label(buckets[i])) != options_.diff_bucket)
      ++i;
    if (i == buckets.size())
      return shoot("no shape bucket " + options_.diff_bucket +
                   " in the placement (its buckets: " + QString::fromStdString(bucket_list(buckets)) + ")");
    if (!window_->compare_with_bucket(i)) return shoot("cannot compare with bucket " + options_.diff_bucket);
  }
  shoot(QString());
}

void BatchScreenshot::on_failed(const JobFailure& failure) {
  const char* step = "";
  switch (failure.job) {
    case Job::Load:
      step = "cannot open model";
      break;
    case Job::PlacementCosts:
      step = "cannot read the placement's costs";
      break;
    case Job::Tune:
      step = "tune failed";
      break;
    case Job::Refine:
      step = "refine failed";
      break;
    case Job::Profile:
      step = "profile failed";
      break;
    case Job::ExportArtifact:
      step = "export failed";
      break;
  }
  shoot(QString("%1: %2").arg(step, failure.message));
}

void BatchScreenshot::shoot(const QString& failed_step) {
  if (done_) return;
  done_ = true;
  QString failure = failed_step;
  if (!options_.select.isEmpty() && window_->controller()->graph()) {
    int node = window_->controller()->node_id(options_.select.toStdString());
    const ScopeTree* tree = window_->graph_view()->scope_tree();
    const int scope = node < 0 && tree ? tree->find(options_.select.toStdString()) : -1;
    if (node >= 0)
      pending_node_ = node;  // selected once the view shows it (after any collapse)
    else if (scope > 0)
      pending_scope_ = scope;
    else if (failure.isEmpty())
      failure =
          QString("--select %1: the model has no node or name scope with that name").arg(options_.select);
  }
  failed_ = !failure.isEmpty();
  // The picture is still saved, but a failure is the exit status (2), as in the CLI.
  if (failed_) std::fprintf(stderr, "error: %s\n", failure.toStdString().c_str());
  if (options_.heatmap) window_->set_heatmap(true);
  GraphView* view = window_->graph_view();
  connect(view, &GraphView::layout_changed, this, &BatchScreenshot::laid_out);
  if (options_.collapse_depth >= 0 && view->scope_tree())
    view->collapse_to_depth(options_.collapse_depth);  // supersedes a running relayout
  laid_out();
}

void BatchScreenshot::laid_out() {
  if (!window_->graph_view()->layout_pending()) save();  // else the next layout_changed()
}

void BatchScreenshot::save() {
  if (saving_) return;
  saving_ = true;
  if (pending_node_ >= 0) window_->select_node(pending_node_);
  if (pending_scope_ > 0) window_->select_scope(pending_scope_);
  // The graph as it opened (readable, coloured by the final placement); the selected node,
  // or the changed nodes of a diff, readable.
  if ((!options_.select.isEmpty() && pending_scope_ < 0) || !options_.diff.isEmpty())
    window_->graph_view()->zoom_to_selection();
  QWidget* picture = window_;
  if (!options_.open_body.isEmpty()) {
    const Graph* graph = window_->controller()->graph();
    const auto& placement = window_->controller()->placement();
    BodyWindow* body = graph && pending_node_ >= 0
                           ? BodyWindow::open(*graph, pending_node_, options_.open_body.toStdString(),
                                              placement ? &*placement : nullptr, window_)
                           : nullptr;
    if (!body) {
      std::fprintf(stderr, "error: --open-body %s: the selected node has no such body\n",
                   options_.open_body.toStdString().c_str());
      failed_ = true;
    } else {
      body->view()->fit();
      picture = body;
    }
  }
  QTimer::singleShot(200, this, [this, picture] {  // let the last repaint land
    bool ok = picture->grab().save(options_.screenshot, "PNG");
    std::fprintf(stderr, "%s %s\n", ok ? "screenshot saved to" : "cannot save screenshot to",
                 options_.screenshot.toStdString().c_str());
    QApplication::exit(ok && !failed_ ? 0 : 2);
  });
}

}  // namespace collage
