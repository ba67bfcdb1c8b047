// The changed regions of a PlacementDiff (core/search/placement_diff.h) as a table
// model, one row per region in region order: A's backends -> B's backends, its nodes,
// A ms, B ms, delta ms. It holds a copy of the diff; the graph (may be null) only names
// nodes and must outlive the model or the next set_diff. The placement diff panel
// (widgets/placement_diff_panel.h) shows it.
#pragma once

#include <QAbstractTableModel>

#include "core/search/placement_diff.h"

namespace collage {

class DiffRegionModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kIndex, kFrom, kTo, kNodes, kAms, kBms, kDelta, kColumns };
  enum Role {
    NodeCountRole = Qt::UserRole + 1,  // int
    DeltaRole,                         // double: B ms - A ms
  };
  explicit DiffRegionModel(QObject* parent = nullptr);

  // `graph` (may be null) names the nodes; it must outlive the model or the next set_diff.
  void set_diff(const PlacementDiff& diff, const Graph* graph);
  void clear();
  const PlacementDiff& diff() const { return diff_; }
  const DiffRegion& region(int row) const { return diff_.regions[static_cast<size_t>(row)]; }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  PlacementDiff diff_;
  const Graph* graph_ = nullptr;
};

}  // namespace collage
