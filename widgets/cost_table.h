// The "Candidate kernels" panel: a filter box over a table of every candidate
// kernel. While measuring it shows each candidate as pending and fills in its
// cost as it lands (measured, from the cost DB, or invalid with the reason).
#pragma once

#include <QWidget>
#include <vector>

#include "core/candidates.h"
#include "core/measurer.h"

class QLineEdit;
class QTableWidget;

namespace collage {

class CostTable : public QWidget {
  Q_OBJECT
 public:
  // Cost and status come right after the name: the dock is narrow and they are what one scans for.
  enum Column { kBackend, kKernel, kMedian, kStatus, kNodes, kSamples, kColumns };

  explicit CostTable(QWidget* parent = nullptr);

  void clear();
  // One row per candidate, in candidate order, status "pending"; sorting is off
  // until finish() so rows stay where set_result() expects them.
  void set_pending(const std::vector<Candidate>& candidates);
  void set_result(size_t index, const MeasuredCandidate& result);
  // Every result at once (replaces the rows), then sorted by cost.
  void finish(const std::vector<Candidate>& candidates, const std::vector<MeasuredCandidate>& results);
  // Shows only the candidates covering `node` (all when node < 0).
  void show_node(const std::vector<Candidate>& candidates, int node);

  QTableWidget* table() const { return table_; }
  QString status_text(size_t index) const;  // the status cell of candidate `index`
  int rows_with_status(const QString& status) const;

 signals:
  void candidate_selected(size_t index);

 private:
  int row_of(size_t index) const;
  void apply_filter(const QString& text);

  QLineEdit* filter_;
  QTableWidget* table_;
};

}  // namespace collage
