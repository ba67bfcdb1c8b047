// The overview of a GraphView: the whole scene drawn small, with the main view's
// visible rectangle on it; a click or a drag centres the main view there. The
// scene is rendered into a pixmap once per change (refresh()), so painting costs
// the same for 100 or 10,000 nodes.
#pragma once

#include <QPixmap>
#include <QWidget>

class QGraphicsView;

namespace collage {

class Minimap : public QWidget {
  Q_OBJECT
 public:
  explicit Minimap(QGraphicsView* view, QWidget* parent);
  void refresh();  // re-renders the scene (after the scene changed); resizes to its aspect
  // Widget position <-> scene position.
  QPointF to_scene(const QPointF& pos) const;
  QPointF from_scene(const QPointF& scene_pos) const;

 signals:
  void navigated();  // the user moved the main view from here

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;

 private:
  void center_at(const QPointF& pos);
  QGraphicsView* view_;
  QPixmap picture_;
  QRectF scene_rect_;  // what the picture shows
  QRectF target_;      // where in the widget it is drawn
};

}  // namespace collage
