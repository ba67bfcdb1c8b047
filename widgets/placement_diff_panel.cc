#include "widgets/placement_diff_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

namespace collage {

PlacementDiffPanel::PlacementDiffPanel(QWidget* parent)
    : QWidget(parent),
      summary_(new QLabel(this)),
      model_(new DiffRegionModel(this)),
      view_(new QTableView(this)) {
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  view_->setModel(model_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(summary_);
  layout->addWidget(view_, 1);
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) emit region_selected(current.row());
          });
}

void PlacementDiffPanel::set_diff(const PlacementDiff& d, const Graph* graph, const QString& a_name,
                                  const QString& b_name) {
  model_->set_diff(d, graph);
  view_->resizeColumnsToContents();
  // Backend lists can be long: cap them so Δ stays in view (the tooltip has them whole).
  for (int column : {DiffRegionModel::kFrom, DiffRegionModel::kTo})
    view_->setColumnWidth(column, std::min(view_->columnWidth(column), 220));
  QString backends;
  for (const auto& [name, n] : d.nodes_per_backend)
    if (n.a != n.b)
      backends += QString("%1%2 %3→%4")
                      .arg(backends.isEmpty() ? "" : ", ")
                      .arg(QString::fromStdString(name))
                      .arg(n.a)
                      .arg(n.b);
  QString text = QString("A: %1 (%2 kernels, predicted %3 ms) · B: %4 (%5 kernels, predicted %6 ms)\n")
                     .arg(a_name)
                     .arg(d.kernels_a)
                     .arg(d.predicted_a_ms, 0, 'f', 3)
                     .arg(b_name)
                     .arg(d.kernels_b)
                     .arg(d.predicted_b_ms, 0, 'f', 3);
  if (d.threads_a != d.threads_b)
    text += QString("costs measured at %1 and %2 threads: compare them with care\n")
                .arg(d.threads_a)
                .arg(d.threads_b);
  if (d.identical())
    text += QString("identical: all %1 kernels have the same nodes and backend").arg(d.unchanged_kernels);
  else
    text +=
        QString(
            "%1 kernels unchanged, %2 nodes changed in %3 regions; Δ predicted %4 ms; nodes per backend: %5")
            .arg(d.unchanged_kernels)
            .arg(d.changed_nodes)
            .arg(d.regions.size())
            .arg(d.predicted_delta_ms(), 0, 'f', 3)
            .arg(backends);
  summary_->setText(text);
}

void PlacementDiffPanel::clear() {
  model_->clear();
  summary_->clear();
}

QString PlacementDiffPanel::summary() const { return summary_->text(); }

}  // namespace collage
