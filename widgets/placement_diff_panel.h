// The "Placement diff" panel: a summary line over a table of the changed regions of a
// PlacementDiff (core/search/placement_diff.h), one row per region in region order:
// A's backends -> B's backends, its nodes, A ms, B ms, delta ms. The table sits on
// DiffRegionModel (app/explorer/model/diff_region_model.h), which holds a copy of the
// diff; the panel reports the selected row, the caller highlights nodes.
#pragma once

#include <QWidget>

#include "app/explorer/model/diff_region_model.h"

class QLabel;
class QTableView;

namespace collage {

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
