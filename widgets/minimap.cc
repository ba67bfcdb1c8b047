#include "widgets/minimap.h"

#include <QGraphicsScene>
#include <QGraphicsView>
#include <QMouseEvent>
#include <QPainter>
#include <algorithm>

namespace collage {

namespace {
constexpr int kMaxWidth = 220, kMaxHeight = 220, kMinSide = 48, kPad = 4;
}

Minimap::Minimap(QGraphicsView* view, QWidget* parent) : QWidget(parent), view_(view) {
  setCursor(Qt::PointingHandCursor);
  setToolTip("overview: click or drag to move the view");
  resize(kMaxWidth, kMaxHeight / 2);
}

void Minimap::refresh() {
  scene_rect_ = view_->scene() ? view_->scene()->sceneRect() : QRectF();
  if (scene_rect_.isEmpty()) {
    picture_ = QPixmap();
    update();
    return;
  }
  // Keep the scene's aspect within the maximum box; very tall graphs become a narrow strip.
  double scale = std::min((kMaxWidth - 2.0 * kPad) / scene_rect_.width(),
                          (kMaxHeight - 2.0 * kPad) / scene_rect_.height());
  QSizeF size = (scene_rect_.size() * scale).expandedTo(QSizeF(2, 2));  // a hairline graph stays paintable
  resize(std::max(kMinSide, static_cast<int>(size.width()) + 2 * kPad),
         std::max(kMinSide, static_cast<int>(size.height()) + 2 * kPad));
  target_ = QRectF(QPointF((width() - size.width()) / 2, (height() - size.height()) / 2), size);
  const qreal dpr = devicePixelRatioF();
  picture_ = QPixmap((size * dpr).toSize());
  picture_.setDevicePixelRatio(dpr);
  picture_.fill(Qt::white);
  QPainter painter(&picture_);
  view_->scene()->render(&painter, QRectF(QPointF(0, 0), size), scene_rect_);
  update();
}

QPointF Minimap::to_scene(const QPointF& pos) const {
  if (target_.isEmpty()) return {};
  return {scene_rect_.left() + (pos.x() - target_.left()) * scene_rect_.width() / target_.width(),
          scene_rect_.top() + (pos.y() - target_.top()) * scene_rect_.height() / target_.height()};
}

QPointF Minimap::from_scene(const QPointF& p) const {
  if (scene_rect_.isEmpty()) return {};
  return {target_.left() + (p.x() - scene_rect_.left()) * target_.width() / scene_rect_.width(),
          target_.top() + (p.y() - scene_rect_.top()) * target_.height() / scene_rect_.height()};
}

void Minimap::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), QColor(255, 255, 255, 230));
  painter.setPen(QColor(0x88, 0x88, 0x88));
  painter.drawRect(rect().adjusted(0, 0, -1, -1));
  if (picture_.isNull()) return;
  painter.drawPixmap(target_.topLeft(), picture_);
  // The main view's visible part of the scene.
  QRectF visible = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  QRectF r(from_scene(visible.topLeft()), from_scene(visible.bottomRight()));
  r = r.intersected(target_.adjusted(-1, -1, 1, 1));
  painter.setPen(QPen(QColor(0xd3, 0x2f, 0x2f), 1.5));
  painter.setBrush(QColor(0xd3, 0x2f, 0x2f, 30));
  painter.drawRect(r);
}

void Minimap::center_at(const QPointF& pos) {
  view_->centerOn(to_scene(pos));
  update();
  emit navigated();
}

void Minimap::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::LeftButton) center_at(event->pos());
}

void Minimap::mouseReleaseEvent(QMouseEvent* event) { event->accept(); }

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) center_at(event->pos());
}

}  // namespace collage
