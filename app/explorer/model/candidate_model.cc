#include "app/explorer/model/candidate_model.h"

#include <limits>

#include "app/explorer/model/backend_colors.h"

namespace collage {

CandidateModel::CandidateModel(QObject* parent) : QAbstractTableModel(parent) {}

void CandidateModel::clear() { set_pending({}); }

void CandidateModel::set_pending(const std::vector<Candidate>& candidates) {
  beginResetModel();
  rows_.clear();
  row_of_.clear();
  rows_.reserve(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    rows_.push_back(Row{candidates[i], CandidateStatus::Pending, 0, 0, QString()});
    row_of_.insert(i, static_cast<int>(i));
  }
  endResetModel();
}

void CandidateModel::apply(Row& row, const MeasuredCandidate& result) {
  row.status = result.cost.status == CostStatus::NotMeasured ? CandidateStatus::NotMeasured
               : !result.cost.valid()                        ? CandidateStatus::Invalid
               : result.from_cache                           ? CandidateStatus::Cached
                                                             : CandidateStatus::Measured;
  row.median_ms = result.cost.median_ms;
  row.samples = result.cost.samples;
  row.reason = QString::fromStdString(result.cost.invalid_reason);
  row.remeasured = result.remeasured;
}

void CandidateModel::set_result(size_t id, const MeasuredCandidate& result) {
  int row = row_of(id);
  if (row < 0) return;
  apply(rows_[static_cast<size_t>(row)], result);
  emit dataChanged(index(row, 0), index(row, kColumns - 1));
}

void CandidateModel::set_all(const std::vector<Candidate>& candidates,
                             const std::vector<MeasuredCandidate>& results) {
  beginResetModel();
  rows_.clear();
  row_of_.clear();
  for (size_t i = 0; i < candidates.size(); ++i) {
    rows_.push_back(Row{candidates[i], CandidateStatus::Pending, 0, 0, QString()});
    if (i < results.size()) apply(rows_.back(), results[i]);
    row_of_.insert(i, static_cast<int>(i));
  }
  endResetModel();
}

int CandidateModel::row_of(size_t id) const { return row_of_.value(id, -1); }

int CandidateModel::count(CandidateStatus status) const {
  int n = 0;
  for (int r = 0; r < rowCount(); ++r)
    n += data(index(r, kStatus), StatusRole).value<CandidateStatus>() == status;
  return n;
}

bool CandidateModel::covers(int row, int node) const {
  return row >= 0 && row < rowCount() && node >= 0 &&
         rows_[static_cast<size_t>(row)].candidate.nodes.contains(static_cast<size_t>(node));
}

QString CandidateModel::status_name(CandidateStatus status) {
  switch (status) {
    case CandidateStatus::Pending:
      return "pending";
    case CandidateStatus::Measured:
      return "measured";
    case CandidateStatus::Cached:
      return "cached";
    case CandidateStatus::Invalid:
      return "invalid";
    case CandidateStatus::NotMeasured:
      return "not measured";
  }
  return {};
}

int CandidateModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int CandidateModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant CandidateModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  const bool known = r.status == CandidateStatus::Measured || r.status == CandidateStatus::Cached;
  switch (role) {
    case CandidateIdRole:
      return static_cast<qulonglong>(index.row());  // rows stay in candidate order
    case StatusRole:
      return QVariant::fromValue(r.status);
    case CostRole:
      return known ? QVariant(r.median_ms) : QVariant();
    case SamplesRole:
      return known ? QVariant(r.samples) : QVariant();
    case NodeCountRole:
      return static_cast<int>(r.candidate.nodes.popcount());
    default:
      break;
  }
  const int column = index.column();
  if (role == Qt::DisplayRole || role == SortRole) {
    switch (column) {
      case kBackend:
        return QString::fromStdString(r.candidate.backend);
      case kKernel:
        return QString::fromStdString(r.candidate.label);
      case kMedian:
        if (role == SortRole) return known ? r.median_ms : std::numeric_limits<double>::infinity();
        return known ? QVariant(r.median_ms) : QVariant();
      case kStatus:
        if (r.status == CandidateStatus::Invalid) return "invalid: " + r.reason;
        return r.remeasured ? "measured again (close contest)" : status_name(r.status);
      case kNodes:
        return static_cast<int>(r.candidate.nodes.popcount());
      case kSamples:
        if (role == SortRole) return known ? r.samples : -1;
        return known ? QVariant(r.samples) : QVariant();
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole && column == kKernel) return QString::fromStdString(r.candidate.label);
  if (role == Qt::BackgroundRole && column == kBackend)
    return backend_color(QString::fromStdString(r.candidate.backend)).lighter(150);
  return {};
}

QVariant CandidateModel::headerData(int section, Qt::Orientation orientation, int role) const {
  static const char* const kNames[kColumns] = {"backend", "kernel", "median ms",
                                               "status",  "nodes",  "samples"};
  if (orientation == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < kColumns)
    return kNames[section];
  return QAbstractTableModel::headerData(section, orientation, role);
}

CandidateFilter::CandidateFilter(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(CandidateModel::SortRole);
  setDynamicSortFilter(true);
}

void CandidateFilter::set_text(const QString& text) {
  text_ = text;
  node_ = -1;
  invalidateFilter();
}

void CandidateFilter::set_node(int node) {
  node_ = node;
  invalidateFilter();
}

bool CandidateFilter::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  auto* model = qobject_cast<const CandidateModel*>(sourceModel());
  if (!model) return true;
  if (node_ >= 0) return model->covers(source_row, node_);
  if (text_.isEmpty()) return true;
  for (int column : {CandidateModel::kBackend, CandidateModel::kKernel, CandidateModel::kStatus})
    if (model->index(source_row, column, source_parent)
            .data()
            .toString()
            .contains(text_, Qt::CaseInsensitive))
      return true;
  return false;
}

}  // namespace collage
