// QtTest (offscreen): the explorer opens the bundled model, lays out and draws
// every node, reports a broken file instead of crashing, and tunes into a
// coloured placement.
#include <QSignalSpy>
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "app/explorer/main_window.h"
#include "widgets/graph_view.h"

#ifndef COLLAGE_SAMPLE_MODEL
#error "COLLAGE_SAMPLE_MODEL must name the bundled model"
#endif

class ExplorerTest : public QObject {
  Q_OBJECT

 private slots:
  void opens_and_draws_the_bundled_model() {
    collage::MainWindow window;
    QSignalSpy loaded(&window, &collage::MainWindow::model_loaded);
    window.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(loaded.count() > 0 || loaded.wait(30000));  // the worker may emit before we wait
    QCOMPARE(loaded.takeFirst().at(0).toBool(), true);
    QCoreApplication::processEvents();
    auto* view = window.findChild<collage::GraphView*>();
    QVERIFY(view);
    QCOMPARE(view->node_count(), 52);  // resnet_small: `collage info` reports 52 nodes
  }

  void reports_a_truncated_model() {
    auto path = std::filesystem::temp_directory_path() / "explorer_truncated.onnx";
    std::ofstream(path, std::ios::binary) << "\x08\x07\x12";
    collage::MainWindow window;
    QSignalSpy loaded(&window, &collage::MainWindow::model_loaded);
    window.open_model(QString::fromStdString(path.string()));
    QVERIFY(loaded.count() > 0 || loaded.wait(30000));  // the worker may emit before we wait
    QCOMPARE(loaded.takeFirst().at(0).toBool(), false);
    std::filesystem::remove(path);
  }

  void tunes_into_a_placement() {
    qputenv("COLLAGE_COST_DB", QByteArray((std::filesystem::temp_directory_path() / "explorer_test_costs.sqlite").c_str()));
    collage::MainWindow window;
    QSignalSpy loaded(&window, &collage::MainWindow::model_loaded);
    QSignalSpy tuned(&window, &collage::MainWindow::tune_finished);
    window.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(loaded.count() > 0 || loaded.wait(30000));  // the worker may emit before we wait
    QCoreApplication::processEvents();
    window.start_tune();
    QVERIFY(tuned.count() > 0 || tuned.wait(120000));
    QCOMPARE(tuned.takeFirst().at(0).toBool(), true);
    QCoreApplication::processEvents();
    QVERIFY(window.placement().has_value());

    // Pin the first conv to BLAS and re-search: the placement honours it.
    int conv = window.node_id("/conv1/Conv");
    QVERIFY(conv >= 0);
    window.set_pin(conv, "blas");
    window.start_tune();
    QVERIFY(tuned.count() > 0 || tuned.wait(120000));
    QCOMPARE(tuned.takeFirst().at(0).toBool(), true);
    QCoreApplication::processEvents();
    bool on_blas = false;
    for (const auto& k : window.placement()->kernels)
      if (std::find(k.nodes.begin(), k.nodes.end(), conv) != k.nodes.end()) on_blas = k.backend == "blas";
    QVERIFY(on_blas);
    QCOMPARE(window.placement()->pins.pinned.at(conv), std::string("blas"));

    // An impossible pin explains itself instead of producing a placement.
    int flatten = window.node_id("/Flatten");
    QVERIFY(flatten >= 0);
    window.set_pin(flatten, "xnnpack");
    window.start_tune();
    QVERIFY(tuned.count() > 0 || tuned.wait(120000));
    auto failed = tuned.takeFirst();
    QCOMPARE(failed.at(0).toBool(), false);
    QVERIFY(failed.at(1).toString().contains("pinned to 'xnnpack'"));
  }
};

QTEST_MAIN(ExplorerTest)
#include "explorer_test.moc"
