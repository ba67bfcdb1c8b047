#include "widgets/placement_diff_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "widgets/backend_colors.h"

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
