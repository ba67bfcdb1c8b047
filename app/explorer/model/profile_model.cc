#include "app/explorer/model/profile_model.h"

#include "app/explorer/model/backend_colors.h"

namespace collage {

ProfileModel::ProfileModel(QObject* parent) : QAbstractTableModel(parent) {}

void ProfileModel::set_report(const ProfileReport& report) {
  beginResetModel();
  report_ = report;
  endResetModel();
}

void ProfileModel::clear() { set_report(ProfileReport{}); }

int ProfileModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(report_.kernels.size());
}

int ProfileModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant ProfileModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const KernelProfile& k = kernel(index.row());
  if (role == Qt::ToolTipRole && index.column() == kKernel) return QString::fromStdString(k.label);
  switch (role) {
    case StartRole:
      return k.start_ms;
    case InRunRole:
      return k.in_run_ms;
    case IsolatedRole:
      return k.isolated_ms;
    case BackendRole:
      return QString::fromStdString(k.backend);
    case RateRole:
      return k.gflop_per_s();
    case Qt::DecorationRole:
      return index.column() == kBackend ? QVariant(backend_color(QString::fromStdString(k.backend)))
                                        : QVariant();
    case Qt::TextAlignmentRole:
      return index.column() >= kStart ? QVariant(static_cast<int>(Qt::AlignRight | Qt::AlignVCenter))
                                      : QVariant();
    case Qt::DisplayRole:
      break;
    default:
      return {};
  }
  switch (index.column()) {
    case kIndex:
      return index.row() + 1;
    case kKernel:
      return QString::fromStdString(k.label);
    case kBackend:
      return QString::fromStdString(k.backend);
    case kStart:
      return QString::number(k.start_ms, 'f', 3);
    case kInRun:
      return QString::number(k.in_run_ms, 'f', 3);
    case kIsolated:
      return QString::number(k.isolated_ms, 'f', 3);
    case kDelta:
      return QString("%1%2").arg(k.delta_ms() > 0 ? "+" : "").arg(k.delta_ms(), 0, 'f', 3);
    case kShare:
      return report_.e2e_median_ms > 0
                 ? QString("%1%").arg(100 * k.in_run_ms / report_.e2e_median_ms, 0, 'f', 1)
                 : QString();
    case kRate:
      return QString::number(k.gflop_per_s(), 'f', 1);
  }
  return {};
}

QVariant ProfileModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  static const char* names[] = {"#",           "kernel", "backend", "start ms", "in-run ms",
                                "isolated ms", "Δ ms",   "share",   "GFLOP/s"};
  return section >= 0 && section < kColumns ? QString(names[section]) : QVariant();
}

}  // namespace collage
