#include "app/explorer/main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QInputDialog>
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
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

#include "app/explorer/model/backend_colors.h"
#include "backends/registry.h"
#include "widgets/cost_table.h"
#include "widgets/flow_layout.h"
#include "widgets/graph_view.h"
#include "widgets/inspector.h"
#include "widgets/placement_diff_panel.h"
#include "widgets/profile_view.h"
#include "widgets/progress_chart.h"

namespace collage {

MainWindow::MainWindow() : controller_(new ExplorerController(this)) {
  setWindowTitle("Collage Explorer");
  resize(1400, 900);
  view_ = new GraphView(this);
  view_->set_open_readable(true);  // models open collapsed or zoomed so their labels can be read
  // The centre: the backend legend (build_menus_and_toolbar) over the graph. Set before the docks,
  // which otherwise take the window's whole width.
  auto* central = new QWidget(this);
  auto* column = new QVBoxLayout(central);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(0);
  column->addWidget(view_, 1);
  setCentralWidget(central);
  auto dock = [this](const QString& title, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(title);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  inspector_ = new Inspector(this);
  dock("Inspector", inspector_, Qt::RightDockWidgetArea);
  cost_table_ = new CostTable(this);
  QDockWidget* cost_dock = dock("Candidate kernels", cost_table_, Qt::RightDockWidgetArea);
  // Wide enough for backend, kernel, cost and status; a saved window state overrides it.
  resizeDocks({cost_dock}, {460}, Qt::Horizontal);
  chart_ = new ProgressChart(this);
  chart_->setMinimumHeight(180);
  chart_dock_ = dock("Search progress", chart_, Qt::BottomDockWidgetArea);
  QDockWidget* chart_dock = chart_dock_;
  log_ = new QPlainTextEdit(this);
  log_->setObjectName("log");
  log_->setReadOnly(true);
  log_dock_ = dock("Log", log_, Qt::BottomDockWidgetArea);
  // Shown when there is something to show, as tabs beside the candidates and the chart: the
  // diff table is narrow like the candidate table, the timeline wide like the chart.
  diff_panel_ = new PlacementDiffPanel(this);
  diff_dock_ = dock("Placement diff", diff_panel_, Qt::RightDockWidgetArea);
  tabifyDockWidget(cost_dock, diff_dock_);
  profile_panel_ = new ProfilePanel(this);
  profile_dock_ = dock("Run profile", profile_panel_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(chart_dock, profile_dock_);
  cost_dock->raise();
  chart_dock->raise();
  diff_dock_->hide();
  profile_dock_->hide();
  build_menus_and_toolbar();
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(300);
  status_ = new QLabel("Open a model to begin.", this);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);

  ExplorerController* c = controller_;
  connect(c, &ExplorerController::progress, this, &MainWindow::on_progress);
  connect(c, &ExplorerController::candidates_listed, cost_table_,
          [this](const CandidateList& list) { cost_table_->set_pending(list.candidates); });
  connect(c, &ExplorerController::cost_measured, cost_table_,
          [this](const MeasuredCost& cost) { cost_table_->set_result(cost.index, cost.result); });
  connect(c, &ExplorerController::best_placement, this, [this](const BestPlacement& best) {
    view_->set_placement(&*controller_->placement());
    chart_->show_placement("refined", best.placement);
    log(QString("refining: new best %1 ms (%2 kernels)")
            .arg(best.fitness_ms, 0, 'f', 3)
            .arg(best.placement.kernels.size()));
  });
  connect(c, &ExplorerController::job_finished, this, &MainWindow::on_finished);
  connect(c, &ExplorerController::job_failed, this, &MainWindow::on_failed);
  connect(c, &ExplorerController::message, this, &MainWindow::log);
  connect(c, &ExplorerController::queue_status, this, &MainWindow::on_queue_status);
  connect(view_, &GraphView::node_selected, this, &MainWindow::show_node);
  connect(view_, &GraphView::scope_selected, this, &MainWindow::show_scope);
  connect(view_, &GraphView::node_context_menu, this, &MainWindow::node_menu);
  connect(view_, &GraphView::scope_context_menu, this, &MainWindow::scope_menu);
  connect(cost_table_, &CostTable::candidate_selected, this,
          [this](size_t id) { view_->highlight(controller_->candidate_nodes(id)); });
  connect(threads_, qOverload<int>(&QSpinBox::valueChanged), c, &ExplorerController::set_threads);
  connect(threads_, qOverload<int>(&QSpinBox::valueChanged), this, &MainWindow::refresh_backend_toggles);
  // The threads box shows what a loaded placement was tuned at; the next tune uses it too.
  connect(c, &ExplorerController::placement_threads, threads_, &QSpinBox::setValue);
  // Likewise the accuracy box, for a placement tuned under a budget (the controller adopted it).
  connect(c, &ExplorerController::placement_accuracy, this, &MainWindow::set_accuracy);
  connect(accuracy_box_, &QLineEdit::editingFinished, this, [this] {
    if (accuracy_box_->isModified()) set_accuracy(accuracy_box_->text().trimmed());
    accuracy_box_->setModified(false);
  });
  connect(diff_panel_, &PlacementDiffPanel::region_selected, this,
          [this](int row) { view_->highlight(diff_panel_->model()->region(row).nodes); });
  connect(c, &ExplorerController::profiled, this, [this](const ProfileReport& report) {
    profile_panel_->set_report(report);
    const bool first_shown = profile_dock_->isHidden();
    profile_dock_->show();
    profile_dock_->raise();
    // Its timeline needs a lane per backend and its table nine columns: when it opens, give it
    // most of the bottom's width and enough height for rows below the lanes; while it stays open
    // the user's own layout stands. (Resized once in the layout: it joins on the next turn.)
    if (first_shown)
      QTimer::singleShot(0, this, [this] {
        resizeDocks({profile_dock_, log_dock_}, {width() * 2 / 3, width() / 3}, Qt::Horizontal);
        resizeDocks({profile_dock_}, {height() * 9 / 20}, Qt::Vertical);
      });
  });
  connect(profile_panel_, &ProfilePanel::kernel_selected, this,
          [this](int row) { view_->highlight(profile_panel_->model()->kernel(row).nodes); });
  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  // Empty charts would take the graph's room: shown once a search has progress to show; until
  // then the log below the graph is a few lines high.
  chart_dock_->hide();
  resizeDocks({log_dock_}, {kLogLines * fontMetrics().height()}, Qt::Vertical);
  threads_->setValue(settings.value("tune/threads", 1).toInt());
  c->set_threads(threads_->value());
  refresh_backend_toggles();
  // $COLLAGE_COST_DB wins over the remembered choice, as for the CLI.
  if (qEnvironmentVariableIsEmpty("COLLAGE_COST_DB") && settings.contains("tune/cost_db"))
    set_cost_db(settings.value("tune/cost_db").toString(), false);
  set_remote(settings.value("tune/remote", false).toBool(), false);
  // The last accuracy budget, as the thread count; one that no longer parses is dropped, saying so.
  const QString budget = settings.value("tune/accuracy").toString();
  if (!budget.isEmpty()) try {
      parse_accuracy(budget.toStdString());
      set_accuracy(budget);
    } catch (const Error& e) {
      log("the remembered accuracy budget '" + budget + "' is dropped: " + QString::fromStdString(e.what()));
    }
}

void MainWindow::show_workers() {
  controller_->start_queue_status();  // false: the previous answer is on its way
}

void MainWindow::on_queue_status(const QueueStatus& status) {
  QString text = queue_status_text(status);
  log(text.trimmed());
  notify(QMessageBox::Information, "Measurement workers", text);
}

void MainWindow::build_menus_and_toolbar() {
  auto open = [this] {
    QString path = QFileDialog::getOpenFileName(this, "Open ONNX model", QString(), "ONNX models (*.onnx)");
    if (!path.isEmpty()) open_model(path);
  };
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("&Open…", this, open, QKeySequence::Open);
  recent_menu_ = file->addMenu("Open &recent");
  file->addAction("Load &placement…", this, [this] {
    QString path = QFileDialog::getOpenFileName(this, "Load placement", QString(), "JSON (*.json)");
    if (!path.isEmpty()) load_placement(path);
  });
  file->addAction("&Compare with placement…", this, [this] {
    QString path = QFileDialog::getOpenFileName(this, "Compare with placement", QString(), "JSON (*.json)");
    if (!path.isEmpty()) compare_with_placement(path);
  });
  compare_bucket_action_ = file->addAction("Compare with shape &bucket…", this, [this] {
    const std::vector<DimValues>& buckets = controller_->bucket_dims();
    QStringList others;
    std::vector<size_t> index;
    for (size_t i = 0; i < buckets.size(); ++i)
      if (static_cast<int>(i) != controller_->current_bucket()) {
        others << QString::fromStdString(bucket_label(buckets[i]));
        index.push_back(i);
      }
    bool ok = false;
    QString chosen =
        QInputDialog::getItem(this, "Compare with shape bucket",
                              "Where does the placement change at another shape?", others, 0, false, &ok);
    if (ok && others.contains(chosen))
      compare_with_bucket(index[static_cast<size_t>(others.indexOf(chosen))]);
  });
  compare_bucket_action_->setEnabled(false);
  file->addAction("&Export placement…", this, &MainWindow::export_placement);
  file->addAction("Export &artifact…", this, &MainWindow::export_artifact_dialog);
  file->addAction("Save &view as PNG or SVG…", this, [this] {
    QString path = QFileDialog::getSaveFileName(this, "Save view", "graph.png", "PNG (*.png);;SVG (*.svg)");
    if (!path.isEmpty() && !view_->save_image(path))
      notify(QMessageBox::Critical, "Save view", "Cannot write " + path);
  });
  file->addAction("&Quit", this, &QWidget::close, QKeySequence::Quit);
  QMenu* measure = menuBar()->addMenu("&Measure");
  measure->addAction("&Cost database…", this, [this] {
    bool ok = false;
    QString location = QInputDialog::getText(
        this, "Cost database",
        "An SQLite file, or a team's PostgreSQL server (postgresql://user@host:port/db):", QLineEdit::Normal,
        controller_->cost_db_path(), &ok);
    if (ok && !location.trimmed().isEmpty()) set_cost_db(location.trimmed(), true);
  });
  remote_action_ = measure->addAction("Measure on the team's &workers");
  remote_action_->setCheckable(true);
  remote_action_->setToolTip(
      "Tune and Refine queue what the shared cost DB lacks for `collage worker`s of this "
      "machine kind (measured here when none is running)");
  connect(remote_action_, &QAction::triggered, this, [this](bool on) { set_remote(on, true); });
  measure->addAction("Show the &workers", this, &MainWindow::show_workers);
  QMenu* view = menuBar()->addMenu("&View");
  view->addAction("&Fit whole graph (F)", view_, &GraphView::fit);
  view->addAction("&Zoom to selection (Z)", view_, &GraphView::zoom_to_selection);
  QAction* minimap = view->addAction("&Overview minimap");
  minimap->setCheckable(true);
  minimap->setChecked(true);
  connect(minimap, &QAction::toggled, view_, &GraphView::set_minimap_visible);
  view->addSeparator();
  QMenu* depth = view->addMenu("&Collapse all to depth");
  connect(depth, &QMenu::aboutToShow, this, [this, depth] {  // the depths this model's scopes have
    depth->clear();
    const int max_depth = view_->scope_tree() ? view_->scope_tree()->max_depth() : 0;
    for (int d = 1; d <= max_depth; ++d)
      depth->addAction(QString::number(d), this, [this, d] { view_->collapse_to_depth(d); });
    if (max_depth == 0) depth->addAction("(no name scopes in this model)")->setEnabled(false);
  });
  view->addAction("&Expand all", view_, &GraphView::expand_all);
  rebuild_recent_menu();
  setAcceptDrops(true);

  QToolBar* bar = addToolBar("Main");
  bar->setObjectName("main-toolbar");
  bar->addAction("Open…", this, open);
  tune_action_ = bar->addAction("Tune", this, &MainWindow::start_tune);
  refine_action_ = bar->addAction("Refine", this, &MainWindow::start_refine);
  refine_action_->setToolTip(
      "graph-level search: offload regions to graph-level backends, judged by measured latency");
  profile_action_ = bar->addAction("Profile", this, &MainWindow::start_profile);
  profile_action_->setToolTip(
      "time every kernel inside the real run: a timeline and in-run vs isolated costs");
  compare_refined_action_ =
      bar->addAction("Diff op-level/refined", this, [this] { compare_op_level_with_refined(); });
  compare_refined_action_->setToolTip("after Refine: which kernels the graph-level search changed");
  compare_refined_action_->setEnabled(false);
  stop_action_ = bar->addAction("Stop", controller_, &ExplorerController::stop);
  stop_action_->setEnabled(false);
  bar->addAction("Fit", view_, &GraphView::fit)->setToolTip("show the whole graph (F)");
  bar->addAction("Zoom to selection", view_, &GraphView::zoom_to_selection)->setToolTip("Z");
  heatmap_action_ = bar->addAction("Heatmap");
  heatmap_action_->setCheckable(true);
  connect(heatmap_action_, &QAction::toggled, this, [this](bool on) {
    view_->set_coloring(on ? GraphView::Coloring::CostHeatmap : GraphView::Coloring::Backend);
  });
  bar->addAction("Export placement…", this, &MainWindow::export_placement);
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  // The backend toggles double as the colour legend. They sit above the graph in rows that wrap
  // (FlowLayout): on one toolbar row a window of 1600 px elided most of the sixteen names.
  auto* legend = new QWidget(this);
  legend->setObjectName("backend-legend");
  legend->setStyleSheet("QToolButton { padding: 1px 4px; }");
  auto* chips = new FlowLayout(legend, 2);
  chips->setContentsMargins(4, 2, 4, 2);
  auto* title = new QLabel("backends:", legend);
  chips->addWidget(title);
  for (const BackendSpec* b : all_backends()) {
    QPixmap swatch(12, 12);
    swatch.fill(backend_color(QString::fromStdString(b->name)));
    auto* a = new QAction(QIcon(swatch), QString::fromStdString(b->name), legend);
    a->setCheckable(true);
    a->setChecked(b->precision == Precision::Float32 && unavailable_reason(*b).empty());
    connect(a, &QAction::toggled, this, &MainWindow::update_backends);
    legend->addAction(a);  // listed, not drawn: the chip below draws it
    auto* chip = new QToolButton(legend);
    chip->setDefaultAction(a);
    chip->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    chip->setAutoRaise(true);
    chips->addWidget(chip);
    backend_actions_.push_back(a);
  }
  title->setMinimumHeight(
      legend->findChild<QToolButton*>()->sizeHint().height());                    // centred on the chips' row
  static_cast<QVBoxLayout*>(centralWidget()->layout())->insertWidget(0, legend);  // above the graph
  find_box_ = new QLineEdit(this);
  find_box_->setPlaceholderText("find node or op (Ctrl+F, Enter = next)");
  find_box_->setMaximumWidth(260);
  bar->addWidget(find_box_);
  bar->addAction("◀", this, [this] { find_step(-1); })->setToolTip("previous match (Shift+F3)");
  bar->addAction("▶", this, [this] { find_step(+1); })->setToolTip("next match (F3)");
  new QShortcut(QKeySequence(Qt::Key_F3), this, [this] { find_step(+1); });
  new QShortcut(QKeySequence("Shift+F3"), this, [this] { find_step(-1); });
  connect(find_box_, &QLineEdit::textChanged, this, [this] {
    find_index_ = 0;
    find_hits_.clear();
  });
  connect(find_box_, &QLineEdit::returnPressed, this, [this] { find_step(+1); });
  new QShortcut(QKeySequence::Find, this, [this] {
    find_box_->setFocus();
    find_box_->selectAll();
  });
  bar->addSeparator();
  // A placement file with shape buckets: which bucket's graph and placement are shown.
  auto* bucket_widget = new QWidget(this);
  auto* bucket_layout = new QHBoxLayout(bucket_widget);
  bucket_layout->setContentsMargins(0, 0, 0, 0);
  bucket_layout->addWidget(new QLabel(" shape ", bucket_widget));
  bucket_box_ = new QComboBox(bucket_widget);
  bucket_box_->setToolTip("the placement file's shape buckets (collage tune --dim NAME=V1,V2,...)");
  bucket_layout->addWidget(bucket_box_);
  bucket_box_action_ = bar->addWidget(bucket_widget);
  bucket_box_action_->setVisible(false);
  connect(bucket_box_, QOverload<int>::of(&QComboBox::activated), this, [this](int index) {
    if (index >= 0 && index != controller_->current_bucket()) switch_bucket(static_cast<size_t>(index));
  });
  bar->addWidget(new QLabel(" threads ", this));
  threads_ = new QSpinBox(this);
  threads_->setObjectName("threads");
  threads_->setRange(1, 256);
  bar->addWidget(threads_);
  bar->addWidget(new QLabel(" accuracy ", this));
  accuracy_box_ = new QLineEdit(this);
  accuracy_box_->setObjectName("accuracy");
  accuracy_box_->setPlaceholderText("fp32");
  accuracy_box_->setMaximumWidth(190);
  accuracy_box_->setToolTip(
      "accuracy budget of the next tune (collage tune --accuracy), e.g. cosine=0.999,max-rel=5e-2 or "
      "top1,max-rel=5e-2:\nreduced-precision kernels (int8, bf16) take part, and the placement is held "
      "to it end to end;\nempty: fp32 only");
  bar->addWidget(accuracy_box_);
}

void MainWindow::log(const QString& line) { log_->appendPlainText(line); }

void MainWindow::notify(int icon, const QString& title, const QString& text) {
  if (!dialogs_) return;
  // Non-modal, so long work and tests never block on a dialog; Qt's parent owns it.
  auto* box = new QMessageBox(static_cast<QMessageBox::Icon>(icon), title, text, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

void MainWindow::set_busy(bool busy, bool stoppable) {
  tune_action_->setEnabled(!busy);
  refine_action_->setEnabled(!busy);
  profile_action_->setEnabled(!busy);
  compare_refined_action_->setEnabled(!busy && controller_->op_level_placement().has_value());
  stop_action_->setEnabled(busy && stoppable);
}

void MainWindow::update_bucket_box() {
  const std::vector<DimValues>& buckets = controller_->bucket_dims();
  bucket_box_->clear();
  for (const DimValues& b : buckets) bucket_box_->addItem(QString::fromStdString(bucket_label(b)));
  bucket_box_->setCurrentIndex(controller_->current_bucket());
  bucket_box_action_->setVisible(!buckets.empty());
  compare_bucket_action_->setEnabled(buckets.size() > 1 && controller_->current_bucket() >= 0);
}

void MainWindow::switch_bucket(size_t index) {
  if (!controller_->switch_bucket(index)) return;
  status_->setText("Importing the model at " +
                   QString::fromStdString(bucket_label(controller_->bucket_dims().at(index))) + "…");
  progress_->setRange(0, 0);
  set_busy(true, false);
}

bool MainWindow::compare_with_bucket(size_t index) {
  try {
    show_comparison(controller_->compare_with_bucket(index));
    return true;
  } catch (const std::exception& e) {
    log(QString("compare failed: ") + e.what());
    notify(QMessageBox::Critical, "Cannot compare shape buckets", e.what());
    return false;
  }
}

void MainWindow::open_model(const QString& path, const DimValues& dims) {
  if (!controller_->open_model(path, dims)) return;
  status_->setText("Importing " + path + "…");
  progress_->setRange(0, 0);
  set_busy(true, false);
}

void MainWindow::show_progress_charts() {
  chart_dock_->show();
  chart_dock_->raise();
}

void MainWindow::start_tune() {
  if (!controller_->start_tune()) return;
  chart_->clear();
  show_progress_charts();
  set_busy(true, true);
}

void MainWindow::start_refine() {
  if (!controller_->start_refine()) return;
  chart_->clear_refine();
  show_progress_charts();
  set_busy(true, true);
}

void MainWindow::start_profile() {
  if (!controller_->start_profile()) return;
  status_->setText("Profiling…");
  progress_->setRange(0, 0);
  set_busy(true, false);
}

bool MainWindow::compare_with_placement(const QString& path) {
  try {
    show_comparison(controller_->compare_with_file(path));
    return true;
  } catch (const std::exception& e) {
    log(QString("compare failed: ") + e.what());
    notify(QMessageBox::Critical, "Cannot compare placements", e.what());
    return false;
  }
}

bool MainWindow::compare_op_level_with_refined() {
  try {
    show_comparison(controller_->compare_op_level_with_refined());
    return true;
  } catch (const std::exception& e) {
    notify(QMessageBox::Information, "Compare op-level and refined", e.what());
    return false;
  }
}

void MainWindow::show_comparison(const PlacementComparison& comparison) {
  diff_panel_->set_diff(comparison.diff, controller_->graph(), comparison.a_name, comparison.b_name);
  diff_dock_->show();
  diff_dock_->raise();
  view_->highlight(comparison.diff.changed());
  log(QString("compared %1 with %2: %3")
          .arg(comparison.a_name, comparison.b_name,
               comparison.diff.identical() ? QString("identical")
                                           : QString("%1 nodes changed in %2 regions")
                                                 .arg(comparison.diff.changed_nodes)
                                                 .arg(comparison.diff.regions.size())));
}

void MainWindow::on_progress(const ProgressEvent& e) {
  using Stage = ProgressEvent::Stage;
  switch (e.stage) {
    case Stage::RefineEvaluation:
      status_->setText(QString("refining: evaluation %1: %2 (best %3)")
                           .arg(e.done)
                           .arg(QString::fromStdString(e.message))
                           .arg(e.best_ms ? QString("%1 ms").arg(*e.best_ms, 0, 'f', 3) : QString("-")));
      break;
    case Stage::Refine:
      chart_->add_generation(static_cast<int>(e.done), e.best_ms, e.mean_ms);
      status_->setText(QString("refining: %1, best %2")
                           .arg(QString::fromStdString(e.message))
                           .arg(e.best_ms ? QString("%1 ms").arg(*e.best_ms, 0, 'f', 3) : QString("-")));
      log(status_->text());
      break;
    case Stage::Measure:
      progress_->setRange(0, static_cast<int>(e.total));
      progress_->setValue(static_cast<int>(e.done));
      chart_->add_measure_progress(e.done, e.total, e.elapsed_ms / 1000);
      status_->setText(
          QString("measuring %1/%2: %3").arg(e.done).arg(e.total).arg(QString::fromStdString(e.message)));
      if (e.done % 25 == 0 || e.done == e.total) log(status_->text());
      break;
    case Stage::Search:
      status_->setText(QString("searching: %1 states").arg(e.done));
      break;
  }
}

void MainWindow::on_finished(const JobReport& report) {
  set_busy(false, false);
  QString status = report.summary;
  switch (report.job) {
    case Job::Load:
      progress_->setRange(0, 1);
      view_->set_graph(controller_->graph(), controller_->layout());  // opens fitted
      cost_table_->clear();
      chart_->clear();
      inspected_ = inspected_scope_ = -1;
      diff_panel_->clear();  // both held the previous model's nodes
      profile_panel_->clear();
      status += QString(", shown in %1 s").arg(report.seconds, 0, 'f', 2);
      log(status);
      setWindowTitle("Collage Explorer — " + controller_->model_path() +
                     (controller_->dims().empty()
                          ? QString()
                          : " at " + QString::fromStdString(bucket_label(controller_->dims()))));
      add_recent(controller_->model_path());
      update_bucket_box();
      if (controller_->busy()) {  // switching bucket: its placement is in force, its costs loading
        view_->set_placement(&*controller_->placement());
        status_->setText("Reading the candidates' costs from the cost DB…");
        progress_->setRange(0, 0);
        set_busy(true, false);
        return;
      }
      break;
    case Job::Tune: {
      const TuneResult& tuned = *controller_->tuned();
      chart_->show_placement("op-level", *controller_->placement());
      view_->set_placement(&*controller_->placement());
      cost_table_->finish(tuned.candidates, tuned.costs);
      if (!report.mismatch.isEmpty())
        notify(QMessageBox::Critical, "Placement disagrees with the reference", report.mismatch);
      break;
    }
    case Job::Refine:
      view_->set_placement(&*controller_->placement());  // recolour with the regions
      break;
    case Job::Profile:  // the `profiled` signal filled the dock
      progress_->setRange(0, 1);
      break;
    case Job::ExportArtifact:
      break;
    case Job::PlacementCosts:
      progress_->setRange(0, 1);
      update_bucket_box();
      cost_table_->finish(controller_->tuned()->candidates, controller_->tuned()->costs);
      view_->set_placement(&*controller_->placement());
      chart_->clear();
      chart_->show_placement("loaded", *controller_->placement());
      break;
  }
  for (const QString& line : report.log) log(line);
  status_->setText(status);
  // A new placement changes why the inspected node runs where it does, and a scope's time.
  if (report.job != Job::Load && inspected_ >= 0)
    inspector_->show_node(controller_->node_details(inspected_));
  if (report.job != Job::Load && inspected_scope_ > 0)
    inspector_->show_scope(controller_->scope_details(inspected_scope_));
}

void MainWindow::on_failed(const JobFailure& f) {
  set_busy(false, false);
  progress_->setRange(0, 1);
  switch (f.job) {
    case Job::Load:
      status_->setText("Import failed");
      log("error: " + f.message);
      notify(QMessageBox::Critical, "Cannot open model", f.message);
      return;
    case Job::PlacementCosts:
      status_->setText("Costs not loaded");
      log("costs of the placement's candidates not loaded: " + f.message);
      return;
    case Job::ExportArtifact:
      status_->setText("Artifact not exported");
      log("artifact export failed: " + f.message);
      if (!f.cancelled) notify(QMessageBox::Critical, "Export artifact", f.message);
      return;
    case Job::Tune:
    case Job::Refine:
    case Job::Profile: {
      QString what = f.job == Job::Tune ? "Tune" : f.job == Job::Refine ? "Refine" : "Profile";
      log(what.toLower() + " stopped: " + f.message);
      status_->setText(what + " stopped: " + f.message);
      if (!f.cancelled) notify(QMessageBox::Warning, what + " failed", f.message);
    }
  }
}

void MainWindow::show_node(int node) {
  if (!controller_->graph() || node < 0 || node >= controller_->graph()->num_nodes()) return;
  if (controller_->tuned()) cost_table_->show_node(node);  // the candidates covering it
  inspected_ = node;
  inspected_scope_ = -1;
  inspector_->show_node(controller_->node_details(node));
}

void MainWindow::show_scope(int scope) {
  if (!controller_->graph()) return;
  inspected_ = -1;
  inspected_scope_ = scope;
  inspector_->show_scope(controller_->scope_details(scope));
}

void MainWindow::set_heatmap(bool on) { heatmap_action_->setChecked(on); }

void MainWindow::select_scope(int scope) {
  const ScopeTree* tree = view_->scope_tree();
  if (!tree || scope <= 0 || scope >= tree->size()) return;
  if (!view_->is_collapsed(scope)) return select_node(tree->scope(scope).nodes.front());
  view_->highlight(tree->scope(scope).nodes);  // selects the box, which emits scope_selected
  show_scope(scope);
}

void MainWindow::select_node(int node) {
  view_->highlight({node});
  show_node(node);
}

void MainWindow::export_placement() {
  if (!controller_->placement()) {
    notify(QMessageBox::Information, "Export placement", "Tune the model (or load a placement) first.");
    return;
  }
  QString path = QFileDialog::getSaveFileName(this, "Export placement", "placement.json", "JSON (*.json)");
  if (!path.isEmpty() && !save_placement(path))
    notify(QMessageBox::Critical, "Export placement", "Cannot write " + path);
}

bool MainWindow::save_placement(const QString& path) {
  try {
    controller_->save_placement(path);
    log("placement written to " + path);
    return true;
  } catch (const std::exception& e) {
    log(QString("placement not written: ") + e.what());
    return false;
  }
}

void MainWindow::export_artifact_dialog() {
  if (!controller_->placement()) {
    notify(QMessageBox::Information, "Export artifact", "Tune the model (or load a placement) first.");
    return;
  }
  QString path = QFileDialog::getSaveFileName(
      this, "Export artifact", QFileInfo(controller_->model_path()).completeBaseName() + ".collage",
      "Collage artifact (*.collage)");
  if (path.isEmpty()) return;
  start_export_artifact(path);
}

void MainWindow::start_export_artifact(const QString& path) {
  if (!controller_->start_export_artifact(path)) return;  // a refusal arrives as job_failed
  set_busy(true, false);
  status_->setText("Exporting the artifact: compiling, reloading and checking it…");
}

bool MainWindow::load_placement(const QString& path) {
  try {
    controller_->load_placement(path);  // then the candidates' costs from the cost DB, as a job
    if (!controller_->placement()) {    // shape buckets: the model is re-imported for the first one
      status_->setText("Importing the model for the placement's first shape bucket…");
      progress_->setRange(0, 0);
      set_busy(true, false);
      return true;
    }
    view_->set_placement(&*controller_->placement());
    cost_table_->clear();
    status_->setText("Reading the candidates' costs from the cost DB…");
    progress_->setRange(0, 0);
    set_busy(true, false);
    compare_refined_action_->setEnabled(false);
    return true;
  } catch (const std::exception& e) {
    log(QString("placement not loaded: ") + e.what());
    notify(QMessageBox::Critical, "Cannot load placement", e.what());
    return false;
  }
}

std::vector<NodeId> MainWindow::find_all(const QString& text) {
  std::vector<NodeId> hits = view_->find(text);
  view_->highlight(hits);
  return hits;
}

void MainWindow::find_step(int direction) {
  bool fresh = find_hits_.empty();
  if (fresh) find_hits_ = view_->find(find_box_->text());
  if (find_hits_.empty()) {
    status_->setText("no node matches '" + find_box_->text() + "'");
    return;
  }
  const size_t n = find_hits_.size();
  if (fresh) {
    find_index_ = 0;
    view_->highlight(find_hits_);  // first search: highlight every match, centre the first
  } else {
    find_index_ = (find_index_ + n + static_cast<size_t>(direction > 0 ? 1 : n - 1)) % n;
    view_->highlight({find_hits_[find_index_]});
  }
  show_node(find_hits_[find_index_]);
  status_->setText(QString("match %1 of %2").arg(find_index_ + 1).arg(n));
}

void MainWindow::add_recent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recent").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > 8) recent.removeLast();
  settings.setValue("recent", recent);
  rebuild_recent_menu();
}

void MainWindow::rebuild_recent_menu() {
  recent_menu_->clear();
  for (const QString& path : QSettings().value("recent").toStringList())
    recent_menu_->addAction(path, this, [this, path] { open_model(path); });
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  settings.setValue("tune/threads", threads_->value());
  settings.setValue("tune/accuracy", QString::fromStdString(controller_->accuracy().to_string()));
  QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (urls.isEmpty() || !urls[0].isLocalFile()) return;
  QString path = urls[0].toLocalFile();
  if (path.endsWith(".json"))
    load_placement(path);
  else
    open_model(path);
}

}  // namespace collage
