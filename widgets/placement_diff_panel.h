// The "Placement diff" panel: a summary line over a table of the changed regions of a
// PlacementDiff (core/search/placement_diff.h), one row per region in region order:
// A's backends -> B's backends, its nodes, A ms, B ms, delta ms. DiffRegionModel holds
// a copy of the diff; the panel reports the selected row, the caller highlights nodes.
#pragma once

#include <QAbstractTableModel>
#include <QWidget>

#include "core/search/placement_diff.h"

class QLabel;
class QTableView;

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

class PlacementDiffPanel : public QWidget {
  Q_OBJECT
 public:
  explicit PlacementDiffPanel(QWidget* parent = nullptr);

  // `a_name` / `b_name` label the two sides ("op-level", a file name).
  void set_diff(const PlacementDiff& diff, const Graph* graph, const QString& a_name, const QString& b_name);
  void clear();

  DiffRegionModel* model() const { return model_; }
  QTableView* view() const { return view_; }
  QString summary() const;

 signals:
  void region_selected(int row);

 private:
  QLabel* summary_;
  DiffRegionModel* model_;
  QTableView* view_;
};

}  // namespace collage
