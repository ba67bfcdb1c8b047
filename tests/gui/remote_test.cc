// QtTest, offscreen: the explorer's window tunes through the team's measurement
// queue (Measure -> Measure on the team's workers) on a throw-away PostgreSQL server,
// with a real `collage worker` measuring. The candidate table fills as the costs land,
// the worker measured them, and the log says the tune went remote; Show the workers
// (the controller's queue status job) reports the same counts and the worker.
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>

#include "app/explorer/main_window.h"
#include "app/explorer/model/candidate_model.h"
#include "app/explorer/model/explorer_controller.h"
#include "backends/registry.h"
#include "core/tuning/measure_queue.h"
#include "job_wait.h"
#include "tests/unit/child_process.h"
#include "tests/unit/pg_server_fixture.h"
#include "widgets/cost_table.h"

#ifndef COLLAGE_CLI_PATH
#error "COLLAGE_CLI_PATH must point at the collage binary"
#endif

namespace fs = std::filesystem;

class RemoteTest : public QObject {
  Q_OBJECT

 private slots:
  void the_window_tunes_through_the_workers() {
    collage::testing::PgServer& server = collage::testing::PgServer::get();
    if (!server.why_not().empty()) QSKIP(server.why_not().c_str());
    const std::string url = server.create_database();
    QTemporaryDir tmp;  // the worker's log; removed after the worker, pass or fail
    QVERIFY(tmp.isValid());
    const fs::path dir = tmp.path().toStdString();
    collage::testing::Process worker(
        {COLLAGE_CLI_PATH, "worker", "--cost-db", url, "--name", "gui-w", "--threads", "1", "--lease", "10"},
        {}, (dir / "worker.log").string());
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
          for (const collage::WorkerStatus& w : collage::MeasureQueue(url).workers(10))
            if (w.alive) return true;
          return false;
        }(),
        30000);

    collage::MainWindow w;
    w.set_dialogs_enabled(false);
    w.set_cost_db(QString::fromStdString(url), false);
    w.set_remote(true, false);
    collage::ExplorerController* c = w.controller();
    QVERIFY(c->remote());
    c->set_backends({collage::find_backend("native"), collage::find_backend("onednn")});
    QSignalSpy finished(c, &collage::ExplorerController::job_finished);
    QSignalSpy failed(c, &collage::ExplorerController::job_failed);
    QSignalSpy landed(c, &collage::ExplorerController::cost_measured);
    w.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(collage::testing::wait_for_job_end(c, finished, failed, 30000));
    QCOMPARE(failed.count(), 0);
    finished.clear();

    w.start_tune();
    QVERIFY(collage::testing::wait_for_job_end(c, finished, failed, 120000));
    QCOMPARE(failed.count(), 0);
    const size_t candidates = c->tuned()->candidates.size();
    QVERIFY(candidates > 0);
    QCOMPARE(static_cast<size_t>(landed.count()), candidates);  // one row update per candidate, as it landed
    collage::CandidateModel* table = w.cost_table()->model();
    QCOMPARE(table->count(collage::CandidateStatus::Pending), 0);
    QCOMPARE(static_cast<size_t>(table->count(collage::CandidateStatus::Measured)), c->tuned()->measured_now);
    QVERIFY(c->tuned()->measured_now > 0);

    // The worker measured every one of them.
    int64_t done = 0, jobs = 0;
    collage::MeasureQueue queue(url);
    for (const collage::WorkerStatus& s : queue.workers(10)) done += s.jobs_done;
    for (const auto& [state, n] : queue.job_counts()) jobs += n;
    QCOMPARE(static_cast<size_t>(done), c->tuned()->measured_now);
    QCOMPARE(jobs, done);
    QString log = w.findChild<QPlainTextEdit*>()->toPlainText();
    QVERIFY2(log.contains("measured by the team's workers"), qPrintable(log));
    QVERIFY2(!log.contains("locally"), qPrintable(log));

    // Measure -> Show the workers: the controller reads the queue off the GUI thread and
    // answers with the same counts and workers; the window logs them.
    QSignalSpy answered(c, &collage::ExplorerController::queue_status);
    w.show_workers();
    QVERIFY(answered.wait(30000));
    auto status = answered.at(0).at(0).value<collage::QueueStatus>();
    QVERIFY2(status.error.isEmpty(), qPrintable(status.error));
    QCOMPARE(status.done, done);
    QCOMPARE(status.pending + status.running + status.done, jobs);
    auto gui_w = std::find_if(status.workers.begin(), status.workers.end(),
                              [](const collage::WorkerStatus& s) { return s.info.name == "gui-w"; });
    QVERIFY(gui_w != status.workers.end());
    QVERIFY(gui_w->alive);
    QCOMPARE(static_cast<size_t>(gui_w->jobs_done), c->tuned()->measured_now);
    log = w.findChild<QPlainTextEdit*>()->toPlainText();
    QVERIFY2(log.contains(QString("jobs: 0 pending, 0 running, %1 done").arg(done)), qPrintable(log));
    QVERIFY2(log.contains("gui-w (alive)"), qPrintable(log));
    worker.signal(SIGTERM);
    QCOMPARE(worker.wait(), 0);
  }
};

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  RemoteTest test;
  return QTest::qExec(&test, argc, argv);
}

#include "remote_test.moc"
