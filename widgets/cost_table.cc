#include "widgets/cost_table.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

namespace collage {

namespace {
const char* const kPlaceholder = "filter: backend, kernel or status";
}

CostTable::CostTable(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  filter_ = new QLineEdit(this);
  filter_->setPlaceholderText(kPlaceholder);
  model_ = new CandidateModel(this);
  proxy_ = new CandidateFilter(this);
  proxy_->setSourceModel(model_);
  view_ = new QTableView(this);
  view_->setModel(proxy_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->verticalHeader()->hide();
  layout->addWidget(filter_);
  layout->addWidget(view_);
  connect(filter_, &QLineEdit::textChanged, proxy_, &CandidateFilter::set_text);
  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    auto rows = view_->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    emit candidate_selected(rows[0].data(CandidateModel::CandidateIdRole).toULongLong());
  });
}

void CostTable::clear() {
  model_->clear();
  proxy_->set_node(-1);
  filter_->setPlaceholderText(kPlaceholder);
}

void CostTable::set_pending(const std::vector<Candidate>& candidates) {
  view_->setSortingEnabled(false);
  proxy_->sort(-1);  // candidate order while costs land
  model_->set_pending(candidates);
}

void CostTable::finish(const std::vector<Candidate>& candidates,
                       const std::vector<MeasuredCandidate>& results) {
  model_->set_all(candidates, results);
  view_->setSortingEnabled(true);
  view_->sortByColumn(CandidateModel::kMedian, Qt::AscendingOrder);
  view_->resizeColumnsToContents();  // once, not per update: per-cell resizing is quadratic in rows
  view_->setColumnWidth(CandidateModel::kKernel,
                        std::min(view_->columnWidth(CandidateModel::kKernel), 170));  // long labels: tooltip
}

void CostTable::show_node(int node) {
  proxy_->set_node(node);
  filter_->setPlaceholderText(node < 0
                                  ? QString(kPlaceholder)
                                  : QString("showing candidates of node %1; type to filter all").arg(node));
}

}  // namespace collage
