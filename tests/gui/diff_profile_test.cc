// QtTest (offscreen): the explorer's placement diff dock (Compare with placement…) lists
// exactly the changed regions and highlights exactly the changed nodes; the Profile job
// fills the timeline's model with one row per kernel of the placement, and its dock opens with
// every column and a few rows in view.
#include <QHeaderView>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "app/explorer/main_window.h"
#include "app/explorer/model/explorer_controller.h"
#include "job_wait.h"
#include "widgets/graph_view.h"
#include "widgets/placement_diff_panel.h"
#include "widgets/profile_view.h"

#ifndef COLLAGE_SAMPLE_MODEL
#error "COLLAGE_SAMPLE_MODEL must name the bundled model"
#endif

namespace {

namespace fs = std::filesystem;
using collage::ExplorerController;
using collage::Job;
using collage::MainWindow;
using collage::NodeId;
using collage::Placement;

// One native kernel per node: every node can run there, so the placement also profiles.
Placement per_node(const collage::Graph& g) {
  Placement p;
  p.model_fingerprint = collage::model_fingerprint(g);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    collage::PlacedKernel k;
    k.nodes = {n};
    k.backend = "native";
    k.label = g.node(n).op_type;
    k.cost = collage::Cost::of_ms(0.01);
    p.kernels.push_back(k);
  }
  return p;
}

QString write_placement(const Placement& p, const collage::Graph& g, const QString& path) {
  std::ofstream(path.toStdString()) << collage::placement_to_json(p, g);
  return path;
}

bool open_sample(MainWindow& window) {
  QSignalSpy finished(window.controller(), &ExplorerController::job_finished);
  QSignalSpy failed(window.controller(), &ExplorerController::job_failed);
  window.open_model(COLLAGE_SAMPLE_MODEL);
  return collage::testing::wait_for_job_end(window.controller(), finished, failed, 30000) && failed.isEmpty();
}

std::vector<NodeId> sorted(std::vector<NodeId> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

class DiffProfileTest : public QObject {
  Q_OBJECT

  // This run's files (the cost DB, placements), removed with the test object.
  QTemporaryDir tmp_;
  QString tmp(const char* name) const { return tmp_.filePath(name); }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    qputenv("COLLAGE_COST_DB", tmp("costs.sqlite").toLocal8Bit());
    // The window restores and saves its layout: this run's own, not the user's.
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, tmp("settings"));
  }

  void diff_dock_lists_the_changed_regions_and_highlights_the_changed_nodes() {
    MainWindow window;
    window.set_dialogs_enabled(false);
    QVERIFY(open_sample(window));
    const collage::Graph& g = *window.controller()->graph();
    QVERIFY(g.num_nodes() > 12);
    Placement a = per_node(g);
    QVERIFY(window.load_placement(write_placement(a, g, tmp("a.json"))));

    // B: nodes 0..2 (Conv, BatchNormalization, Relu) fused into one kernel, node 10 on oneDNN.
    Placement b = a;
    b.kernels.erase(b.kernels.begin() + 1, b.kernels.begin() + 3);
    b.kernels[0].nodes = {0, 1, 2};
    b.kernels[0].label = "Conv+BatchNormalization+Relu";
    for (auto& k : b.kernels)
      if (k.nodes == std::vector<NodeId>{10}) k.backend = "onednn";
    const std::vector<std::vector<NodeId>> expect_regions = {{0, 1, 2}, {10}};

    QVERIFY(!window.diff_panel()->isVisibleTo(&window));
    QVERIFY(window.compare_with_placement(write_placement(b, g, tmp("b.json"))));
    QVERIFY(window.diff_panel()->isVisibleTo(&window));
    collage::DiffRegionModel* model = window.diff_panel()->model();
    QCOMPARE(model->rowCount(), 2);
    for (int row = 0; row < 2; ++row)
      QCOMPARE(model->region(row).nodes, expect_regions[static_cast<size_t>(row)]);
    QCOMPARE(model->region(0).a.size(), size_t{3});
    QCOMPARE(model->region(0).b.size(), size_t{1});
    QCOMPARE(model->data(model->index(1, collage::DiffRegionModel::kTo)).toString(), QString("onednn"));
    // Opening the diff highlights every changed node, and nothing else.
    QCOMPARE(sorted(window.graph_view()->selected_nodes()), (std::vector<NodeId>{0, 1, 2, 10}));
    // Selecting a row highlights that region.
    window.diff_panel()->view()->selectRow(1);
    QCOMPARE(window.graph_view()->selected_nodes(), (std::vector<NodeId>{10}));
    window.diff_panel()->view()->selectRow(0);
    QCOMPARE(sorted(window.graph_view()->selected_nodes()), (std::vector<NodeId>{0, 1, 2}));

    // The same placement: no region, nothing highlighted.
    QVERIFY(window.compare_with_placement(write_placement(a, g, tmp("a.json"))));
    QCOMPARE(model->rowCount(), 0);
    QVERIFY(window.diff_panel()->summary().contains("identical"));
    QVERIFY(window.graph_view()->selected_nodes().empty());

    // Another model's placement is refused; the dock keeps what it showed.
    Placement other = a;
    other.model_fingerprint = "0123456789abcdef";
    QVERIFY(!window.compare_with_placement(write_placement(other, g, tmp("other.json"))));
    QCOMPARE(model->rowCount(), 0);
    // No refine has run: nothing to compare there.
    QVERIFY(!window.controller()->op_level_placement());
    QVERIFY(!window.compare_op_level_with_refined());
    for (const char* name : {"a.json", "b.json", "other.json"}) fs::remove(tmp(name).toStdString());
  }

  void profile_job_fills_the_timeline_with_one_row_per_kernel() {
    MainWindow window;
    window.set_dialogs_enabled(false);
    window.resize(1600, 1000);  // a laptop's screen
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ExplorerController* c = window.controller();
    QVERIFY(open_sample(window));
    QSignalSpy finished(c, &ExplorerController::job_finished);
    QSignalSpy failed(c, &ExplorerController::job_failed);
    QSignalSpy profiled(c, &ExplorerController::profiled);

    QVERIFY(!window.profile_panel()->isVisibleTo(&window));
    QVERIFY(!c->start_profile());  // no placement yet: refused with the reason
    QCOMPARE(failed.count(), 1);
    QCOMPARE(failed.takeFirst().at(0).value<collage::JobFailure>().job, Job::Profile);

    const collage::Graph& g = *c->graph();
    Placement p = per_node(g);
    // Fuse a few kernels so rows are kernels, not nodes.
    p.kernels.erase(p.kernels.begin() + 1, p.kernels.begin() + 3);
    p.kernels[0].nodes = {0, 1, 2};
    QVERIFY(window.load_placement(write_placement(p, g, tmp("p.json"))));
    // Loading reads the candidates' costs from the cost DB as a job of its own: one job at a time.
    QVERIFY(collage::testing::wait_for_job_end(c, finished, failed, 60000));
    QCOMPARE(finished.takeFirst().at(0).value<collage::JobReport>().job, Job::PlacementCosts);
    window.start_profile();
    QVERIFY(c->busy());
    QVERIFY(collage::testing::wait_for_job_end(c, finished, failed, 60000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.takeFirst().at(0).value<collage::JobReport>().job, Job::Profile);
    QCOMPARE(profiled.count(), 1);
    QVERIFY(c->profile().has_value());

    collage::ProfileModel* model = window.profile_panel()->model();
    QCOMPARE(model->rowCount(), static_cast<int>(p.kernels.size()));
    QVERIFY(window.profile_panel()->isVisibleTo(&window));  // the dock opened
    // ... with room to read it: every column without scrolling, and rows below the timeline's lanes.
    QTableView* table = window.profile_panel()->view();
    QTRY_COMPARE(table->horizontalScrollBar()->maximum(), 0);
    const int rows_wanted = std::min(4, model->rowCount());
    QVERIFY(rows_wanted > 0 && table->rowHeight(0) > 0);
    QTRY_VERIFY2(table->viewport()->height() >= rows_wanted * table->rowHeight(0),
                 qPrintable(QString("the table has room for %1 rows")
                                .arg(table->viewport()->height() / table->rowHeight(0))));
    collage::ProfileTimeline* timeline = window.profile_panel()->timeline();
    double previous_start = -1;
    for (int row = 0; row < model->rowCount(); ++row) {
      QCOMPARE(model->kernel(row).nodes, p.kernels[static_cast<size_t>(row)].nodes);
      QCOMPARE(model->data(model->index(row, 0), collage::ProfileModel::BackendRole).toString(),
               QString("native"));
      double start = model->data(model->index(row, 0), collage::ProfileModel::StartRole).toDouble();
      QVERIFY(start >= previous_start);  // execution order: bars left to right
      previous_start = start;
      QPoint centre = timeline->bar_rect(row).center().toPoint();
      QVERIFY(timeline->rect().contains(centre));
      QVERIFY(timeline->row_at(centre) >= 0);
      if (timeline->bar_rect(row).width() >= 3) QCOMPARE(timeline->row_at(centre), row);  // its own bar
    }
    // A row selected in the kernel table highlights that kernel's nodes.
    window.profile_panel()->view()->selectRow(0);
    QCOMPARE(sorted(window.graph_view()->selected_nodes()), (std::vector<NodeId>{0, 1, 2}));
    fs::remove(tmp("p.json").toStdString());
  }
};

QTEST_MAIN(DiffProfileTest)
#include "diff_profile_test.moc"
