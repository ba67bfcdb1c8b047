// The candidate kernels of a tune as a table model: one row per candidate, in
// candidate order, each pending until its cost lands (measured, from the cost
// DB, or invalid with the reason). Status and cost are roles with typed values
// (CandidateStatus, double), not display text; CandidateFilter sorts and filters
// it for the view (the filter box, the candidates covering one node). Part of the
// explorer's model (no widgets); the candidate table (widgets/cost_table.h) shows it.
#pragma once

#include <QAbstractTableModel>
#include <QHash>
#include <QSortFilterProxyModel>
#include <vector>

#include "core/tuning/candidates.h"
#include "core/tuning/measurer.h"

namespace collage {

// NotMeasured: the cost DB has no cost for it (a placement was loaded, nothing measured).
enum class CandidateStatus { Pending, Measured, Cached, Invalid, NotMeasured };

class CandidateModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // Cost and status come right after the name: the dock is narrow and they are what one scans for.
  enum Column { kBackend, kKernel, kMedian, kStatus, kNodes, kSamples, kColumns };
  enum Role {
    CandidateIdRole = Qt::UserRole + 1,  // qulonglong: the index into the tune's candidates
    StatusRole,                          // int: CandidateStatus
    CostRole,                            // double: median ms; invalid QVariant until known
    SamplesRole,                         // int; invalid QVariant until known
    NodeCountRole,                       // int
    SortRole,                            // per column: a number or text; unknown costs sort last
  };

  explicit CandidateModel(QObject* parent = nullptr);

  void clear();
  // One row per candidate, status pending.
  void set_pending(const std::vector<Candidate>& candidates);
  void set_result(size_t id, const MeasuredCandidate& result);
  // Every row at once: the candidates and their results, aligned.
  void set_all(const std::vector<Candidate>& candidates, const std::vector<MeasuredCandidate>& results);

  int row_of(size_t id) const;              // -1 if absent
  int count(CandidateStatus status) const;  // rows whose StatusRole is `status`
  bool covers(int row, int node) const;
  // "pending", "measured", "cached", "invalid", "not measured"
  static QString status_name(CandidateStatus status);

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    Candidate candidate;
    CandidateStatus status = CandidateStatus::Pending;
    double median_ms = 0;
    int samples = 0;
    QString reason;           // when invalid
    bool remeasured = false;  // a close contest's member, measured again side by side
  };
  static void apply(Row& row, const MeasuredCandidate& result);
  std::vector<Row> rows_;
  QHash<qulonglong, int> row_of_;  // candidate id -> row
};

// Filter box text (backend, kernel or status, case-insensitive) or one node's candidates.
class CandidateFilter : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit CandidateFilter(QObject* parent = nullptr);
  void set_text(const QString& text);  // also clears the node filter
  void set_node(int node);             // only candidates covering `node`; < 0: all
  int node() const { return node_; }

 protected:
  bool filterAcceptsRow(int source_row, const QModelIndex& source_parent) const override;

 private:
  QString text_;
  int node_ = -1;
};

}  // namespace collage

Q_DECLARE_METATYPE(collage::CandidateStatus)
