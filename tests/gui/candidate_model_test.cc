// QtTest, no window: the candidate table model (rows, costs landing, status
// counts from the status role, lookup by candidate id) and its filter proxy.
#include "app/explorer/model/candidate_model.h"

#include <QSignalSpy>
#include <QtTest>

using collage::CandidateFilter;
using collage::CandidateModel;
using collage::CandidateStatus;

namespace {

collage::MeasuredCandidate cost(double ms, bool cached = false) {
  collage::MeasuredCandidate m;
  m.cost.median_ms = ms;
  m.cost.samples = 10;
  m.from_cache = cached;
  return m;
}

collage::MeasuredCandidate invalid(const std::string& reason) {
  collage::MeasuredCandidate m;
  m.cost = collage::Cost::invalid(reason);
  return m;
}

std::vector<collage::Candidate> three() {
  return {{collage::IndexSet(4, {0, 1}), "onednn", "Conv+Relu"},
          {collage::IndexSet(4, {1}), "xnnpack", "Relu"},
          {collage::IndexSet(4, {2, 3}), "native", "Add+Relu"}};
}

}  // namespace

class CandidateModelTest : public QObject {
  Q_OBJECT

 private slots:
  void rows_then_costs_land() {
    CandidateModel model;
    QSignalSpy reset(&model, &CandidateModel::modelReset);
    QSignalSpy changed(&model, &CandidateModel::dataChanged);
    model.set_pending(three());
    QCOMPARE(reset.count(), 1);
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), int{CandidateModel::kColumns});
    QCOMPARE(model.count(CandidateStatus::Pending), 3);
    QVERIFY(!model.index(0, 0).data(CandidateModel::CostRole).isValid());  // unknown until measured
    QCOMPARE(model.index(2, 0).data(CandidateModel::NodeCountRole).toInt(), 2);

    model.set_result(2, cost(1.5));
    model.set_result(0, cost(0.5, true));
    model.set_result(1, invalid("disagrees"));
    model.set_result(7, cost(9));  // no such candidate: ignored
    QCOMPARE(changed.count(), 3);
    QCOMPARE(changed.at(0).at(0).toModelIndex().row(), model.row_of(2));
    QCOMPARE(model.index(model.row_of(2), 0).data(CandidateModel::CostRole).toDouble(), 1.5);
    QCOMPARE(model.index(model.row_of(0), 0).data(CandidateModel::StatusRole).value<CandidateStatus>(),
             CandidateStatus::Cached);
    QCOMPARE(model.count(CandidateStatus::Pending), 0);
    QCOMPARE(model.count(CandidateStatus::Measured), 1);
    QCOMPARE(model.count(CandidateStatus::Cached), 1);
    QCOMPARE(model.count(CandidateStatus::Invalid), 1);
    QVERIFY(!model.index(1, 0).data(CandidateModel::CostRole).isValid());
    QCOMPARE(model.row_of(7), -1);
    QCOMPARE(model.index(1, 0).data(CandidateModel::CandidateIdRole).toULongLong(), qulonglong{1});

    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(model.row_of(0), -1);
  }

  void the_proxy_filters_and_sorts() {
    CandidateModel model;
    CandidateFilter proxy;
    proxy.setSourceModel(&model);
    model.set_all(three(), {cost(2.0), invalid("disagrees"), cost(0.25)});
    QCOMPARE(proxy.rowCount(), 3);
    proxy.set_text("XNNPACK");  // backend, case-insensitive
    QCOMPARE(proxy.rowCount(), 1);
    QCOMPARE(proxy.index(0, 0).data(CandidateModel::CandidateIdRole).toULongLong(), qulonglong{1});
    proxy.set_text("invalid");  // status
    QCOMPARE(proxy.rowCount(), 1);
    proxy.set_text("relu");  // kernel
    QCOMPARE(proxy.rowCount(), 3);
    proxy.set_text("");
    proxy.set_node(1);  // the candidates covering node 1
    QCOMPARE(proxy.rowCount(), 2);
    proxy.set_text("");  // typing shows all again
    QCOMPARE(proxy.node(), -1);
    QCOMPARE(proxy.rowCount(), 3);
    // By cost, the unknown (invalid) last.
    proxy.sort(CandidateModel::kMedian, Qt::AscendingOrder);
    QCOMPARE(proxy.index(0, 0).data(CandidateModel::CandidateIdRole).toULongLong(), qulonglong{2});
    QCOMPARE(proxy.index(1, 0).data(CandidateModel::CandidateIdRole).toULongLong(), qulonglong{0});
    QCOMPARE(proxy.index(2, 0).data(CandidateModel::CandidateIdRole).toULongLong(), qulonglong{1});
    // A cost landing re-sorts the proxy, the source row stays put.
    model.set_result(1, cost(0.1));
    QCOMPARE(proxy.index(0, 0).data(CandidateModel::CandidateIdRole).toULongLong(), qulonglong{1});
    QCOMPARE(model.row_of(1), 1);
  }
};

QTEST_MAIN(CandidateModelTest)
#include "candidate_model_test.moc"
