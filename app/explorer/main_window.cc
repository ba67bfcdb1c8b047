#include "app/explorer/main_window.h"

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
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>

#include "app/explorer/explorer_helpers.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/artifact_export.h"
#include "core/executor.h"
#include "core/graph_analysis.h"
#include "core/onnx_import.h"
#include "core/placement_timing.h"
#include "core/refine.h"
#include "widgets/backend_colors.h"
#include "widgets/cost_table.h"
#include "widgets/graph_view.h"
#include "widgets/progress_chart.h"

namespace collage {

MainWindow::MainWindow() {
  setWindowTitle("Collage Explorer");
  resize(1400, 900);
  view_ = new GraphView(this);
  setCentralWidget(view_);

  auto dock = [this](const QString& title, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(title);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  inspector_ = new QTextBrowser(this);
  dock("Inspector", inspector_, Qt::RightDockWidgetArea);
  cost_table_ = new CostTable(this);
  QDockWidget* cost_dock = dock("Candidate kernels", cost_table_, Qt::RightDockWidgetArea);
  // Wide enough for backend, kernel, cost and status; a saved window state overrides it.
  resizeDocks({cost_dock}, {460}, Qt::Horizontal);
  chart_ = new ProgressChart(this);
  chart_->setMinimumHeight(180);
  dock("Search progress", chart_, Qt::BottomDockWidgetArea);
  log_ = new QPlainTextEdit(this);
  log_->setReadOnly(true);
  dock("Log", log_, Qt::BottomDockWidgetArea);

  QMenu* file = menuBar()->addMenu("&File");
  file->addAction(
      "&Open…", this,
      [this] {
        QString path =
            QFileDialog::getOpenFileName(this, "Open ONNX model", QString(), "ONNX models (*.onnx)");
        if (!path.isEmpty()) open_model(path);
      },
      QKeySequence::Open);
  recent_menu_ = file->addMenu("Open &recent");
  file->addAction("Load &placement…", this, [this] {
    QString path = QFileDialog::getOpenFileName(this, "Load placement", QString(), "JSON (*.json)");
    if (!path.isEmpty()) load_placement(path);
  });
  file->addAction("&Export placement…", this, &MainWindow::export_placement);
  file->addAction("Export &artifact…", this, &MainWindow::export_artifact_dialog);
  file->addAction("Save &view as PNG or SVG…", this, [this] {
    QString path = QFileDialog::getSaveFileName(this, "Save view", "graph.png", "PNG (*.png);;SVG (*.svg)");
    if (!path.isEmpty() && !view_->save_image(path))
      QMessageBox::critical(this, "Save view", "Cannot write " + path);
  });
  file->addAction("&Quit", this, &QWidget::close, QKeySequence::Quit);
  rebuild_recent_menu();
  setAcceptDrops(true);

  QToolBar* bar = addToolBar("Main");
  bar->setObjectName("main-toolbar");
  bar->addAction("Open…", this, [this] {
    QString path = QFileDialog::getOpenFileName(this, "Open ONNX model", QString(), "ONNX models (*.onnx)");
    if (!path.isEmpty()) open_model(path);
  });
  tune_action_ = bar->addAction("Tune", this, &MainWindow::start_tune);
  refine_action_ = bar->addAction("Refine", this, &MainWindow::start_refine);
  refine_action_->setToolTip(
      "graph-level search: offload regions to graph-level backends, judged by measured latency");
  stop_action_ = bar->addAction("Stop", this, [this] { cancel_ = true; });
  stop_action_->setEnabled(false);
  bar->addAction("Fit", view_, &GraphView::fit);
  bar->addAction("Heatmap", this,
                 [this](bool on) {
                   view_->set_coloring(on ? GraphView::Coloring::CostHeatmap : GraphView::Coloring::Backend);
                 })
      ->setCheckable(true);
  bar->addAction("Export placement…", this, &MainWindow::export_placement);
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->addSeparator();
  for (const BackendSpec* b : all_backends()) {
    QPixmap swatch(12, 12);  // the toggles double as the colour legend
    swatch.fill(backend_color(QString::fromStdString(b->name)));
    QAction* a = bar->addAction(QIcon(swatch), QString::fromStdString(b->name));
    a->setCheckable(true);
    a->setChecked(true);
    a->setToolTip(QString::fromStdString(b->name + " " + b->version));
    backend_actions_.push_back(a);
  }
  bar->addSeparator();
  bar->addAction("Re-search with pins", this, &MainWindow::start_tune);
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
  bar->addWidget(new QLabel(" threads ", this));
  threads_ = new QSpinBox(this);
  threads_->setRange(1, 256);
  bar->addWidget(threads_);

  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(300);
  status_ = new QLabel("Open a model to begin.", this);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);

  connect(this, &MainWindow::model_loaded, this, &MainWindow::on_model_loaded, Qt::QueuedConnection);
  connect(this, &MainWindow::progress, this, &MainWindow::on_progress, Qt::QueuedConnection);
  connect(this, &MainWindow::tune_finished, this, &MainWindow::on_tune_finished, Qt::QueuedConnection);
  connect(this, &MainWindow::refine_finished, this, &MainWindow::on_refine_finished, Qt::QueuedConnection);
  connect(view_, &GraphView::node_selected, this, &MainWindow::show_node);
  connect(view_, &GraphView::node_context_menu, this, &MainWindow::node_menu);
  QSettings settings;
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  threads_->setValue(settings.value("tune/threads", 1).toInt());
  connect(cost_table_, &CostTable::candidate_selected, this, [this](size_t index) {
    if (!tuned_ || index >= tuned_->candidates.size()) return;
    std::vector<NodeId> nodes;
    for (size_t n : tuned_->candidates[index].nodes.indices()) nodes.push_back(static_cast<NodeId>(n));
    view_->highlight(nodes);
  });
}

MainWindow::~MainWindow() {
  cancel_ = true;
  join_worker();
}

void MainWindow::join_worker() {
  if (worker_.joinable()) worker_.join();
}

void MainWindow::log(const QString& line) { log_->appendPlainText(line); }

std::vector<const BackendSpec*> MainWindow::selected_backends() const {
  std::vector<const BackendSpec*> out;
  for (size_t i = 0; i < backend_actions_.size(); ++i)
    if (backend_actions_[i]->isChecked()) out.push_back(all_backends()[i]);
  if (std::find(out.begin(), out.end(), find_backend("native")) == out.end())
    out.push_back(find_backend("native"));
  return out;  // native always fills gaps
}

void MainWindow::open_model(const QString& path) {
  cancel_ = true;  // a running tune stops within one candidate
  join_worker();
  model_path_ = path;
  status_->setText("Importing " + path + "…");
  progress_->setRange(0, 0);
  tune_action_->setEnabled(false);
  open_started_ = std::chrono::steady_clock::now();
  worker_ = std::thread([this, path] {
    try {
      ImportOptions options;
      options.evaluator = native::node_evaluator();
      auto graph = std::make_unique<Graph>(import_onnx_file(path.toStdString(), options));
      GraphLayout layout = layout_graph(*graph);
      QMetaObject::invokeMethod(
          this,
          [this, g = graph.release(), layout]() mutable {
            graph_.reset(g);
            layout_ = std::move(layout);
          },
          Qt::QueuedConnection);
      emit model_loaded(true, QString());
    } catch (const std::exception& e) {
      emit model_loaded(false, QString::fromStdString(e.what()));
    }
  });
}

void MainWindow::on_model_loaded(bool ok, const QString& message) {
  join_worker();
  progress_->setRange(0, 1);
  tune_action_->setEnabled(true);
  if (!ok) {
    status_->setText("Import failed");
    log("error: " + message);
    if (!screenshot_path_.isEmpty()) {
      maybe_screenshot("cannot open model: " + message);
      return;
    }
    notify(this, QMessageBox::Critical, "Cannot open model", message);
    return;
  }
  tuned_.reset();
  placement_.reset();
  view_->set_graph(graph_.get(), layout_);
  view_->fit();
  cost_table_->clear();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - open_started_).count();
  status_->setText(QString("%1: %2 nodes (%3 layout), shown in %4 s")
                       .arg(model_path_)
                       .arg(graph_->num_nodes())
                       .arg(QString::fromStdString(layout_.engine))
                       .arg(seconds, 0, 'f', 2));
  log(status_->text());
  setWindowTitle("Collage Explorer — " + model_path_);
  add_recent(model_path_);
  pins_ = Pins{};
  if (!screenshot_path_.isEmpty() && screenshot_after_tune_)
    start_tune();
  else
    maybe_screenshot();
}

void MainWindow::show_node(int node) {
  if (!graph_ || node < 0 || node >= graph_->num_nodes()) return;
  if (tuned_) cost_table_->show_node(tuned_->candidates, node);  // the candidates covering it
  const Node& n = graph_->node(node);
  QString html = QString("<h3>%1</h3><p>%2 (opset %3), node %4</p>")
                     .arg(QString::fromStdString(n.name).toHtmlEscaped(), QString::fromStdString(n.op_type))
                     .arg(n.opset)
                     .arg(node);
  NodeCost cost = node_cost(*graph_, node);
  html += QString("<p>%1 MFLOPs, %2 KB read, %3 KB written</p>")
              .arg(cost.flops / 1e6, 0, 'f', 3)
              .arg(cost.bytes_read / 1024, 0, 'f', 1)
              .arg(cost.bytes_written / 1024, 0, 'f', 1);
  for (const auto& [key, a] : n.attrs) {
    QString value;
    switch (a.kind) {
      case AttrKind::Int:
        value = QString::number(a.i);
        break;
      case AttrKind::Float:
        value = QString::number(a.f);
        break;
      case AttrKind::String:
        value = QString::fromStdString(a.s).toHtmlEscaped();
        break;
      case AttrKind::Ints:
        for (int64_t x : a.ints) value += QString::number(x) + " ";
        break;
      case AttrKind::Floats:
        for (float x : a.floats) value += QString::number(x) + " ";
        break;
      default:
        value = "…";
    }
    html += QString("<code>%1</code> = %2<br>").arg(QString::fromStdString(key), value);
  }
  for (ValueId v : n.inputs)
    if (v != kNoValue)
      html += QString("in <code>%1</code> %2 %3<br>")
                  .arg(QString::fromStdString(graph_->value(v).name).toHtmlEscaped(),
                       dtype_name(graph_->value(v).dtype),
                       QString::fromStdString(shape_to_string(graph_->value(v).shape)));
  for (ValueId v : n.outputs)
    if (v != kNoValue)
      html += QString("out <code>%1</code> %2 %3<br>")
                  .arg(QString::fromStdString(graph_->value(v).name).toHtmlEscaped(),
                       dtype_name(graph_->value(v).dtype),
                       QString::fromStdString(shape_to_string(graph_->value(v).shape)));
  if (tuned_) {
    html += "<h4>Candidate kernels covering it</h4><table>";
    for (size_t i = 0; i < tuned_->candidates.size(); ++i) {
      const Candidate& c = tuned_->candidates[i];
      if (!c.nodes.contains(static_cast<size_t>(node))) continue;
      const KernelCost& k = tuned_->costs[i].cost;
      html += QString("<tr><td>%1</td><td>%2</td><td>%3</td></tr>")
                  .arg(QString::fromStdString(c.backend), QString::fromStdString(c.label))
                  .arg(k.valid ? QString("%1 ms ± %2 (%3 samples)")
                                     .arg(k.median_ms, 0, 'f', 4)
                                     .arg(k.stddev_ms, 0, 'f', 4)
                                     .arg(k.samples)
                               : "invalid: " + QString::fromStdString(k.reason).toHtmlEscaped());
    }
    html += "</table>";
  }
  if (placement_)
    for (const PlacedKernel& k : placement_->kernels)
      if (std::find(k.nodes.begin(), k.nodes.end(), node) != k.nodes.end())
        html += QString("<p><b>Assigned:</b> %1 %2, %3 ms</p>")
                    .arg(QString::fromStdString(k.backend), QString::fromStdString(k.label))
                    .arg(k.cost_ms, 0, 'f', 4);
  inspector_->setHtml(html);
}

void MainWindow::export_placement() {
  if (!placement_ || !graph_) {
    QMessageBox::information(this, "Export placement", "Tune the model (or load a placement) first.");
    return;
  }
  QString path = QFileDialog::getSaveFileName(this, "Export placement", "placement.json", "JSON (*.json)");
  if (!path.isEmpty() && !save_placement(path))
    notify(this, QMessageBox::Critical, "Export placement", "Cannot write " + path);
}

bool MainWindow::save_placement(const QString& path) {
  if (!placement_ || !graph_) return false;
  std::ofstream out(path.toStdString(), std::ios::trunc);
  out << placement_to_json(*placement_, *graph_) << "\n";
  if (!out) return false;
  log("placement written to " + path);
  return true;
}

void MainWindow::export_artifact_dialog() {
  if (!placement_ || !graph_) {
    QMessageBox::information(this, "Export artifact", "Tune the model (or load a placement) first.");
    return;
  }
  QString path = QFileDialog::getSaveFileName(this, "Export artifact",
                                              QFileInfo(model_path_).completeBaseName() + ".collage",
                                              "Collage artifact (*.collage)");
  if (path.isEmpty()) return;
  QString error;
  QApplication::setOverrideCursor(Qt::WaitCursor);  // compiles, traces and verifies: seconds on big models
  bool ok = save_artifact(path, &error);
  QApplication::restoreOverrideCursor();
  if (!ok) notify(this, QMessageBox::Critical, "Export artifact", error);
}

bool MainWindow::save_artifact(const QString& path, QString* error) {
  if (!placement_ || !graph_) {
    if (error) *error = "no placement to export";
    return false;
  }
  try {
    ExportReport r =
        export_artifact(*graph_, *placement_, all_backends(),
                        QFileInfo(model_path_).completeBaseName().toStdString(), path.toStdString());
    if (!r.mismatch.empty())
      throw Error(ErrorKind::Internal,
                  "the artifact's outputs disagree with the in-process run: " + r.mismatch);
    log(QString("artifact written to %1: %2 MiB, arena %3 MiB (%4 MiB without reuse), outputs %5 the "
                "in-process run")
            .arg(path)
            .arg(static_cast<double>(r.file_bytes) / (1 << 20), 0, 'f', 2)
            .arg(static_cast<double>(r.arena_bytes) / (1 << 20), 0, 'f', 2)
            .arg(static_cast<double>(r.unplanned_bytes) / (1 << 20), 0, 'f', 2)
            .arg(r.bitwise_equal ? "bitwise equal to" : "within tolerance of"));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    log(QString("artifact export failed: ") + e.what());
    return false;
  }
}

std::vector<NodeId> MainWindow::find_all(const QString& text) {
  std::vector<NodeId> hits = view_->find(text);
  view_->highlight(hits);
  return hits;
}

void MainWindow::load_placement(const QString& path) {
  if (!graph_) return;
  try {
    placement_ = workflow::read_placement(path.toStdString(), *graph_);
    pins_ = placement_->pins;  // pins persist with the placement
    view_->set_placement(&*placement_);
    log("placement loaded from " + path);
  } catch (const std::exception& e) {
    notify(this, QMessageBox::Critical, "Cannot load placement", e.what());
  }
}

int MainWindow::node_id(const std::string& name) const {
  if (graph_)
    for (NodeId n = 0; n < graph_->num_nodes(); ++n)
      if (graph_->node(n).name == name) return n;
  return -1;
}

void MainWindow::set_pin(int node, const QString& backend) {
  pins_.pinned[node] = backend.toStdString();
  pins_.forbidden.erase(node);
  log(QString("pin node %1 to %2").arg(node).arg(backend));
}

void MainWindow::set_forbid(int node, const QString& backend) {
  pins_.forbidden[node].insert(backend.toStdString());
  log(QString("forbid %2 on node %1").arg(node).arg(backend));
}

void MainWindow::clear_pins(int node) {
  pins_.pinned.erase(node);
  pins_.forbidden.erase(node);
  log(QString("pins cleared on node %1").arg(node));
}

void MainWindow::node_menu(int node, QPoint global_pos) {
  if (!graph_) return;
  // The menu acts on the selection when the clicked node is part of it (Ctrl+click selects several).
  std::vector<NodeId> nodes = view_->selected_nodes();
  if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes = {node};
  QMenu menu(this);
  menu.addSection(nodes.size() == 1 ? QString::fromStdString(graph_->node(node).describe())
                                    : QString("%1 selected nodes").arg(nodes.size()));
  QMenu* run_on = menu.addMenu("Run on");
  QMenu* pin = menu.addMenu("Pin to");
  QMenu* forbid = menu.addMenu("Forbid");
  for (const BackendSpec* b : all_backends()) {
    QString name = QString::fromStdString(b->name);
    // "Run on" reassigns at once: pin, then re-search (fast with a warm cost DB).
    run_on->addAction(name, this, [this, nodes, name] {
      for (NodeId n : nodes) set_pin(n, name);
      start_tune();
    });
    pin->addAction(name, this, [this, nodes, name] {
      for (NodeId n : nodes) set_pin(n, name);
    });
    forbid->addAction(name, this, [this, nodes, name] {
      for (NodeId n : nodes) set_forbid(n, name);
    });
  }
  menu.addAction("Clear pins", this, [this, nodes] {
    for (NodeId n : nodes) clear_pins(n);
  });
  menu.addSeparator();
  menu.addAction("Re-search with pins", this, &MainWindow::start_tune);
  menu.exec(global_pos);
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
  QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (!urls.isEmpty() && urls[0].isLocalFile()) {
    QString path = urls[0].toLocalFile();
    if (path.endsWith(".json"))
      load_placement(path);
    else
      open_model(path);
  }
}

void MainWindow::screenshot_when_ready(const QString& path, bool after_tune, bool after_refine) {
  screenshot_path_ = path;
  screenshot_after_tune_ = after_tune || after_refine;
  screenshot_after_refine_ = after_refine;
}

void MainWindow::maybe_screenshot(const QString& failure) {
  if (screenshot_path_.isEmpty()) return;
  // Batch mode: the picture is still saved, but a failure is the exit status (2), as in the CLI.
  if (!failure.isEmpty()) std::fprintf(stderr, "error: %s\n", failure.toStdString().c_str());
  QString path = screenshot_path_;
  screenshot_path_.clear();
  view_->fit();  // the whole graph, coloured by the final placement
  QTimer::singleShot(200, this, [this, path, failed = !failure.isEmpty()] {  // let the last repaint land
    bool ok = grab().save(path, "PNG");
    std::fprintf(stderr, "%s %s\n", ok ? "screenshot saved to" : "cannot save screenshot to",
                 path.toStdString().c_str());
    QApplication::exit(ok && !failed ? 0 : 2);
  });
}

}  // namespace collage
