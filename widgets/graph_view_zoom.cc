// GraphView: how it opens (the deepest collapse depth whose fitted labels stay legible) and
// how it looks zoomed out (one pre-drawn image instead of thousands of items).
#include <QFontMetricsF>
#include <QFutureWatcher>
#include <QGraphicsPathItem>
#include <QImage>
#include <QPaintEvent>
#include <QPainter>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>

#include "widgets/graph_items.h"
#include "widgets/graph_overview.h"
#include "widgets/graph_view.h"
#include "widgets/graph_view_shown.h"
#include "widgets/minimap.h"

namespace collage {

// The zoom fit() shows a layout at in a view area of `area` px: the scene's 20 pt around the
// layout, never magnified past kMaxFitZoom. A free function: relayouts use it off the GUI thread.
static double fitted_zoom_in(QSizeF area, double layout_width, double layout_height) {
  return std::min({area.width() / (layout_width + 40), area.height() / (layout_height + 40), kMaxFitZoom});
}

QSizeF GraphView::fit_area() const {  // fitInView keeps 2 px margins
  return QSizeF(std::max(viewport()->width(), 200) - 4, std::max(viewport()->height(), 200) - 4);
}

double GraphView::fitted_zoom(double layout_width, double layout_height) const {
  return fitted_zoom_in(fit_area(), layout_width, layout_height);
}

void GraphView::open_readable() {
  // Each depth's collapsed graph is built here (the tree belongs to this thread), laid out
  // off it from the shallowest depth down while the fitted labels stay legible: the deepest
  // legible one opens fitted; when not even depth 1 is, depth 1 (or, without scopes, the
  // graph itself) opens at legible zoom on its start.
  std::vector<std::shared_ptr<Shown>> depths;
  std::vector<LayoutRequest> requests;
  for (int depth = 1; depth <= tree_->max_depth(); ++depth) {
    auto shown = std::make_shared<Shown>();
    shown->collapsed = tree_->collapsed_at_depth(depth);
    shown->graph = collapse(*tree_, node_edges_, shown->collapsed);
    if (shown->graph.units.size() > static_cast<size_t>(kOpeningUnits) && !depths.empty()) break;
    if (shown->graph.units.size() == static_cast<size_t>(graph_->num_nodes())) break;  // nothing collapses
    LayoutRequest request;
    for (const CollapsedGraph::Unit& unit : shown->graph.units)
      request.sizes.push_back(unit.node != kNoNode ? std::make_pair(kNodeBoxWidth, kNodeBoxHeight)
                                                   : std::make_pair(kScopeBoxWidth, kScopeBoxHeight));
    for (const CollapsedGraph::Edge& e : shown->graph.edges) request.edges.emplace_back(e.from, e.to);
    depths.push_back(std::move(shown));
    requests.push_back(std::move(request));
  }
  if (depths.empty()) {  // no scopes: the graph as it is, legible on its start
    build_scene();
    opened_whole_ = false;
    emit layout_changed();
    zoom_to_legible_start();
    return;
  }
  const QSizeF area = fit_area();  // the lambda gets the view's size, not the view
  const double min_zoom = legible_zoom();
  shown_generation_ = generation_;  // the expanded graph is not shown: pending until the opening
  const unsigned generation = ++generation_;
  using Choice = std::pair<int, std::shared_ptr<Shown>>;  // depth (negative: not legible fitted)
  auto* watcher = new QFutureWatcher<Choice>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
    Choice choice = watcher->result();
    watcher->deleteLater();
    if (generation != generation_) return;  // superseded
    shown_generation_ = generation;
    opening_depth_ = std::abs(choice.first);
    opened_whole_ = choice.first > 0;
    auto_fit_ = true;
    show_layout(std::move(choice.second), kNoNode);
    if (!opened_whole_) zoom_to_legible_start();
  });
  watcher->setFuture(QtConcurrent::run([depths, requests, area, min_zoom]() -> Choice {
    // A depth of a few boxes ("model" and the head) is legible but says nothing: the first
    // depth with kInformativeUnits opens, zoomed to legible text when it does not fit.
    Choice best{-1, nullptr};
    for (size_t i = 0; i < depths.size(); ++i) {
      depths[i]->layout = layout_dag(requests[i]);
      const GraphLayout& l = depths[i]->layout;
      const double fitted = fitted_zoom_in(area, l.width, l.height);
      if (fitted < min_zoom) {
        if (!best.second || best.second->graph.units.size() < static_cast<size_t>(kInformativeUnits))
          best = {-(static_cast<int>(i) + 1), depths[i]};
        break;
      }
      best = {static_cast<int>(i) + 1, depths[i]};
    }
    return best;
  }));
}

void GraphView::zoom_to_legible_start() {
  QRectF r = scene()->sceneRect();
  if (r.isEmpty()) return;
  auto_fit_ = false;
  const double target = legible_zoom() * 1.15;
  scale(target / zoom(), target / zoom());
  // The graph's start (its topmost box) at the top centre of the view.
  QPointF top(r.center().x(), r.bottom());
  if (shown_)
    for (const LayoutNode& n : shown_->layout.nodes)
      if (n.y < top.y()) top = QPointF(n.x, n.y);
  const QRectF visible = visible_scene_rect();
  centerOn(QPointF(top.x(), top.y() + visible.height() / 2 - 60 / zoom()));
  place_minimap();
  minimap_->update();
}

void GraphView::zoom_to_legible_selection() {
  QRectF area;
  for (QGraphicsItem* item : scene()->selectedItems()) area = area.united(item->sceneBoundingRect());
  if (area.isNull()) return;
  auto_fit_ = false;
  const double target = legible_zoom() * 1.15;
  scale(target / zoom(), target / zoom());
  centerOn(area.center());
  place_minimap();
  minimap_->update();
}

// ---- the zoomed-out overview ----

bool GraphView::overview_shown() const {
  const QRectF r = scene()->sceneRect();
  if (r.isEmpty() || scope_box_count() > 0 ||  // scope titles are drawn at a fixed on-screen size
      static_cast<int>(edge_items_.size()) + node_count() <= overview_items_)
    return false;
  return zoom() < overview_limit();
}

double GraphView::overview_limit() const {
  const QRectF r = scene()->sceneRect();
  if (r.isEmpty()) return 0;
  return std::min({1.0, kOverviewPixels / std::max(r.width(), r.height()), kTextLod});
}

void GraphView::paintEvent(QPaintEvent* event) {
  if (!overview_shown() || !overview_) {
    if (overview_shown() && overview_requested_ != overview_generation_) request_overview();
    QGraphicsView::paintEvent(event);  // the items themselves until the overview is drawn
    return;
  }
  QPainter painter(viewport());
  painter.fillRect(event->rect(), backgroundBrush());
  painter.setRenderHint(QPainter::SmoothPixmapTransform);
  painter.setTransform(viewportTransform());
  painter.drawImage(scene()->sceneRect(), *overview_);
  drawForeground(&painter, mapToScene(event->rect()).boundingRect());
}

void GraphView::invalidate_overview() {
  overview_.reset();
  ++overview_generation_;  // an overview being drawn shows the scene as it was
}

void GraphView::request_overview() {
  const QRectF r = scene()->sceneRect();
  const double s = std::min(1.0, kOverviewPixels / std::max(r.width(), r.height()));
  OverviewPicture picture;
  picture.scene_rect = r;
  picture.size = QSize(std::max(1, static_cast<int>(std::ceil(r.width() * s))),
                       std::max(1, static_cast<int>(std::ceil(r.height() * s))));
  picture.background = backgroundBrush().color();
  for (QGraphicsPathItem* e : edge_items_) picture.edges.push_back({e->path(), e->pen()});
  for (NodeItem* n : node_items_)
    if (n) picture.boxes.push_back(n->overview_box());
  for (KernelItem* k : kernel_items_)
    if (k && k->outlined()) picture.boxes.push_back(k->overview_box());
  const unsigned generation = overview_requested_ = overview_generation_;
  auto* watcher = new QFutureWatcher<QImage>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
    QImage image = watcher->result();
    watcher->deleteLater();
    if (generation != overview_generation_) return;  // the scene changed meanwhile
    overview_ = std::make_unique<QImage>(std::move(image));
    viewport()->update();
    emit overview_drawn();
  });
  watcher->setFuture(QtConcurrent::run([picture = std::move(picture)] { return draw_overview(picture); }));
}

}  // namespace collage
