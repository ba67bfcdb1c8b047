#include "widgets/graph_view.h"

#include <QContextMenuEvent>
#include <QFontMetricsF>
#include <QGraphicsPathItem>
#include <QImage>
#include <QKeyEvent>
#include <QLinearGradient>
#include <QPaintEvent>
#include <QPainter>
#include <QScrollBar>
#include <QSvgGenerator>
#include <QTimer>
#include <QWheelEvent>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "app/explorer/model/backend_colors.h"
#include "core/ir/op_label.h"
#include "widgets/graph_items.h"
#include "widgets/graph_overview.h"
#include "widgets/graph_view_shown.h"
#include "widgets/minimap.h"

namespace collage {

namespace {

QString tensor_text(const Graph& g, ValueId v) {
  const Value& value = g.value(v);
  return QString("%1: %2").arg(QString::fromStdString(value.name).toHtmlEscaped(),
                               QString::fromStdString(describe_type(value)).toHtmlEscaped());
}

QString node_tooltip(const Graph& g, NodeId id, const QString& label) {
  const Node& n = g.node(id);
  QString tip = QString("<b>%1</b><br>%2<br>")
                    .arg(QString::fromStdString(n.name).toHtmlEscaped(), label.toHtmlEscaped());
  for (ValueId v : n.inputs)
    if (v != kNoValue) tip += "in " + tensor_text(g, v) + "<br>";
  for (ValueId v : n.outputs)
    if (v != kNoValue) tip += "out " + tensor_text(g, v) + "<br>";
  return tip;
}

// The tensors an edge carries: every value a producer hands to a consumer of the edge.
QString edge_tensors(const Graph& g, const CollapsedGraph::Edge& edge) {
  std::set<ValueId> values;
  for (auto [from, to] : edge.members)
    for (ValueId v : g.node(from).outputs)
      if (v != kNoValue)
        for (NodeId c : g.value(v).consumers)
          if (c == to) values.insert(v);
  QString tip;
  int shown = 0;
  for (ValueId v : values) {
    if (++shown > 6) {
      tip += QString("… %1 more<br>").arg(values.size() - 6);
      break;
    }
    tip += tensor_text(g, v) + "<br>";
  }
  return tip;
}

QPainterPath edge_path(const LayoutEdge& e) {
  QPainterPath path(QPointF(e.points[0].first, e.points[0].second));
  if (e.bezier) {
    for (size_t i = 1; i + 2 < e.points.size(); i += 3)
      path.cubicTo(QPointF(e.points[i].first, e.points[i].second),
                   QPointF(e.points[i + 1].first, e.points[i + 1].second),
                   QPointF(e.points[i + 2].first, e.points[i + 2].second));
  } else {
    for (size_t i = 1; i < e.points.size(); ++i) path.lineTo(QPointF(e.points[i].first, e.points[i].second));
  }
  return path;
}

QRectF box_of(const LayoutNode& n) {
  return QRectF(n.x - n.width / 2, n.y - n.height / 2, n.width, n.height);
}

}  // namespace

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));  // owned by the view (Qt parent)
  setRenderHint(QPainter::Antialiasing);
  setDragMode(QGraphicsView::ScrollHandDrag);  // Ctrl+click adds nodes to the selection
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  // No scroll bars: dragging and the minimap move the view, and Fit needs the whole viewport.
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setOptimizationFlags(QGraphicsView::DontSavePainterState);
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setBackgroundBrush(QColor(0xfa, 0xfa, 0xfa));
  minimap_ = new Minimap(this, this);
  minimap_->hide();
  connect(minimap_, &Minimap::navigated, this, [this] { auto_fit_ = false; });
  connect(scene(), &QGraphicsScene::selectionChanged, this, [this] {
    invalidate_overview();             // it shows the selection
    if (restoring_selection_) return;  // the same selection after a relayout: nothing to tell
    for (NodeItem* item : node_items_)
      if (item && item->isSelected()) {
        emit node_selected(item->node());
        return;
      }
    for (ScopeItem* item : scope_items_)
      if (item && item->isSelected()) {
        emit scope_selected(item->scope());
        return;
      }
  });
}

GraphView::~GraphView() {
  scene()->blockSignals(true);
}  // items die with the scene: no selection signals then; a running relayout's result is dropped

void GraphView::set_graph(const Graph* graph, const GraphLayout& layout) {
  shown_generation_ = ++generation_;  // a relayout still running is for the previous graph
  graph_ = graph;
  placement_ = nullptr;
  labels_.clear();
  tree_.reset();
  shown_.reset();
  if (graph_) {
    tree_ = std::make_unique<ScopeTree>(ScopeTree::of(*graph_));
    node_edges_ = node_edges(*graph_);
    for (NodeId n = 0; n < graph_->num_nodes(); ++n)
      labels_.push_back(QString::fromStdString(op_label(*graph_, n)));
    shown_ = std::make_shared<Shown>();
    shown_->collapsed.assign(static_cast<size_t>(tree_->size()), false);
    shown_->graph = collapse(*tree_, node_edges_, shown_->collapsed);
    shown_->layout = layout;
    collapsed_ = shown_->collapsed;
  } else {
    node_edges_ = NodeEdges{};
    collapsed_.clear();
  }
  auto_fit_ = true;
  opening_depth_ = 0;
  opened_whole_ = true;
  // A view not on screen has no size to be legible in: it opens as it is. One that opens
  // collapsed does not build and paint the expanded scene first (for 8,000 nodes that held the
  // GUI thread a third of a second); it shows "laying out" until its opening view is ready.
  if (graph_ && open_readable_ && isVisible() && fitted_zoom(layout.width, layout.height) < legible_zoom()) {
    clear_scene();
    open_readable();
    return;
  }
  build_scene();
  fit();
  emit layout_changed();
}

double GraphView::label_px() const { return zoom() * QFontMetricsF(node_label_font()).height(); }

double GraphView::legible_zoom() {
  return GraphView::kLegibleLabelPx / QFontMetricsF(node_label_font()).height();
}

void GraphView::clear_scene() {
  invalidate_overview();
  node_items_.clear();  // before clear(): deleting selected items emits selectionChanged
  scope_items_.clear();
  edge_items_.clear();
  kernel_items_.clear();
  kernel_labels_.clear();
  scene()->blockSignals(true);
  scene()->clear();
  scene()->blockSignals(false);
  scene()->setSceneRect(QRectF());
  schedule_minimap_refresh();
}

void GraphView::build_scene() {
  clear_scene();
  if (!graph_ || !shown_) return;
  const CollapsedGraph& g = shown_->graph;
  const GraphLayout& layout = shown_->layout;
  std::map<std::pair<int, int>, const LayoutEdge*> routed;
  for (const LayoutEdge& e : layout.edges) routed[{e.from, e.to}] = &e;
  QPen edge_pen(QColor(0x60, 0x60, 0x60), 1.2);
  for (const CollapsedGraph::Edge& e : g.edges) {
    auto it = routed.find({e.from, e.to});
    QPainterPath path;
    if (it != routed.end() && it->second->points.size() >= 2) {
      path = edge_path(*it->second);
    } else {  // not routed by the layout: a straight line
      const LayoutNode &a = layout.nodes[static_cast<size_t>(e.from)],
                       &b = layout.nodes[static_cast<size_t>(e.to)];
      path.moveTo(a.x, a.y + a.height / 2);
      path.lineTo(b.x, b.y - b.height / 2);
    }
    auto* item = scene()->addPath(path, edge_pen);
    item->setZValue(0);
    item->setData(0, edge_tensors(*graph_, e));  // the tensors; recolor() adds the boundary
    edge_items_.push_back(item);
  }
  node_items_.assign(static_cast<size_t>(graph_->num_nodes()), nullptr);
  scope_items_.assign(static_cast<size_t>(tree_->size()), nullptr);
  for (size_t u = 0; u < g.units.size(); ++u) {
    const CollapsedGraph::Unit& unit = g.units[u];
    QRectF rect = box_of(layout.nodes[u]);
    if (unit.node != kNoNode) {
      auto* item = new NodeItem(unit.node, rect, labels_[static_cast<size_t>(unit.node)]);
      item->setData(0, node_tooltip(*graph_, unit.node, labels_[static_cast<size_t>(unit.node)]));
      item->setToolTip(item->data(0).toString());  // recolor() adds its kernel
      scene()->addItem(item);
      node_items_[static_cast<size_t>(unit.node)] = item;
    } else {
      const ScopeTree::Scope& s = tree_->scope(unit.scope);
      auto* item =
          new ScopeItem(unit.scope, rect, QString::fromStdString(s.path), static_cast<int>(s.nodes.size()));
      item->setToolTip(QString("<b>%1</b><br>%2 nodes, collapsed: double-click to expand")
                           .arg(QString::fromStdString(s.path).toHtmlEscaped())
                           .arg(s.nodes.size()));
      scene()->addItem(item);
      scope_items_[static_cast<size_t>(unit.scope)] = item;
    }
  }
  scene()->setSceneRect(QRectF(-20, -20, layout.width + 40, layout.height + 40));
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
  invalidate_overview();
  for (KernelItem* item : kernel_items_) delete item;
  kernel_items_.clear();
  kernel_labels_.clear();
  shares_.clear();
  max_kernel_ms_ = 0;
  if (!scene_built()) return;  // opening: build_scene() colours the items it makes
  double total = 0;
  if (placement_) {
    std::vector<KernelTime> times;
    for (const PlacedKernel& k : placement_->kernels) {
      const double ms = k.cost.valid() ? k.cost.median_ms : 0.0;  // no cost: no time to share out
      times.push_back({k.nodes, k.backend, ms});
      total += ms;
      max_kernel_ms_ = std::max(max_kernel_ms_, ms);
    }
    shares_ = split_evenly(graph_->num_nodes(), times);
  }
  auto fill_of = [&](const PlacedKernel& k) {
    if (coloring_ != Coloring::CostHeatmap) return backend_color(QString::fromStdString(k.backend));
    return k.cost.valid() ? heat_color(k.cost.median_ms, max_kernel_ms_)
                          : QColor(Qt::lightGray);  // not "cool"
  };
  for (NodeItem* item : node_items_)
    if (item) {
      item->set_fill(Qt::white);
      item->set_pinned(false);
      item->set_detail(QString());
      item->setToolTip(item->data(0).toString());
    }
  if (placement_) {
    for (size_t ki = 0; ki < placement_->kernels.size(); ++ki) {
      const PlacedKernel& k = placement_->kernels[ki];
      const QColor fill = fill_of(k);
      QRectF box;
      bool all_shown = true;
      for (NodeId n : k.nodes) {
        NodeItem* item = n >= 0 && n < graph_->num_nodes() ? node_items_[static_cast<size_t>(n)] : nullptr;
        if (!item) {
          all_shown = false;
          continue;
        }
        item->set_fill(fill);
        item->setToolTip(
            item->data(0).toString() +
            QString("kernel: <b>%1</b> %2, %3 for %4 node(s)")
                .arg(QString::fromStdString(k.backend), QString::fromStdString(k.label).toHtmlEscaped())
                .arg(k.cost.valid() ? QString("%1 ms").arg(k.cost.median_ms, 0, 'f', 3) : QString("no cost"))
                .arg(k.nodes.size()));
        box = box.united(item->rect());
      }
      KernelItem* kernel = nullptr;
      QString label;
      if (all_shown && !box.isNull()) {  // a kernel inside a collapsed box counts in the box
        label = QString::fromStdString(k.backend);
        label += k.cost.valid() ? QString(" %1 ms · %2%")
                                      .arg(k.cost.median_ms, 0, 'f', 3)
                                      .arg(total > 0 ? 100 * k.cost.median_ms / total : 0.0, 0, 'f', 1)
                                : QString(" · no cost");
        if (k.nodes.size() > 1) {  // outlined, labelled at its right
          kernel = new KernelItem(box, true, label, backend_color(QString::fromStdString(k.backend)));
          kernel->setToolTip(
              QString("<b>%1</b> kernel %2<br>%3 nodes")
                  .arg(QString::fromStdString(k.backend), QString::fromStdString(k.label).toHtmlEscaped())
                  .arg(k.nodes.size()) +
              "<br>" + label.toHtmlEscaped());
          scene()->addItem(kernel);
        } else {  // one node: the label is the node box's second line (nothing to overlap)
          node_items_[static_cast<size_t>(k.nodes[0])]->set_detail(label);
        }
      }
      kernel_items_.push_back(kernel);
      kernel_labels_.push_back(label);
    }
    for (const auto& [node, backend] : placement_->pins.pinned)
      if (node >= 0 && node < graph_->num_nodes() && node_items_[static_cast<size_t>(node)])
        node_items_[static_cast<size_t>(node)]->set_pinned(true);
  }
  // Collapsed boxes: total time (even split of each kernel over its nodes) and backend mix.
  for (ScopeItem* item : scope_items_) {
    if (!item) continue;
    if (!placement_) {
      item->set_cost(0, 0, 0, {});
      continue;
    }
    ScopeCost cost = tree_->cost(item->scope(), shares_);
    std::vector<std::pair<QString, double>> mix;
    for (const auto& [backend, ms] : cost.backend_ms) mix.emplace_back(QString::fromStdString(backend), ms);
    std::sort(mix.begin(), mix.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    item->set_cost(cost.ms, total > 0 ? cost.ms / total : 0, cost.kernels, std::move(mix));
    QString tip = QString("<b>%1</b><br>")
                      .arg(QString::fromStdString(tree_->scope(item->scope()).path).toHtmlEscaped());
    tip += QString(
               "%1 ms (%2% of the placement), %3 kernels; a kernel's time is split evenly over its nodes<br>")
               .arg(cost.ms, 0, 'f', 3)
               .arg(total > 0 ? 100 * cost.ms / total : 0.0, 0, 'f', 1)
               .arg(cost.kernels);
    for (const auto& [backend, ms] : mix)
      tip += QString("%1: %2 ms<br>").arg(backend.isEmpty() ? "unplaced" : backend).arg(ms, 0, 'f', 3);
    item->setToolTip(tip + "double-click to expand");
  }
  // Edges from one backend's kernel into another's: a layout/library boundary.
  const QPen plain(QColor(0x60, 0x60, 0x60), 1.2);
  const QPen boundary(QColor(0xd8, 0x1b, 0x60), 2.6, Qt::DashLine);
  for (size_t e = 0; e < edge_items_.size(); ++e) {
    std::set<std::pair<std::string, std::string>> crossings;
    if (!shares_.empty())
      for (auto [from, to] : shown_->graph.edges[e].members) {
        const NodeShare &a = shares_[static_cast<size_t>(from)], &b = shares_[static_cast<size_t>(to)];
        if (a.kernel >= 0 && b.kernel >= 0 && a.backend != b.backend)
          crossings.insert({a.backend, b.backend});
      }
    QString tip = edge_items_[e]->data(0).toString();
    for (const auto& [a, b] : crossings)
      tip += QString("<b>%1 → %2</b>: layout/library boundary<br>")
                 .arg(QString::fromStdString(a), QString::fromStdString(b));
    edge_items_[e]->setPen(crossings.empty() ? plain : boundary);
    edge_items_[e]->setData(1, !crossings.empty());
    edge_items_[e]->setToolTip(tip);
  }
  viewport()->update();  // the heatmap legend
  schedule_minimap_refresh();
}

void GraphView::highlight(const std::vector<NodeId>& nodes) {
  invalidate_overview();
  scene()->clearSelection();
  QGraphicsItem* first = nullptr;
  for (NodeId n : nodes) {
    QGraphicsItem* item = node_item(n);
    if (!item && graph_ && tree_ && n >= 0 && n < graph_->num_nodes())  // inside a collapsed box
      item = scope_item(tree_->collapsed_owner(n, collapsed_));
    if (!item) continue;
    item->setSelected(true);
    if (!first) first = item;
  }
  if (first) centerOn(first);
}

// ---- navigation ----

void GraphView::fit() {
  auto_fit_ = true;
  QRectF r = scene()->sceneRect();
  if (r.isEmpty()) return;
  fitInView(r, Qt::KeepAspectRatio);
  if (zoom() > kMaxFitZoom) {  // a small graph is shown whole, not blown up
    scale(kMaxFitZoom / zoom(), kMaxFitZoom / zoom());
    centerOn(r.center());
  }
  place_minimap();
  minimap_->update();
}

double GraphView::zoom() const { return transform().m11(); }

QRectF GraphView::visible_scene_rect() const { return mapToScene(viewport()->rect()).boundingRect(); }

void GraphView::zoom_by(double factor) {
  QRectF r = scene()->sceneRect();
  if (r.isEmpty()) return;
  const double fit_scale = std::min(viewport()->width() / r.width(), viewport()->height() / r.height());
  const double target = std::clamp(zoom() * factor, std::min(0.5 * fit_scale, 1.0), kMaxZoom);
  auto_fit_ = false;
  scale(target / zoom(), target / zoom());
  place_minimap();
  minimap_->update();
}

void GraphView::zoom_to_selection() {
  QRectF area;
  for (QGraphicsItem* item : scene()->selectedItems()) area = area.united(item->sceneBoundingRect());
  if (area.isNull()) return;
  const QPointF centre = area.center();
  fitInView(area.adjusted(-40, -40, 40, 40), Qt::KeepAspectRatio);
  if (zoom() > kMaxSelectionZoom) scale(kMaxSelectionZoom / zoom(), kMaxSelectionZoom / zoom());
  centerOn(centre);
  auto_fit_ = false;
  place_minimap();
  minimap_->update();
}

void GraphView::set_minimap_visible(bool visible) {
  minimap_wanted_ = visible;
  place_minimap();
}

void GraphView::place_minimap() {
  // Shown while part of the graph is out of view: when all of it is visible it adds nothing.
  const QRectF scene_rect = scene()->sceneRect().adjusted(10, 10, -10, -10);
  minimap_->setVisible(minimap_wanted_ && graph_ && !scene_rect.isEmpty() &&
                       !visible_scene_rect().contains(scene_rect));
  const QRect vp = viewport()->geometry();
  minimap_->move(vp.right() - minimap_->width() - 8, vp.bottom() - minimap_->height() - 8);
  minimap_->raise();
}

void GraphView::schedule_minimap_refresh() {
  if (minimap_refresh_pending_) return;
  minimap_refresh_pending_ = true;
  QTimer::singleShot(0, this, [this] {  // once per burst of changes
    minimap_refresh_pending_ = false;
    minimap_->refresh();
    place_minimap();
  });
}

void GraphView::wheelEvent(QWheelEvent* event) {
  // Around the cursor: the scene point under it stays under it.
  const QPoint cursor = event->position().toPoint();
  const QPointF before = mapToScene(cursor);
  const ViewportAnchor anchor = transformationAnchor();
  setTransformationAnchor(NoAnchor);
  zoom_by(event->angleDelta().y() > 0 ? 1.2 : 1 / 1.2);
  setTransformationAnchor(anchor);
  const QPointF moved = mapToScene(cursor) - before;
  centerOn(mapToScene(viewport()->rect().center()) - moved);
  event->accept();
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) auto_fit_ = false;  // dragging pans
  QGraphicsView::mouseMoveEvent(event);
}

void GraphView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (auto_fit_) fit();
  place_minimap();
}

void GraphView::scrollContentsBy(int dx, int dy) {
  QGraphicsView::scrollContentsBy(dx, dy);
  minimap_->update();
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal)
    zoom_by(1.2);
  else if (event->key() == Qt::Key_Minus)
    zoom_by(1 / 1.2);
  else if (event->key() == Qt::Key_F)
    fit();
  else if (event->key() == Qt::Key_Z)
    zoom_to_selection();
  else
    QGraphicsView::keyPressEvent(event);
}

void GraphView::drawForeground(QPainter* painter, const QRectF& rect) {
  QGraphicsView::drawForeground(painter, rect);
  if (graph_ && layout_pending() && scene()->items().isEmpty()) {  // opening: nothing to show yet
    painter->save();
    painter->resetTransform();
    painter->setPen(QColor(0x66, 0x66, 0x66));
    painter->drawText(viewport()->rect(), Qt::AlignCenter,
                      QString("Laying out %1 nodes…").arg(graph_->num_nodes()));
    painter->restore();
    return;
  }
  if (coloring_ != Coloring::CostHeatmap || !placement_ || max_kernel_ms_ <= 0) return;
  // The heatmap's scale, fixed in the top-left corner of the viewport.
  painter->save();
  painter->resetTransform();
  const QRectF panel(10, 10, 230, 50);
  painter->setPen(QColor(0x99, 0x99, 0x99));
  painter->setBrush(QColor(255, 255, 255, 235));
  painter->drawRect(panel);
  const QRectF bar(panel.left() + 10, panel.top() + 20, panel.width() - 20, 10);
  QLinearGradient gradient(bar.topLeft(), bar.topRight());
  for (int i = 0; i <= 10; ++i)
    gradient.setColorAt(i / 10.0, heat_color(max_kernel_ms_ * i / 10.0, max_kernel_ms_));
  painter->setPen(Qt::NoPen);
  painter->setBrush(gradient);
  painter->drawRect(bar);
  QFont font = painter->font();
  font.setPointSizeF(7.5);
  painter->setFont(font);
  painter->setPen(Qt::black);
  painter->drawText(QRectF(panel.left() + 10, panel.top() + 3, bar.width(), 16), Qt::AlignLeft,
                    "kernel time (ms)");
  for (int i = 0; i <= 2; ++i) {
    const double x = bar.left() + bar.width() * i / 2;
    painter->drawLine(QPointF(x, bar.bottom()), QPointF(x, bar.bottom() + 3));
    const Qt::Alignment align = i == 0 ? Qt::AlignLeft : i == 1 ? Qt::AlignHCenter : Qt::AlignRight;
    const QRectF label(i == 0 ? x : i == 1 ? x - 40 : x - 80, bar.bottom() + 3, 80, 14);
    painter->drawText(label, align, QString::number(max_kernel_ms_ * i / 2, 'f', 3));
  }
  painter->restore();
}

// ---- scopes ----

void GraphView::collapse_to_depth(int depth) {
  if (!tree_) return;
  relayout(tree_->collapsed_at_depth(depth), kNoNode);
}

void GraphView::expand_scope(int scope) {
  if (!tree_ || scope <= 0 || scope >= tree_->size()) return;
  std::vector<bool> collapsed = shown_->collapsed;
  tree_->expand(collapsed, scope);
  relayout(std::move(collapsed), tree_->scope(scope).nodes.front());
}

void GraphView::collapse_scope(int scope) {
  if (!tree_ || scope <= 0 || scope >= tree_->size()) return;
  std::vector<bool> collapsed = shown_->collapsed;
  collapsed[static_cast<size_t>(scope)] = true;
  relayout(std::move(collapsed), tree_->scope(scope).nodes.front());
}

bool GraphView::is_collapsed(int scope) const {
  return scope >= 0 && static_cast<size_t>(scope) < collapsed_.size() &&
         collapsed_[static_cast<size_t>(scope)];
}

void GraphView::relayout(std::vector<bool> collapsed, NodeId focus) {
  if (!graph_) return;
  auto shown = std::make_shared<Shown>();
  shown->collapsed = std::move(collapsed);
  shown->graph = collapse(*tree_, node_edges_, shown->collapsed);
  LayoutRequest request;
  for (const CollapsedGraph::Unit& unit : shown->graph.units)
    request.sizes.push_back(unit.node != kNoNode ? std::make_pair(kNodeBoxWidth, kNodeBoxHeight)
                                                 : std::make_pair(kScopeBoxWidth, kScopeBoxHeight));
  for (const CollapsedGraph::Edge& e : shown->graph.edges) request.edges.emplace_back(e.from, e.to);
  const unsigned generation = ++generation_;
  auto* watcher = new QFutureWatcher<std::shared_ptr<Shown>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this,
          [this, watcher, generation, focus, selected = selected_nodes()] {
            std::shared_ptr<Shown> result = watcher->result();
            watcher->deleteLater();
            if (generation != generation_) return;  // superseded
            shown_generation_ = generation;
            show_layout(std::move(result), focus, selected);
          });
  watcher->setFuture(QtConcurrent::run([shown, request = std::move(request)] {
    shown->layout = layout_dag(request);  // graphviz or layered, off the GUI thread
    return shown;
  }));
}

void GraphView::show_layout(std::shared_ptr<Shown> shown, NodeId focus, const std::vector<NodeId>& selected) {
  shown_ = std::move(shown);
  collapsed_ = shown_->collapsed;
  build_scene();
  QGraphicsItem* item =
      focus != kNoNode ? unit_item(shown_->graph.unit_of[static_cast<size_t>(focus)]) : nullptr;
  if (item && !auto_fit_) {
    centerOn(item);  // the scope just opened or closed stays where the user looks
  } else {
    fit();
    // As opening does: a layout illegible when fitted (Expand all on a large model) shows
    // legible text on what was selected, else on the graph's start.
    if (open_readable_ && label_px() < kLegibleLabelPx) {
      restoring_selection_ = true;
      highlight(selected);
      restoring_selection_ = false;
      if (scene()->selectedItems().isEmpty())
        zoom_to_legible_start();
      else
        zoom_to_legible_selection();
    }
  }
  emit layout_changed();
}

bool GraphView::scene_built() const {
  return graph_ && shown_ && node_items_.size() == static_cast<size_t>(graph_->num_nodes()) &&
         edge_items_.size() == shown_->graph.edges.size();
}

QGraphicsItem* GraphView::unit_item(int unit) const {
  if (!shown_ || unit < 0 || static_cast<size_t>(unit) >= shown_->graph.units.size()) return nullptr;
  const CollapsedGraph::Unit& u = shown_->graph.units[static_cast<size_t>(unit)];
  return u.node != kNoNode ? node_item(u.node) : scope_item(u.scope);
}

// ---- what is shown ----

int GraphView::node_count() const {
  return static_cast<int>(std::count_if(node_items_.begin(), node_items_.end(), [](auto* i) { return i; }));
}

int GraphView::group_count() const {
  return static_cast<int>(
      std::count_if(kernel_items_.begin(), kernel_items_.end(), [](KernelItem* k) { return k != nullptr; }));
}

int GraphView::scope_box_count() const {
  return static_cast<int>(std::count_if(scope_items_.begin(), scope_items_.end(), [](auto* i) { return i; }));
}

QGraphicsItem* GraphView::node_item(NodeId node) const {
  return node >= 0 && static_cast<size_t>(node) < node_items_.size() ? node_items_[static_cast<size_t>(node)]
                                                                     : nullptr;
}

QGraphicsItem* GraphView::scope_item(int scope) const {
  return scope >= 0 && static_cast<size_t>(scope) < scope_items_.size()
             ? scope_items_[static_cast<size_t>(scope)]
             : nullptr;
}

QColor GraphView::node_fill(NodeId node) const {
  auto* item = static_cast<NodeItem*>(node_item(node));
  return item ? item->fill() : QColor();
}

QString GraphView::scope_text(int scope) const {
  auto* item = static_cast<ScopeItem*>(scope_item(scope));
  return item ? item->text() : QString();
}

QString GraphView::node_label(NodeId node) const {
  return node >= 0 && static_cast<size_t>(node) < labels_.size() ? labels_[static_cast<size_t>(node)]
                                                                 : QString();
}

QString GraphView::kernel_label(size_t kernel) const {
  return kernel < kernel_labels_.size() ? kernel_labels_[kernel] : QString();
}

const CollapsedGraph::Edge* GraphView::shown_edge(NodeId from, NodeId to) const {
  if (!scene_built()) return nullptr;
  for (const CollapsedGraph::Edge& e : shown_->graph.edges)
    for (auto member : e.members)
      if (member.first == from && member.second == to) return &e;
  return nullptr;
}

bool GraphView::edge_marked(NodeId from, NodeId to) const {
  const CollapsedGraph::Edge* e = shown_edge(from, to);
  return e && edge_items_[static_cast<size_t>(e - shown_->graph.edges.data())]->data(1).toBool();
}

QString GraphView::edge_tooltip(NodeId from, NodeId to) const {
  const CollapsedGraph::Edge* e = shown_edge(from, to);
  return e ? edge_items_[static_cast<size_t>(e - shown_->graph.edges.data())]->toolTip() : QString();
}

std::vector<NodeId> GraphView::selected_nodes() const {
  std::set<NodeId> out;
  for (QGraphicsItem* item : scene()->selectedItems()) {
    if (item->type() == NodeItem::Type) out.insert(static_cast<NodeItem*>(item)->node());
    if (item->type() == ScopeItem::Type)
      for (NodeId n : tree_->scope(static_cast<ScopeItem*>(item)->scope()).nodes) out.insert(n);
  }
  return {out.begin(), out.end()};
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

// ---- mouse: menus and double-click ----

void GraphView::contextMenuEvent(QContextMenuEvent* event) {
  for (QGraphicsItem* item : items(event->pos())) {
    if (item->type() == NodeItem::Type) {
      emit node_context_menu(static_cast<NodeItem*>(item)->node(), event->globalPos());
      return;
    }
    if (item->type() == ScopeItem::Type) {
      emit scope_context_menu(static_cast<ScopeItem*>(item)->scope(), event->globalPos());
      return;
    }
  }
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
  for (QGraphicsItem* item : items(event->pos())) {
    if (item->type() == ScopeItem::Type) {
      expand_scope(static_cast<ScopeItem*>(item)->scope());
      return;
    }
    if (item->type() == NodeItem::Type) {  // closes the node's innermost scope
      int scope = tree_->innermost(static_cast<NodeItem*>(item)->node());
      if (scope > 0) collapse_scope(scope);
      return;
    }
  }
  QGraphicsView::mouseDoubleClickEvent(event);
}

}  // namespace collage
