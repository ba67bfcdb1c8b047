#include "app/explorer/model/diff_region_model.h"

#include "app/explorer/model/backend_colors.h"

namespace collage {

DiffRegionModel::DiffRegionModel(QObject* parent) : QAbstractTableModel(parent) {}

void DiffRegionModel::set_diff(const PlacementDiff& diff, const Graph* graph) {
  beginResetModel();
  diff_ = diff;
  graph_ = graph;
  endResetModel();
}

void DiffRegionModel::clear() { set_diff(PlacementDiff{}, nullptr); }

int DiffRegionModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(diff_.regions.size());
}

int DiffRegionModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant DiffRegionModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const DiffRegion& r = region(index.row());
  if (role == NodeCountRole) return static_cast<int>(r.nodes.size());
  if (role == DeltaRole) return r.delta_ms();
  if (role == Qt::TextAlignmentRole && index.column() >= kAms)
    return static_cast<int>(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::DecorationRole && (index.column() == kFrom || index.column() == kTo)) {
    const auto& kernels = index.column() == kFrom ? r.a : r.b;
    if (!kernels.empty()) return backend_color(QString::fromStdString(kernels.front().backend));
  }
  if (role == Qt::ToolTipRole && (index.column() == kFrom || index.column() == kTo))
    return data(index, Qt::DisplayRole);  // the column may be too narrow for it
  if (role == Qt::ToolTipRole && index.column() == kNodes && graph_) {
    QStringList names;
    for (NodeId n : r.nodes) names << QString::fromStdString(graph_->node(n).name);
    return names.join("\n");
  }
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kIndex:
      return index.row() + 1;
    case kFrom:
      return QString::fromStdString(backend_summary(r.a));
    case kTo:
      return QString::fromStdString(backend_summary(r.b));
    case kNodes: {
      QString text = QString::number(r.nodes.size());
      if (graph_)
        text +=
            QString(": %1%2")
                .arg(QString::fromStdString(graph_->node(r.nodes.front()).name))
                .arg(r.nodes.size() > 1 ? " … " + QString::fromStdString(graph_->node(r.nodes.back()).name)
                                        : QString());
      return text;
    }
    case kAms:
      return QString::number(r.a_ms, 'f', 3);
    case kBms:
      return QString::number(r.b_ms, 'f', 3);
    case kDelta:
      return QString("%1%2").arg(r.delta_ms() > 0 ? "+" : "").arg(r.delta_ms(), 0, 'f', 3);
  }
  return {};
}

QVariant DiffRegionModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  static const char* names[] = {"#", "A", "→ B", "nodes", "A ms", "B ms", "Δ ms"};
  return section >= 0 && section < kColumns ? QString(names[section]) : QVariant();
}

}  // namespace collage
