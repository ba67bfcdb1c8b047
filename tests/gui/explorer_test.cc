// QtTest (offscreen): the explorer opens the bundled model, draws every node and
// edge, finds nodes, reports a broken file instead of crashing, tunes into a
// coloured placement, honours and explains pins, round-trips placements, stops
// on request, and keeps the event loop responsive while working.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <QDockWidget>
#include <QGraphicsItem>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QScopeGuard>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QtTest>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "app/explorer/main_window.h"
#include "app/explorer/model/backend_colors.h"
#include "app/explorer/model/explorer_controller.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/ir/graph_analysis.h"
#include "core/runtime/artifact.h"
#include "core/tuning/host_lock.h"
#include "job_wait.h"
#include "resources/samples/zoo.h"
#include "widgets/cost_table.h"
#include "widgets/graph_view.h"
#include "widgets/inspector.h"
#include "widgets/placement_diff_panel.h"
#include "widgets/progress_chart.h"

#ifndef COLLAGE_SAMPLE_MODEL
#error "COLLAGE_SAMPLE_MODEL must name the bundled model"
#endif

namespace {

namespace fs = std::filesystem;
using collage::CandidateModel;
using collage::CandidateStatus;
using collage::ExplorerController;
using collage::MainWindow;

bool wait_for(QSignalSpy& spy, int ms) { return spy.count() > 0 || spy.wait(ms); }

// The legend's chip that draws backend toggle `a`.
QToolButton* chip_of(QWidget* legend, QAction* a) {
  for (QToolButton* chip : legend->findChildren<QToolButton*>())
    if (chip->defaultAction() == a) return chip;
  return nullptr;
}

// The end of the controller's next job: finished (true) or failed (false, with its message).
struct JobSpy {
  QSignalSpy finished, failed;
  ExplorerController* controller;
  explicit JobSpy(ExplorerController* c)
      : finished(c, &ExplorerController::job_finished),
        failed(c, &ExplorerController::job_failed),
        controller(c) {}
  bool wait(int ms, QString* message = nullptr) {
    collage::testing::wait_for_job_end(controller, finished, failed, ms);
    if (!finished.isEmpty()) {
      finished.removeFirst();
      return true;
    }
    if (!failed.isEmpty()) {
      auto f = failed.takeFirst().at(0).value<collage::JobFailure>();
      if (message) *message = f.message;
      cancelled = f.cancelled;
      return false;
    }
    timed_out = true;
    return false;
  }
  bool cancelled = false, timed_out = false;
};

int count(const collage::CostTable* table, CandidateStatus status) { return table->model()->count(status); }

collage::Graph import_sample() {
  collage::ImportOptions o;
  o.evaluator = collage::native::node_evaluator();
  return collage::import_onnx_file(COLLAGE_SAMPLE_MODEL, o);
}

// Records the longest gap between 10 ms timer ticks: how long the GUI thread was blocked.
struct GapMeter {
  QTimer timer;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  double longest_ms = 0;
  GapMeter() {
    QObject::connect(&timer, &QTimer::timeout, [this] {
      auto now = std::chrono::steady_clock::now();
      longest_ms = std::max(longest_ms, std::chrono::duration<double, std::milli>(now - last).count());
      last = now;
    });
    timer.start(10);
  }
};

}  // namespace

class ExplorerTest : public QObject {
  Q_OBJECT

  // This run's files (cost DBs, models, placements), removed with the test object.
  QTemporaryDir tmp_;
  fs::path tmp(const char* name) const { return tmp_.filePath(name).toStdString(); }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qputenv("COLLAGE_COST_DB", QByteArray(tmp("costs.sqlite").c_str()));
    // The windows' settings live here, not in the user's: what one test saves, only it reads.
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, tmp_.filePath("settings"));
  }

  void draws_every_node_and_edge_and_finds_nodes() {
    MainWindow window;
    JobSpy job(window.controller());
    window.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(job.wait(30000));
    collage::Graph g = import_sample();
    collage::NodeEdges e = collage::node_edges(g);
    int edges = 0;
    for (const auto& s : e.succs) edges += static_cast<int>(s.size());
    QCOMPARE(window.graph_view()->node_count(), g.num_nodes());
    QCOMPARE(window.graph_view()->edge_count(), edges);
    auto hits = window.find_all("/fc/Gemm");
    QCOMPARE(hits.size(), size_t{1});
    QCOMPARE(g.node(hits[0]).name, std::string("/fc/Gemm"));
    QCOMPARE(window.find_all("BatchNormalization").size(), size_t{15});  // `collage info` counts 15
  }

  void reports_a_truncated_model() {
    auto path = tmp("truncated.onnx");
    std::ofstream(path, std::ios::binary) << "\x08\x07\x12";
    MainWindow window;
    JobSpy job(window.controller());
    window.open_model(QString::fromStdString(path.string()));
    QString message;
    QVERIFY(!job.wait(30000, &message));
    QVERIFY(!job.timed_out);
    QVERIFY(message.contains("not a valid ONNX model"));
    fs::remove(path);
  }

  void tunes_pins_explains_and_round_trips() {
    MainWindow window;
    ExplorerController* c = window.controller();
    JobSpy job(c);
    QSignalSpy progress(c, &ExplorerController::progress);
    window.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(job.wait(30000));
    GapMeter gaps;
    window.start_tune();
    QVERIFY(job.wait(120000));
    qInfo("longest event-loop gap while tuning: %.1f ms", gaps.longest_ms);
    QVERIFY2(gaps.longest_ms < 1000, "the GUI thread blocked while tuning");
    QVERIFY(progress.count() > 0);
    QVERIFY(window.progress_chart()->point_count() > 0);
    // The charts: measuring to the end, the placement's predicted time per backend as a bar.
    const QString title = window.progress_chart()->measure_title();
    QVERIFY2(title.startsWith(QString("Measured %1 kernels in ").arg(c->tuned()->candidates.size())),
             qPrintable(title));
    for (const auto& [backend, share] : collage::time_per_backend(*c->placement())) {
      std::optional<double> bar =
          window.progress_chart()->bar_ms("op-level", QString::fromStdString(backend));
      QVERIFY(bar.has_value());
      QCOMPARE(*bar, share.predicted_ms);
    }
    QVERIFY(!window.progress_chart()->bar_ms("op-level", "no-such-backend").has_value());
    // Every candidate kernel is listed with its outcome; none is left pending.
    collage::CostTable* table = window.cost_table();
    const int rows = table->model()->rowCount();
    QVERIFY(rows > 0);
    QCOMPARE(rows, static_cast<int>(c->tuned()->candidates.size()));
    QCOMPARE(count(table, CandidateStatus::Pending), 0);
    QCOMPARE(count(table, CandidateStatus::Measured) + count(table, CandidateStatus::Cached) +
                 count(table, CandidateStatus::Invalid),
             rows);
    // Colours and outlines follow the placement.
    const auto& placement = *c->placement();
    int fused = 0;
    for (const auto& k : placement.kernels) {
      fused += k.nodes.size() > 1;
      for (collage::NodeId n : k.nodes)
        QCOMPARE(window.graph_view()->node_fill(n),
                 collage::backend_color(QString::fromStdString(k.backend)));
    }
    QCOMPARE(window.graph_view()->group_count(), fused);

    // Export, reload: identical.
    auto saved = tmp("placement.json");
    QVERIFY(window.save_placement(QString::fromStdString(saved.string())));
    auto before = placement.kernels;
    const collage::TuneResult tuned = *c->tuned();
    window.load_placement(QString::fromStdString(saved.string()));
    QCOMPARE(c->placement()->kernels.size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      QCOMPARE(c->placement()->kernels[i].nodes, before[i].nodes);
      QCOMPARE(c->placement()->kernels[i].backend, before[i].backend);
    }
    fs::remove(saved);
    // The candidate table refills from the cost DB the tune filled: one row per candidate,
    // each with the tune's outcome (from the DB now), none "not measured".
    table->clear();
    QVERIFY(job.wait(60000));
    QCOMPARE(table->model()->rowCount(), static_cast<int>(tuned.candidates.size()));
    QCOMPARE(count(table, CandidateStatus::NotMeasured), 0);
    int valid = 0;
    for (const auto& m : tuned.costs) valid += m.cost.valid();
    QCOMPARE(count(table, CandidateStatus::Cached), valid);
    QCOMPARE(count(table, CandidateStatus::Invalid), static_cast<int>(tuned.costs.size()) - valid);

    // Export the compiled artifact, a job off the GUI thread: it loads and reports the model's inputs.
    auto artifact = tmp("explorer.collage");
    QSignalSpy exported(c, &ExplorerController::job_finished);
    window.start_export_artifact(QString::fromStdString(artifact.string()));
    QVERIFY(job.wait(120000));
    QCOMPARE(exported.count(), 1);
    QCOMPARE(exported.first().at(0).value<collage::JobReport>().job, collage::Job::ExportArtifact);
    collage::Artifact reloaded = collage::load_artifact(artifact.string());
    QCOMPARE(reloaded.kernels.size(), c->placement()->kernels.size());
    QCOMPARE(reloaded.info.inputs.size(), c->graph()->inputs.size());
    fs::remove(artifact);

    // Graph-level refinement: generations reach the chart, the result recolours the graph.
    int points = window.progress_chart()->point_count();
    QSignalSpy best(c, &ExplorerController::best_placement);
    window.start_refine();
    QVERIFY(job.wait(120000));
    QVERIFY(window.progress_chart()->point_count() > points);
    if (!best.isEmpty()) {  // the refined bar follows the last best placement
      auto last = best.last().at(0).value<collage::BestPlacement>().placement;
      for (const auto& [backend, share] : collage::time_per_backend(last)) {
        std::optional<double> bar =
            window.progress_chart()->bar_ms("refined", QString::fromStdString(backend));
        QVERIFY(bar.has_value());
        QCOMPARE(*bar, share.predicted_ms);
      }
    }
    for (const auto& k : c->placement()->kernels)
      for (collage::NodeId n : k.nodes)
        QCOMPARE(window.graph_view()->node_fill(n),
                 collage::backend_color(QString::fromStdString(k.backend)));

    // The refine's op-level placement is kept beside its refined one; the diff dock compares them
    // and highlights the nodes whose kernel (nodes or backend) differs, found here node by node.
    QVERIFY(c->op_level_placement().has_value() && c->refined_placement().has_value());
    QVERIFY(window.compare_op_level_with_refined());
    auto kernel_of = [](const collage::Placement& p, collage::NodeId n) {
      for (const auto& k : p.kernels)
        if (std::find(k.nodes.begin(), k.nodes.end(), n) != k.nodes.end()) return k;
      return collage::PlacedKernel{};
    };
    std::vector<collage::NodeId> moved;
    for (collage::NodeId n = 0; n < c->graph()->num_nodes(); ++n) {
      collage::PlacedKernel before = kernel_of(*c->op_level_placement(), n);
      collage::PlacedKernel after = kernel_of(*c->refined_placement(), n);
      if (before.nodes != after.nodes || before.backend != after.backend) moved.push_back(n);
    }
    std::vector<collage::NodeId> highlighted = window.graph_view()->selected_nodes();
    std::sort(highlighted.begin(), highlighted.end());
    QCOMPARE(highlighted, moved);
    QCOMPARE(window.diff_panel()->model()->diff().changed(), moved);

    // Pin the first conv to BLAS and re-search: the placement honours it.
    int conv = c->node_id("/conv1/Conv");
    QVERIFY(conv >= 0);
    c->set_pin(conv, "blas");
    window.start_tune();
    QVERIFY(job.wait(120000));
    bool on_blas = false;
    for (const auto& k : c->placement()->kernels)
      if (std::find(k.nodes.begin(), k.nodes.end(), conv) != k.nodes.end()) on_blas = k.backend == "blas";
    QVERIFY(on_blas);
    QCOMPARE(c->placement()->pins.pinned.at(conv), std::string("blas"));

    // An impossible pin explains itself instead of producing a placement.
    int flatten = c->node_id("/Flatten");
    QVERIFY(flatten >= 0);
    c->set_pin(flatten, "xnnpack");
    window.start_tune();
    QString message;
    QVERIFY(!job.wait(120000, &message));
    QVERIFY(!job.timed_out);
    QVERIFY(message.contains("pinned to 'xnnpack'"));
  }

  void stop_during_refine_keeps_the_best_so_far() {
    // A fresh cost DB, so genome fitness is measured (not replayed) and the search is still running.
    qputenv("COLLAGE_COST_DB", QByteArray(tmp("refine.sqlite").c_str()));
    MainWindow window;
    ExplorerController* c = window.controller();
    JobSpy job(c);
    QSignalSpy progress(c, &ExplorerController::progress);
    window.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(job.wait(30000));
    window.start_tune();
    QVERIFY(job.wait(120000));
    progress.clear();
    window.start_refine();
    auto refine_events = [&] {
      return std::count_if(progress.begin(), progress.end(), [](const QList<QVariant>& e) {
        return e.at(0).value<collage::ProgressEvent>().stage == collage::ProgressEvent::Stage::Refine;
      });
    };
    while (refine_events() == 0 && job.finished.isEmpty() && job.failed.isEmpty())
      QVERIFY(progress.wait(60000));  // generation 1 done
    c->stop();
    QVERIFY(job.wait(60000));  // stopping is not a failure
    // The placement in force is complete, and the graph shows it.
    QVERIFY(c->placement().has_value());
    std::vector<int> covered(static_cast<size_t>(c->graph()->num_nodes()), 0);
    for (const auto& k : c->placement()->kernels)
      for (collage::NodeId n : k.nodes) {
        ++covered[static_cast<size_t>(n)];
        QCOMPARE(window.graph_view()->node_fill(n),
                 collage::backend_color(QString::fromStdString(k.backend)));
      }
    QVERIFY(std::all_of(covered.begin(), covered.end(), [](int n) { return n == 1; }));
    qputenv("COLLAGE_COST_DB", QByteArray(tmp("costs.sqlite").c_str()));
  }

  void stop_cancels_a_cold_tune() {
    qputenv("COLLAGE_COST_DB", QByteArray(tmp("cold.sqlite").c_str()));
    MainWindow window;
    ExplorerController* c = window.controller();
    JobSpy job(c);
    QSignalSpy progress(c, &ExplorerController::progress);
    window.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(job.wait(30000));
    // Another process on the machine is timing (its measurement lock is held here), so
    // the tune waits for it: a stop must not wait as well.
    int busy = ::open(collage::HostMeasureLock::path(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    QVERIFY(busy >= 0 && ::flock(busy, LOCK_EX) == 0);  // an open file of its own: as another process's
    auto let_go = qScopeGuard([busy] { ::close(busy); });
    window.start_tune();
    QVERIFY(wait_for(progress, 30000));  // measuring has begun
    auto t0 = std::chrono::steady_clock::now();
    c->stop();
    QString message;
    QVERIFY(!job.wait(30000, &message));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    qInfo("stop took %.0f ms", ms);
    QVERIFY(!job.timed_out);
    QVERIFY(job.cancelled);
    QVERIFY(message.contains("cancelled"));
    QVERIFY(ms < 1000);
    // The table was filled while measuring: every candidate listed, those not reached still pending.
    collage::CostTable* table = window.cost_table();
    QVERIFY(table->model()->rowCount() > 1);
    QVERIFY(count(table, CandidateStatus::Pending) > 0);
    qputenv("COLLAGE_COST_DB", QByteArray(tmp("costs.sqlite").c_str()));
  }

  void cost_table_shows_pending_then_results() {
    collage::CostTable table;
    collage::Candidate a{collage::IndexSet(3, {0, 1}), "onednn", "Conv+Relu"};
    collage::Candidate b{collage::IndexSet(3, {1}), "native", "Relu"};
    table.set_pending({a, b});
    CandidateModel* model = table.model();
    auto status = [model](size_t id) {
      return model->index(model->row_of(id), 0).data(CandidateModel::StatusRole).value<CandidateStatus>();
    };
    QCOMPARE(model->rowCount(), 2);
    QCOMPARE(count(&table, CandidateStatus::Pending), 2);
    collage::MeasuredCandidate slow, bad;
    slow.cost.median_ms = 2.5;
    slow.cost.samples = 7;
    bad.cost = collage::Cost::invalid("disagrees with the reference");
    table.set_result(1, bad);
    QCOMPARE(status(1), CandidateStatus::Invalid);
    QCOMPARE(model->index(1, CandidateModel::kStatus).data().toString(),
             QString("invalid: disagrees with the reference"));  // the reason is shown
    QCOMPARE(status(0), CandidateStatus::Pending);
    slow.from_cache = true;
    table.set_result(0, slow);
    QCOMPARE(status(0), CandidateStatus::Cached);
    QCOMPARE(model->index(0, 0).data(CandidateModel::CostRole).toDouble(), 2.5);
    // Sorted by cost after finish(): results still found by candidate id.
    slow.from_cache = false;
    table.finish({a, b}, {slow, bad});
    QCOMPARE(status(0), CandidateStatus::Measured);
    QCOMPARE(status(1), CandidateStatus::Invalid);
    QCOMPARE(table.proxy()->index(0, 0).data(CandidateModel::CandidateIdRole).toULongLong(), qulonglong{0});
    table.show_node(0);  // only candidate a covers node 0
    QCOMPARE(table.proxy()->rowCount(), 1);
    table.show_node(-1);
    QCOMPARE(table.proxy()->rowCount(), 2);
  }

  void stays_responsive_while_a_5000_node_graph_is_laid_out() {
    auto path = tmp("encoder_5k.onnx");
    collage::samples::build_sample("encoder_5k").save(path.string());
    MainWindow window;
    window.resize(1400, 900);
    window.show();  // the opening view is chosen for the view's size on screen
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    JobSpy job(window.controller());
    GapMeter gaps;
    auto t0 = std::chrono::steady_clock::now();
    window.open_model(QString::fromStdString(path.string()));
    QVERIFY(job.wait(60000));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    qInfo("%d nodes loaded and laid out in %.2f s; longest event-loop gap %.1f ms",
          window.controller()->graph()->num_nodes(), seconds, gaps.longest_ms);
    QVERIFY(window.controller()->graph()->num_nodes() >= 5000);
    QVERIFY2(gaps.longest_ms < 3000, "the GUI thread blocked while laying out");
    // So many nodes open collapsed (their labels are illegible fitted): the choice of depth runs
    // off the GUI thread too, the expanded graph is never built, and every node is then shown
    // either itself or inside one box.
    collage::GraphView* view = window.graph_view();
    QSignalSpy relaid(view, &collage::GraphView::layout_changed);
    QVERIFY(view->layout_pending());
    QCOMPARE(view->node_count(), 0);
    QVERIFY(relaid.wait(60000));
    qInfo("collapsed: %d boxes, %d nodes; longest event-loop gap %.1f ms", view->scope_box_count(),
          view->node_count(), gaps.longest_ms);
    QVERIFY(view->scope_box_count() > 0);
    QVERIFY(view->opening_depth() >= 1);
    QVERIFY(view->label_px() >= collage::GraphView::kLegibleLabelPx);
    int inside = 0;
    for (int s = 1; s < view->scope_tree()->size(); ++s)
      if (view->scope_item(s)) inside += static_cast<int>(view->scope_tree()->scope(s).nodes.size());
    QCOMPARE(inside + view->node_count(), window.controller()->graph()->num_nodes());
    QVERIFY2(gaps.longest_ms < 3000, "the GUI thread blocked while relaying out");
    fs::remove(path);
  }

  // The backend toggles are the colour legend: at 1600 px (the screenshot's width) every one
  // of them is on screen, none behind a toolbar's overflow button.
  void backend_legend_is_fully_visible_at_1600_px() {
    MainWindow window;
    window.resize(1600, 1000);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* legend = window.findChild<QWidget*>("backend-legend");
    QVERIFY(legend);
    int backends = 0;
    std::vector<QRect> taken;
    for (QAction* a : legend->actions()) {
      if (a->isSeparator() || !a->isCheckable()) continue;
      ++backends;
      QToolButton* chip = chip_of(legend, a);
      QVERIFY2(chip && chip->isVisible(), qPrintable(a->text() + " is hidden"));
      QRect r(chip->mapTo(&window, QPoint(0, 0)), chip->size());
      QVERIFY2(window.rect().contains(r), qPrintable(a->text() + " is clipped"));
      // Its whole name is drawn: the chip is as wide as it asks to be, and overlaps no other.
      QVERIFY2(chip->width() >= chip->sizeHint().width(), qPrintable(a->text() + " is cut short"));
      for (const QRect& other : taken) QVERIFY2(!other.intersects(r), qPrintable(a->text() + " overlaps"));
      taken.push_back(r);
    }
    QCOMPARE(backends, static_cast<int>(collage::all_backends().size()));
    // A backend this CPU cannot run is shown disabled and says why.
    for (QAction* a : legend->actions()) {
      const collage::BackendSpec* b = collage::find_backend(a->text().toStdString());
      if (!b) continue;
      const std::string why = collage::unavailable_reason(*b);
      if (why.empty()) continue;
      QVERIFY(!a->isEnabled() && !a->isChecked());
      QVERIFY2(a->toolTip().contains(QString::fromStdString("unavailable: " + why)),
               qPrintable(a->toolTip()));
    }
  }

  // A backend that takes part only from some thread count on is disabled below it, saying so,
  // and enabled (still checked) once the threads box reaches it.
  void a_backend_of_more_threads_is_disabled_below_them() {
    MainWindow window;
    auto* legend = window.findChild<QWidget*>("backend-legend");
    auto* threads = window.findChild<QSpinBox*>("threads");
    QVERIFY(legend && threads);
    std::vector<std::pair<QAction*, int>> gated;
    for (QAction* a : legend->actions()) {
      const collage::BackendSpec* b = collage::find_backend(a->text().toStdString());
      if (b && b->min_threads > 1 && collage::unavailable_reason(*b).empty())
        gated.emplace_back(a, b->min_threads);
    }
    if (gated.empty()) QSKIP("no available backend takes part only from 2 threads on (ONNX Runtime missing)");
    for (const auto& [a, min_threads] : gated) {
      threads->setValue(min_threads - 1);
      QVERIFY2(!a->isEnabled(), qPrintable(a->text()));
      QVERIFY(a->isChecked());
      QVERIFY2(a->toolTip().contains(QString("takes part only at %1 threads or more").arg(min_threads)),
               qPrintable(a->toolTip()));
      threads->setValue(min_threads);
      QVERIFY2(a->isEnabled(), qPrintable(a->text()));
      QVERIFY(!a->toolTip().contains("threads or more"));
    }
  }

  // The accuracy box: a bad budget is refused and the box keeps the last good one; a budget enables
  // the reduced-precision toggles (checked the first time, as `collage tune --accuracy` selects
  // them) and puts them in the tune's selection; an empty box is fp32 again.
  void the_accuracy_box_lets_reduced_precision_take_part() {
    MainWindow window;
    window.set_dialogs_enabled(false);
    auto* legend = window.findChild<QWidget*>("backend-legend");
    auto* box = window.findChild<QLineEdit*>("accuracy");
    QVERIFY(legend && box);
    std::vector<QAction*> reduced;
    for (QAction* a : legend->actions()) {
      const collage::BackendSpec* b = collage::find_backend(a->text().toStdString());
      if (b && b->precision != collage::Precision::Float32 && collage::unavailable_reason(*b).empty())
        reduced.push_back(a);
    }
    if (reduced.empty()) QSKIP("no reduced-precision backend runs on this CPU");
    auto selected = [&window](QAction* a) {
      const auto& bs = window.controller()->backends();
      return std::any_of(bs.begin(), bs.end(),
                         [a](const collage::BackendSpec* b) { return b->name == a->text().toStdString(); });
    };
    for (QAction* a : reduced) QVERIFY2(!a->isEnabled() && !selected(a), qPrintable(a->text()));

    QVERIFY(!window.set_accuracy("cosin=0.99"));
    QVERIFY(!window.controller()->accuracy().enabled());
    QCOMPARE(box->text(), QString());

    QVERIFY(window.set_accuracy("max-rel=5e-2,cosine=0.999"));
    const std::string spec = collage::parse_accuracy("cosine=0.999,max-rel=5e-2").to_string();
    QCOMPARE(window.controller()->accuracy().to_string(), spec);
    QCOMPARE(box->text(), QString::fromStdString(spec));
    for (QAction* a : reduced) {
      QVERIFY2(a->isEnabled() && a->isChecked() && selected(a), qPrintable(a->text()));
      QVERIFY2(a->toolTip().contains("searched under the accuracy budget"), qPrintable(a->toolTip()));
    }
    reduced.front()->setChecked(false);  // the user's choice stands while a budget holds
    QVERIFY(window.set_accuracy("top1"));
    QVERIFY(!reduced.front()->isChecked() && !selected(reduced.front()));

    QVERIFY(!window.set_accuracy("top1,max-rel=2"));  // out of range: the budget before stays
    QCOMPARE(box->text(), QString("top1"));
    QVERIFY(window.set_accuracy(""));
    QVERIFY(!window.controller()->accuracy().enabled());
    for (QAction* a : reduced) {
      QVERIFY2(!a->isEnabled() && !selected(a), qPrintable(a->text()));
      QVERIFY2(a->toolTip().contains("searched only under an accuracy budget"), qPrintable(a->toolTip()));
    }
  }

  // The budget of the last window closed comes back with the next one, as the thread count does;
  // a remembered one that no longer parses is dropped, saying so, and the window opens in fp32.
  void the_accuracy_budget_is_remembered() {
    const std::string spec = collage::parse_accuracy("cosine=0.999,max-rel=5e-2").to_string();
    {
      MainWindow window;
      window.set_dialogs_enabled(false);
      QVERIFY(window.set_accuracy(QString::fromStdString(spec)));
      QVERIFY(window.close());
    }
    {
      MainWindow window;
      QCOMPARE(window.controller()->accuracy().to_string(), spec);
      QCOMPARE(window.findChild<QLineEdit*>("accuracy")->text(), QString::fromStdString(spec));
    }
    QSettings().setValue("tune/accuracy", "cosine=2");
    {
      MainWindow window;
      QVERIFY(!window.controller()->accuracy().enabled());
      QVERIFY(window.findChild<QPlainTextEdit*>("log")->toPlainText().contains("'cosine=2' is dropped"));
    }
    QSettings().remove("tune/accuracy");
  }

  // Before any search the graph has the room: the Search progress dock appears with the first
  // progress to show (a tune started).
  void the_progress_charts_appear_with_a_search() {
    MainWindow window;
    window.resize(1600, 1000);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    JobSpy job(window.controller());
    window.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(job.wait(30000));
    QVERIFY(!window.progress_dock()->isVisible());
    QVERIFY2(
        window.graph_view()->height() >= window.height() * 0.6,
        qPrintable(QString("graph %1 px of %2").arg(window.graph_view()->height()).arg(window.height())));
    window.start_tune();
    QVERIFY(window.progress_dock()->isVisible());
    QVERIFY(job.wait(120000));
    QVERIFY(window.progress_chart()->point_count() > 0);
  }

  // Selecting a collapsed scope box shows in the inspector its time, its share of the
  // placement, its kernels and backend mix, computed here from the placement by node names.
  void selecting_a_scope_box_shows_where_its_time_goes() {
    MainWindow window;
    window.resize(1600, 1000);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ExplorerController* c = window.controller();
    JobSpy job(c);
    window.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(job.wait(30000));
    window.start_tune();
    QVERIFY(job.wait(120000));
    collage::GraphView* view = window.graph_view();
    QSignalSpy relaid(view, &collage::GraphView::layout_changed);
    view->collapse_to_depth(1);
    QVERIFY(relaid.wait(30000));
    const int layer1 = view->scope_tree()->find("/layer1");
    QVERIFY(layer1 > 0);
    QGraphicsItem* box = view->scope_item(layer1);
    QVERIFY(box);
    box->setSelected(true);
    double want = 0, total = 0;
    std::set<std::string> backends;
    for (const collage::PlacedKernel& k : c->placement()->kernels) {
      total += k.cost.median_ms;
      for (collage::NodeId n : k.nodes)
        if (c->graph()->node(n).name.rfind("/layer1/", 0) == 0) {
          want += k.cost.median_ms / static_cast<double>(k.nodes.size());
          backends.insert(k.backend);
        }
    }
    auto* inspector = window.findChild<collage::Inspector*>();
    QVERIFY(inspector);
    const QString text = inspector->toPlainText();
    QVERIFY2(text.contains("/layer1"), qPrintable(text));
    QVERIFY2(text.contains(QString("%1 ms, %2% of the placement's %3 ms")
                               .arg(want, 0, 'f', 3)
                               .arg(100 * want / total, 0, 'f', 1)
                               .arg(total, 0, 'f', 3)),
             qPrintable(text));
    QVERIFY(text.contains("Backend mix") && text.contains("Costliest kernels"));
    for (const std::string& b : backends) QVERIFY2(text.contains(QString::fromStdString(b)), b.c_str());
    // Selected by name (batch --select /layer2): its box selected, the inspector on it.
    const int layer2 = view->scope_tree()->find("/layer2");
    window.select_scope(layer2);
    QVERIFY(view->scope_item(layer2)->isSelected());
    QVERIFY(inspector->toPlainText().startsWith("/layer2"));
  }
};

QTEST_MAIN(ExplorerTest)
#include "explorer_test.moc"
