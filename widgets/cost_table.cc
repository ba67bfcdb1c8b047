#include "widgets/cost_table.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "widgets/backend_colors.h"

namespace collage {

namespace {

QString status_of(const MeasuredCandidate& m) {
  if (!m.cost.valid) return QString::fromStdString("invalid: " + m.cost.reason);
  return m.from_cache ? "cached" : "measured";
}

// A numeric cell that sorts by value; empty (sorts first) when unknown.
QTableWidgetItem* number(double value, bool known) {
  auto* item = new QTableWidgetItem();
  if (known) item->setData(Qt::DisplayRole, value);
  return item;
}

}  // namespace

CostTable::CostTable(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  filter_ = new QLineEdit(this);
  filter_->setPlaceholderText("filter: backend, kernel or status");
  table_ = new QTableWidget(0, kColumns, this);
  table_->setHorizontalHeaderLabels({"backend", "kernel", "median ms", "status", "nodes", "samples"});
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->horizontalHeader()->setStretchLastSection(true);
  layout->addWidget(filter_);
  layout->addWidget(table_);
  connect(filter_, &QLineEdit::textChanged, this, &CostTable::apply_filter);
  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    auto rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty() || !table_->item(rows[0].row(), kBackend)) return;
    emit candidate_selected(table_->item(rows[0].row(), kBackend)->data(Qt::UserRole).toULongLong());
  });
}

void CostTable::clear() {
  table_->setRowCount(0);
  filter_->setPlaceholderText("filter: backend, kernel or status");
}

void CostTable::set_pending(const std::vector<Candidate>& candidates) {
  table_->setSortingEnabled(false);
  table_->setRowCount(static_cast<int>(candidates.size()));
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    int row = static_cast<int>(i);
    auto* backend = new QTableWidgetItem(QString::fromStdString(c.backend));
    backend->setData(Qt::UserRole, static_cast<qulonglong>(i));
    backend->setBackground(backend_color(QString::fromStdString(c.backend)).lighter(150));
    table_->setItem(row, kBackend, backend);
    auto* kernel = new QTableWidgetItem(QString::fromStdString(c.label));
    kernel->setToolTip(kernel->text());
    table_->setItem(row, kKernel, kernel);
    table_->setItem(row, kNodes, number(static_cast<double>(c.nodes.popcount()), true));
    table_->setItem(row, kMedian, number(0, false));
    table_->setItem(row, kSamples, number(0, false));
    table_->setItem(row, kStatus, new QTableWidgetItem("pending"));
  }
  apply_filter(filter_->text());
}

void CostTable::set_result(size_t index, const MeasuredCandidate& result) {
  int row = row_of(index);
  if (row < 0) return;
  table_->setItem(row, kMedian, number(result.cost.median_ms, result.cost.valid));
  table_->setItem(row, kSamples, number(result.cost.samples, result.cost.valid));
  table_->setItem(row, kStatus, new QTableWidgetItem(status_of(result)));
  if (!filter_->text().isEmpty()) apply_filter(filter_->text());
}

void CostTable::finish(const std::vector<Candidate>& candidates,
                       const std::vector<MeasuredCandidate>& results) {
  set_pending(candidates);
  for (size_t i = 0; i < results.size() && i < candidates.size(); ++i) set_result(i, results[i]);
  table_->setSortingEnabled(true);
  table_->sortItems(kMedian);
  table_->resizeColumnsToContents();  // once, not per update: per-cell resizing is quadratic in rows
  table_->setColumnWidth(kKernel, std::min(table_->columnWidth(kKernel), 170));  // long fused labels: tooltip
}

void CostTable::show_node(const std::vector<Candidate>& candidates, int node) {
  if (node < 0) {
    apply_filter(filter_->text());
    return;
  }
  for (int r = 0; r < table_->rowCount(); ++r) {
    size_t index = table_->item(r, kBackend)->data(Qt::UserRole).toULongLong();
    table_->setRowHidden(
        r, index >= candidates.size() || !candidates[index].nodes.contains(static_cast<size_t>(node)));
  }
  filter_->setPlaceholderText(QString("showing candidates of node %1; type to filter all").arg(node));
}

QString CostTable::status_text(size_t index) const {
  int row = row_of(index);
  return row < 0 ? QString() : table_->item(row, kStatus)->text();
}

int CostTable::rows_with_status(const QString& status) const {
  int n = 0;
  for (int r = 0; r < table_->rowCount(); ++r) n += table_->item(r, kStatus)->text().startsWith(status);
  return n;
}

int CostTable::row_of(size_t index) const {
  // Rows are in candidate order until sorted; after that, look the index up.
  int guess = static_cast<int>(index);
  auto index_at = [this](int row) { return table_->item(row, kBackend)->data(Qt::UserRole).toULongLong(); };
  if (guess < table_->rowCount() && index_at(guess) == index) return guess;
  for (int r = 0; r < table_->rowCount(); ++r)
    if (index_at(r) == index) return r;
  return -1;
}

void CostTable::apply_filter(const QString& text) {
  for (int r = 0; r < table_->rowCount(); ++r) {
    bool match = text.isEmpty();
    for (int c : {kBackend, kKernel, kStatus})
      match |= table_->item(r, c) && table_->item(r, c)->text().contains(text, Qt::CaseInsensitive);
    table_->setRowHidden(r, !match);
  }
}

}  // namespace collage
