#include "widgets/graph_view.h"

#include <QContextMenuEvent>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QImage>
#include <QKeyEvent>
#include <QPainter>
#include <QSvgGenerator>
#include <QWheelEvent>
#include <algorithm>

#include "widgets/backend_colors.h"

namespace collage {

namespace {
QString node_tooltip(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  QString tip = QString("<b>%1</b> (%2)<br>")
                    .arg(QString::fromStdString(n.name).toHtmlEscaped(), QString::fromStdString(n.op_type));
  for (ValueId v : n.inputs)
    if (v != kNoValue)
      tip += QString("in: %1 %2<br>")
                 .arg(QString::fromStdString(g.value(v).name).toHtmlEscaped(),
                      QString::fromStdString(shape_to_string(g.value(v).shape)));
  for (ValueId v : n.outputs)
    if (v != kNoValue)
      tip += QString("out: %1 %2<br>")
                 .arg(QString::fromStdString(g.value(v).name).toHtmlEscaped(),
                      QString::fromStdString(shape_to_string(g.value(v).shape)));
  return tip;
}
}  // namespace

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));  // owned by the view (Qt parent)
  setRenderHint(QPainter::Antialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);  // Ctrl+click adds nodes to the selection
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setBackgroundBrush(QColor(0xfa, 0xfa, 0xfa));
  connect(scene(), &QGraphicsScene::selectionChanged, this, [this] {
    for (int i = 0; i < static_cast<int>(node_items_.size()); ++i)
      if (node_items_[static_cast<size_t>(i)]->isSelected()) {
        emit node_selected(i);
        return;
      }
  });
}

GraphView::~GraphView() {
  scene()->blockSignals(true);
}  // items die with the scene: no selection signals then

void GraphView::set_graph(const Graph* graph, const GraphLayout& layout) {
  node_items_.clear();  // before clear(): deleting selected items emits selectionChanged
  scene()->blockSignals(true);
  scene()->clear();
  scene()->blockSignals(false);
  node_items_.clear();
  group_items_.clear();
  edge_count_ = 0;
  graph_ = graph;
  layout_ = layout;
  placement_ = nullptr;
  if (!graph_) return;
  QPen edge_pen(QColor(0x60, 0x60, 0x60), 1.2);
  for (const LayoutEdge& e : layout_.edges) {
    if (e.points.size() < 2) continue;
    QPainterPath path(QPointF(e.points[0].first, e.points[0].second));
    if (e.bezier) {
      for (size_t i = 1; i + 2 < e.points.size(); i += 3)
        path.cubicTo(QPointF(e.points[i].first, e.points[i].second),
                     QPointF(e.points[i + 1].first, e.points[i + 1].second),
                     QPointF(e.points[i + 2].first, e.points[i + 2].second));
    } else {
      for (size_t i = 1; i < e.points.size(); ++i)
        path.lineTo(QPointF(e.points[i].first, e.points[i].second));
    }
    auto* item = scene()->addPath(path, edge_pen);
    item->setZValue(0);
    QString tip;  // the tensors flowing along this edge, for hover
    for (ValueId v : graph_->node(e.from).outputs)
      if (v != kNoValue)
        for (NodeId c : graph_->value(v).consumers)
          if (c == e.to)
            tip += QString("%1 %2 %3<br>")
                       .arg(QString::fromStdString(graph_->value(v).name).toHtmlEscaped(),
                            dtype_name(graph_->value(v).dtype),
                            QString::fromStdString(shape_to_string(graph_->value(v).shape)));
    item->setToolTip(tip);
    ++edge_count_;
  }
  QFont font;
  font.setPointSizeF(8);
  for (NodeId id = 0; id < graph_->num_nodes(); ++id) {
    const LayoutNode& ln = layout_.nodes[static_cast<size_t>(id)];
    auto* rect = scene()->addRect(QRectF(ln.x - ln.width / 2, ln.y - ln.height / 2, ln.width, ln.height),
                                  QPen(QColor(0x33, 0x33, 0x33)), QBrush(Qt::white));
    rect->setZValue(2);
    rect->setFlag(QGraphicsItem::ItemIsSelectable);
    rect->setToolTip(node_tooltip(*graph_, id));
    auto* text = new QGraphicsSimpleTextItem(QString::fromStdString(graph_->node(id).op_type), rect);
    text->setFont(font);
    QRectF tb = text->boundingRect();
    text->setPos(ln.x - tb.width() / 2, ln.y - tb.height() / 2);
    node_items_.push_back(rect);
  }
  scene()->setSceneRect(QRectF(-20, -20, layout_.width + 40, layout_.height + 40));
  recolor();
}

void GraphView::set_placement(const Placement* placement) {
  placement_ = placement;
  recolor();
}

void GraphView::set_coloring(Coloring coloring) {
  coloring_ = coloring;
  recolor();
}

void GraphView::recolor() {
  for (QGraphicsItem* item : group_items_) delete item;
  group_items_.clear();
  // The op label stays readable on the dark graph-level colours.
  auto fill_node = [](QGraphicsRectItem* item, const QColor& fill) {
    item->setBrush(fill);
    for (QGraphicsItem* child : item->childItems())
      if (auto* text = dynamic_cast<QGraphicsSimpleTextItem*>(child))
        text->setBrush(fill.lightness() < 110 ? Qt::white : Qt::black);
  };
  for (auto* item : node_items_) fill_node(item, Qt::white);
  if (!graph_ || !placement_) return;
  double total = 0;
  for (const PlacedKernel& k : placement_->kernels) total += std::max(0.0, k.cost_ms);
  for (const PlacedKernel& k : placement_->kernels) {
    QColor fill = backend_color(QString::fromStdString(k.backend));
    if (coloring_ == Coloring::CostHeatmap) {
      double share = total > 0 ? std::max(0.0, k.cost_ms) / total : 0;
      fill = QColor::fromHsvF(0.0, std::min(1.0, 0.1 + 4 * share), 1.0);
    }
    QRectF box;
    for (NodeId n : k.nodes) {
      if (n < 0 || n >= static_cast<NodeId>(node_items_.size())) continue;
      fill_node(node_items_[static_cast<size_t>(n)], fill);
      box = box.united(node_items_[static_cast<size_t>(n)]->rect());
    }
    if (k.nodes.size() > 1) {  // outline each fused kernel as one group
      auto* outline =
          scene()->addRect(box.adjusted(-6, -6, 6, 6), QPen(fill.darker(160), 2, Qt::DashLine), Qt::NoBrush);
      outline->setZValue(1);
      auto* label = scene()->addSimpleText(QString::fromStdString(k.label));
      label->setBrush(fill.darker(200));
      QFont f = label->font();
      f.setPointSizeF(7);
      label->setFont(f);
      label->setPos(box.right() + 8, box.top() - 4);
      label->setZValue(3);
      group_items_.push_back(outline);
      group_items_.push_back(label);
    }
  }
  for (const auto& [node, backend] : placement_->pins.pinned)
    if (node >= 0 && node < static_cast<NodeId>(node_items_.size()))
      node_items_[static_cast<size_t>(node)]->setPen(QPen(Qt::black, 3));
}

void GraphView::highlight(const std::vector<NodeId>& nodes) {
  scene()->clearSelection();
  for (NodeId n : nodes)
    if (n >= 0 && n < static_cast<NodeId>(node_items_.size()))
      node_items_[static_cast<size_t>(n)]->setSelected(true);
  if (!nodes.empty() && nodes[0] >= 0 && nodes[0] < static_cast<NodeId>(node_items_.size()))
    centerOn(node_items_[static_cast<size_t>(nodes[0])]);
}

int GraphView::group_count() const {
  return static_cast<int>(group_items_.size() / 2);
}  // outline + label each

QColor GraphView::node_fill(NodeId node) const {
  return node >= 0 && node < static_cast<NodeId>(node_items_.size())
             ? node_items_[static_cast<size_t>(node)]->brush().color()
             : QColor();
}

std::vector<NodeId> GraphView::selected_nodes() const {
  std::vector<NodeId> out;
  for (size_t i = 0; i < node_items_.size(); ++i)
    if (node_items_[i]->isSelected()) out.push_back(static_cast<NodeId>(i));
  return out;
}

std::vector<NodeId> GraphView::find(const QString& text) const {
  std::vector<NodeId> hits;
  if (!graph_ || text.isEmpty()) return hits;
  for (NodeId id = 0; id < graph_->num_nodes(); ++id) {
    const Node& n = graph_->node(id);
    if (QString::fromStdString(n.name).contains(text, Qt::CaseInsensitive) ||
        QString::fromStdString(n.op_type).contains(text, Qt::CaseInsensitive))
      hits.push_back(id);
  }
  return hits;
}

bool GraphView::save_image(const QString& path) {
  QRectF area = scene()->itemsBoundingRect().adjusted(-10, -10, 10, 10);
  if (path.endsWith(".svg", Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(area.size().toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), area.size()));
    svg.setTitle("Collage Explorer graph");
    QPainter painter(&svg);
    scene()->render(&painter, QRectF(QPointF(0, 0), area.size()), area);
    return painter.end();
  }
  double scale = std::min(
      2.0, 16000.0 / std::max(area.width(), area.height()));  // keep huge graphs within QImage limits
  QImage image((area.size() * scale).toSize(), QImage::Format_ARGB32);
  image.fill(Qt::white);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  scene()->render(&painter, QRectF(), area);
  return image.save(path);
}

void GraphView::contextMenuEvent(QContextMenuEvent* event) {
  QGraphicsItem* item = itemAt(event->pos());
  while (item && item->parentItem()) item = item->parentItem();
  for (int i = 0; i < static_cast<int>(node_items_.size()); ++i)
    if (node_items_[static_cast<size_t>(i)] == item) {
      emit node_context_menu(i, event->globalPos());
      return;
    }
}

void GraphView::fit() {
  QRectF r = scene()->sceneRect();
  // Deep graphs (transformers) are thousands of ranks tall: show their top at a
  // readable scale instead of a hairline, and let the user scroll.
  double aspect = viewport()->height() > 0 ? double(viewport()->width()) / viewport()->height() : 1.0;
  double max_height = std::max(r.width(), 400.0) / aspect * 1.5;
  if (r.height() > max_height) r.setHeight(max_height);
  fitInView(r, Qt::KeepAspectRatio);
}

void GraphView::wheelEvent(QWheelEvent* event) {
  double factor = event->angleDelta().y() > 0 ? 1.2 : 1 / 1.2;
  scale(factor, factor);
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal)
    scale(1.2, 1.2);
  else if (event->key() == Qt::Key_Minus)
    scale(1 / 1.2, 1 / 1.2);
  else if (event->key() == Qt::Key_F)
    fit();
  else
    QGraphicsView::keyPressEvent(event);
}

}  // namespace collage
