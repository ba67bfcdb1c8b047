// QtTest, no window, no widgets (it links only the explorer's model): every item model of
// app/explorer/model under QAbstractItemModelTester, filled with real data from the
// controller — the candidates and costs of a tune of the bundled sample as they land, the
// diff of two real placements, the profile of a real run — and through their resets and
// updates. Also the queue status job's answer for a cost DB that is not a shared one.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <memory>

#include "app/explorer/model/candidate_model.h"
#include "app/explorer/model/diff_region_model.h"
#include "app/explorer/model/explorer_controller.h"
#include "app/explorer/model/profile_model.h"
#include "backends/registry.h"
#include "job_wait.h"

#ifndef COLLAGE_SAMPLE_MODEL
#error "COLLAGE_SAMPLE_MODEL must name the bundled model"
#endif

using collage::CandidateFilter;
using collage::CandidateModel;
using collage::CandidateStatus;
using collage::ExplorerController;
using Mode = QAbstractItemModelTester::FailureReportingMode;

class ExplorerModelTest : public QObject {
  Q_OBJECT

 private:
  // Runs the controller's current job to its end; false (and a failure) when it failed.
  bool job_ends(int ms) {
    QSignalSpy finished(c_.get(), &ExplorerController::job_finished);
    QSignalSpy failed(c_.get(), &ExplorerController::job_failed);
    if (!collage::testing::wait_for_job_end(c_.get(), finished, failed, ms)) return false;
    if (!failed.isEmpty()) qWarning() << failed.at(0).at(0).value<collage::JobFailure>().message;
    return failed.isEmpty();
  }

  QTemporaryDir dir_;
  std::unique_ptr<ExplorerController> c_;
  // Filled live during the tune (initTestCase), as the candidate table is.
  std::unique_ptr<CandidateModel> candidates_;
  std::unique_ptr<CandidateFilter> filter_;
  std::vector<std::unique_ptr<QAbstractItemModelTester>> testers_;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    c_ = std::make_unique<ExplorerController>();
    c_->set_cost_db_path(dir_.filePath("costs.sqlite"));
    c_->set_backends({collage::find_backend("xnnpack")});  // native is added
    QVERIFY(c_->open_model(COLLAGE_SAMPLE_MODEL));
    QVERIFY(job_ends(30000));

    candidates_ = std::make_unique<CandidateModel>();
    filter_ = std::make_unique<CandidateFilter>();
    testers_.push_back(std::make_unique<QAbstractItemModelTester>(candidates_.get(), Mode::QtTest));
    filter_->setSourceModel(candidates_.get());
    filter_->sort(CandidateModel::kMedian);  // sorted while the costs land: the proxy reorders
    testers_.push_back(std::make_unique<QAbstractItemModelTester>(filter_.get(), Mode::QtTest));
    connect(c_.get(), &ExplorerController::candidates_listed, candidates_.get(),
            [this](const collage::CandidateList& list) { candidates_->set_pending(list.candidates); });
    connect(c_.get(), &ExplorerController::cost_measured, candidates_.get(),
            [this](const collage::MeasuredCost& cost) { candidates_->set_result(cost.index, cost.result); });
    QVERIFY(c_->start_tune());
    QVERIFY(job_ends(300000));
    QVERIFY(c_->tuned() && c_->placement());
  }

  // Rows as the tune listed them, each with the status its cost has.
  void the_candidate_model_holds_the_tune() {
    const collage::TuneResult& tuned = *c_->tuned();
    QCOMPARE(static_cast<size_t>(candidates_->rowCount()), tuned.candidates.size());
    QCOMPARE(candidates_->count(CandidateStatus::Pending), 0);
    int measured = 0, cached = 0, invalid = 0;
    for (const collage::MeasuredCandidate& m : tuned.costs) {
      if (!m.cost.valid())
        ++invalid;
      else if (m.from_cache)
        ++cached;
      else
        ++measured;
    }
    QCOMPARE(candidates_->count(CandidateStatus::Measured), measured);
    QCOMPARE(candidates_->count(CandidateStatus::Cached), cached);
    QCOMPARE(candidates_->count(CandidateStatus::Invalid) + candidates_->count(CandidateStatus::NotMeasured),
             invalid);
    QVERIFY(measured > 0);  // a fresh cost DB
    for (size_t i = 0; i < tuned.candidates.size(); ++i) {
      QModelIndex row = candidates_->index(candidates_->row_of(i), CandidateModel::kBackend);
      QCOMPARE(row.data().toString().toStdString(), tuned.candidates[i].backend);
      if (tuned.costs[i].cost.valid())
        QCOMPARE(row.data(CandidateModel::CostRole).toDouble(), tuned.costs[i].cost.median_ms);
    }

    // The window's end of a tune: every row at once (a reset), then clear and again.
    candidates_->set_all(tuned.candidates, tuned.costs);
    QCOMPARE(static_cast<size_t>(candidates_->rowCount()), tuned.candidates.size());
    candidates_->clear();
    QCOMPARE(candidates_->rowCount(), 0);
    QCOMPARE(filter_->rowCount(), 0);
    candidates_->set_all(tuned.candidates, tuned.costs);
  }

  // The proxy over real rows: sorted by cost (unknown last), filtered by text and by node.
  void the_candidate_filter_sorts_and_filters_them() {
    const collage::TuneResult& tuned = *c_->tuned();
    filter_->set_text(QString());
    filter_->sort(CandidateModel::kMedian, Qt::AscendingOrder);
    QCOMPARE(filter_->rowCount(), candidates_->rowCount());
    bool unknown_seen = false;
    double last = -1;
    for (int r = 0; r < filter_->rowCount(); ++r) {
      QVariant cost = filter_->index(r, 0).data(CandidateModel::CostRole);
      if (!cost.isValid()) {
        unknown_seen = true;
        continue;
      }
      QVERIFY2(!unknown_seen, "a known cost after an unknown one");
      QVERIFY(cost.toDouble() >= last);
      last = cost.toDouble();
    }

    filter_->set_text("XNNPACK");  // case-insensitive, the backend column among others
    const auto xnnpack = std::count_if(tuned.candidates.begin(), tuned.candidates.end(),
                                       [](const collage::Candidate& k) { return k.backend == "xnnpack"; });
    QVERIFY(xnnpack > 0);
    QCOMPARE(filter_->rowCount(), static_cast<int>(xnnpack));

    const int conv = c_->node_id("/conv1/Conv");
    QVERIFY(conv >= 0);
    filter_->set_node(conv);
    const auto covering = std::count_if(
        tuned.candidates.begin(), tuned.candidates.end(),
        [conv](const collage::Candidate& k) { return k.nodes.contains(static_cast<size_t>(conv)); });
    QVERIFY(covering > 0);
    QCOMPARE(filter_->rowCount(), static_cast<int>(covering));
    filter_->sort(CandidateModel::kBackend, Qt::DescendingOrder);
    filter_->set_node(-1);  // back to the text filter
    QCOMPARE(filter_->rowCount(), static_cast<int>(xnnpack));
    filter_->set_text(QString());
    QCOMPARE(filter_->rowCount(), candidates_->rowCount());
  }

  // Two real placements: the tuned one, and the one tuned again with its first non-native
  // kernel's backend forbidden on its first node.
  void the_diff_model_holds_a_real_diff() {
    const QString a_path = dir_.filePath("a.json");
    c_->save_placement(a_path);
    const collage::Placement a = *c_->placement();
    auto moved = std::find_if(a.kernels.begin(), a.kernels.end(),
                              [](const collage::PlacedKernel& k) { return k.backend != "native"; });
    QVERIFY2(moved != a.kernels.end(), "the tune placed nothing on xnnpack");
    const int node = moved->nodes.front();
    c_->set_forbid(node, QString::fromStdString(moved->backend));
    QVERIFY(c_->start_tune());  // the costs are in the DB now: a search, no measuring
    QVERIFY(job_ends(120000));

    collage::DiffRegionModel model;
    QAbstractItemModelTester tester(&model, Mode::QtTest);
    collage::PlacementComparison comparison = c_->compare_with_file(a_path);
    const collage::PlacementDiff& diff = comparison.diff;
    QVERIFY(!diff.identical());
    model.set_diff(diff, c_->graph());
    QCOMPARE(static_cast<size_t>(model.rowCount()), diff.regions.size());
    size_t nodes = 0;
    bool has_node = false;
    for (int r = 0; r < model.rowCount(); ++r) {
      const collage::DiffRegion& region = diff.regions[static_cast<size_t>(r)];
      QCOMPARE(model.index(r, 0).data(collage::DiffRegionModel::NodeCountRole).toInt(),
               static_cast<int>(region.nodes.size()));
      QCOMPARE(model.index(r, 0).data(collage::DiffRegionModel::DeltaRole).toDouble(),
               region.b_ms - region.a_ms);
      nodes += region.nodes.size();
      has_node |= std::count(region.nodes.begin(), region.nodes.end(), node) > 0;
      for (int column = 0; column < model.columnCount(); ++column)
        QVERIFY(model.index(r, column).data().isValid());
    }
    QCOMPARE(nodes, diff.changed_nodes);
    QVERIFY(has_node);  // the forbidden node moved

    model.clear();
    QCOMPARE(model.rowCount(), 0);
    model.set_diff(diff, nullptr);  // no graph: the nodes column names none
    QCOMPARE(static_cast<size_t>(model.rowCount()), diff.regions.size());
    const QString b_path = dir_.filePath("b.json");
    c_->save_placement(b_path);
    model.set_diff(c_->compare_with_file(b_path).diff, c_->graph());  // the placement against itself
    QCOMPARE(model.rowCount(), 0);
  }

  // The profile of a real run of the current placement: one row per kernel, in run order.
  void the_profile_model_holds_a_real_profile() {
    collage::ProfileModel model;
    QAbstractItemModelTester tester(&model, Mode::QtTest);
    connect(c_.get(), &ExplorerController::profiled, &model, &collage::ProfileModel::set_report);
    QVERIFY(c_->start_profile());
    QVERIFY(job_ends(120000));
    QVERIFY(c_->profile().has_value());
    const collage::ProfileReport& report = *c_->profile();
    QCOMPARE(static_cast<size_t>(model.rowCount()), c_->placement()->kernels.size());
    QCOMPARE(static_cast<size_t>(model.rowCount()), report.kernels.size());
    for (int r = 0; r < model.rowCount(); ++r) {
      const collage::KernelProfile& k = report.kernels[static_cast<size_t>(r)];
      QCOMPARE(model.index(r, 0).data(collage::ProfileModel::BackendRole).toString().toStdString(),
               k.backend);
      QCOMPARE(model.index(r, 0).data(collage::ProfileModel::InRunRole).toDouble(), k.in_run_ms);
      QCOMPARE(model.index(r, 0).data(collage::ProfileModel::StartRole).toDouble(), k.start_ms);
      QCOMPARE(model.index(r, 0).data(collage::ProfileModel::RateRole).toDouble(), k.gflop_per_s());
      QCOMPARE(model.index(r, collage::ProfileModel::kRate).data().toString(),
               QString::number(k.gflop_per_s(), 'f', 1));
    }
    QVERIFY(report.flops > 0);  // the sample's products and convolutions
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    model.set_report(report);
    QCOMPARE(static_cast<size_t>(model.rowCount()), report.kernels.size());
  }

  // Workers serve a shared PostgreSQL DB: an SQLite file is an answer with the reason.
  void the_queue_status_of_a_file_db_says_it_is_not_shared() {
    QSignalSpy answered(c_.get(), &ExplorerController::queue_status);
    QVERIFY(c_->start_queue_status());
    QVERIFY(!c_->start_queue_status());  // the first answer is still out
    QVERIFY(answered.wait(30000));
    QCOMPARE(answered.count(), 1);
    auto status = answered.at(0).at(0).value<collage::QueueStatus>();
    QCOMPARE(status.location, dir_.filePath("costs.sqlite"));
    QVERIFY2(status.error.contains("not a shared cost DB"), qPrintable(status.error));
    QVERIFY(status.workers.empty());
    QCOMPARE(collage::queue_status_text(status), status.error);
    QVERIFY(c_->start_queue_status());  // answered: a new query may start
    QVERIFY(answered.wait(30000));

    // Beside the one-at-a-time jobs: accepted while one runs.
    QSignalSpy finished(c_.get(), &ExplorerController::job_finished);
    QSignalSpy failed(c_.get(), &ExplorerController::job_failed);
    QVERIFY(c_->start_profile());
    QVERIFY(c_->start_queue_status());
    QVERIFY(c_->busy());
    QVERIFY(answered.wait(30000));
    QCOMPARE(answered.count(), 3);
    QVERIFY(collage::testing::wait_for_job_end(c_.get(), finished, failed, 120000));
    QCOMPARE(failed.count(), 0);
  }

  void cleanupTestCase() {
    testers_.clear();
    filter_.reset();
    candidates_.reset();
    c_.reset();  // before dir_ goes: it may hold the cost DB open
  }
};

QTEST_MAIN(ExplorerModelTest)
#include "explorer_model_test.moc"
