// The "Candidate kernels" panel: a filter box over a table view of every
// candidate kernel (CandidateModel through CandidateFilter). While measuring it
// shows each candidate as pending and fills in its cost as it lands.
#pragma once

#include <QWidget>
#include <vector>

#include "app/explorer/model/candidate_model.h"

class QLineEdit;
class QTableView;

namespace collage {

class CostTable : public QWidget {
  Q_OBJECT
 public:
  explicit CostTable(QWidget* parent = nullptr);

  void clear();
  // One row per candidate, in candidate order, status pending; unsorted until finish().
  void set_pending(const std::vector<Candidate>& candidates);
  void set_result(size_t id, const MeasuredCandidate& result) { model_->set_result(id, result); }
  // Every result at once (replaces the rows), then sorted by cost.
  void finish(const std::vector<Candidate>& candidates, const std::vector<MeasuredCandidate>& results);
  // Shows only the candidates covering `node` (all when node < 0); typing in the filter shows all again.
  void show_node(int node);

  CandidateModel* model() const { return model_; }
  CandidateFilter* proxy() const { return proxy_; }
  QTableView* view() const { return view_; }

 signals:
  void candidate_selected(size_t id);

 private:
  QLineEdit* filter_;
  CandidateModel* model_;
  CandidateFilter* proxy_;
  QTableView* view_;
};

}  // namespace collage
