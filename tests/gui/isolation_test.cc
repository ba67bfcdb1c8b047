// QtTest, no window: the explorer's Tune with the test-only faulty backend. Its
// kernels crash, abort and hang on chosen shapes inside the measure workers; the
// explorer process lives on, the tune finishes with a verified placement, and the
// candidates carry the reasons, which the log repeats.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <filesystem>
#include <fstream>

#include "app/explorer/model/explorer_controller.h"
#include "backends/registry.h"
#include "core/tuning/measure_worker.h"
#include "job_wait.h"
#include "tests/faulty/faulty_backend.h"
#include "tests/faulty/faulty_model.h"

#ifndef COLLAGE_FAULTY_CLI
#error "COLLAGE_FAULTY_CLI must point at collage_faulty_cli"
#endif

namespace fs = std::filesystem;

class IsolationTest : public QObject {
  Q_OBJECT

 private slots:
  void the_explorer_survives_every_fault() {
    QTemporaryDir tmp;  // the model and the cost DB, removed at the end, pass or fail
    QVERIFY(tmp.isValid());
    const fs::path dir = tmp.path().toStdString();
    std::string model = (dir / "faulty.onnx").string();
    std::ofstream(model, std::ios::binary) << collage::testing::faulty_model(false).bytes();

    collage::ExplorerController c;
    c.set_cost_db_path(QString::fromStdString((dir / "costs.sqlite").string()));
    c.set_backends({collage::find_backend("faulty")});  // native is added
    QSignalSpy finished(&c, &collage::ExplorerController::job_finished);
    QSignalSpy failed(&c, &collage::ExplorerController::job_failed);
    QVERIFY(c.open_model(QString::fromStdString(model)));
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    QCOMPARE(failed.count(), 0);
    finished.clear();

    QVERIFY(c.start_tune());
    // The hanging kernel waits out its limit (10 s + 50x its native time).
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 120000));
    QCOMPARE(failed.count(), 0);
    auto report = finished.takeFirst().at(0).value<collage::JobReport>();
    QVERIFY(report.mismatch.isEmpty());
    QString log = report.log.join("\n");

    const collage::Graph& g = *c.graph();
    int lost = 0;
    for (size_t i = 0; i < c.tuned()->candidates.size(); ++i) {
      const collage::Candidate& cand = c.tuned()->candidates[i];
      const collage::Cost& cost = c.tuned()->costs[i].cost;
      if (cand.backend != "faulty") {
        QVERIFY2(cost.valid(), cost.invalid_reason.c_str());
        continue;
      }
      int64_t dim = g.value(g.node(collage::node_ids(cand.nodes).at(0)).inputs.at(0)).shape.at(0);
      std::string want = collage::testing::kFaultOfDim.at(dim);
      if (dim == 8) want = "timed out after 10 s";  // the explorer's default limit
      QCOMPARE(QString::fromStdString(cost.invalid_reason), QString::fromStdString(want));
      if (!want.empty()) {
        ++lost;
        QVERIFY2(log.contains(QString::fromStdString(want)), qPrintable(log));
      }
    }
    QCOMPARE(lost, 3);
    // No placed kernel is a faulty one on a fault: the verified run above was in this process.
    for (const auto& k : c.placement()->kernels)
      if (k.backend == "faulty")
        QCOMPARE(g.value(g.node(k.nodes.at(0)).inputs.at(0)).shape.at(0), int64_t{1});
  }
};

int main(int argc, char** argv) {
  collage::add_backend_for_tests(&collage::testing::faulty_backend());
  collage::set_default_worker_command({COLLAGE_FAULTY_CLI, collage::kMeasureWorkerFlag});
  QCoreApplication app(argc, argv);
  IsolationTest test;
  return QTest::qExec(&test, argc, argv);
}

#include "isolation_test.moc"
