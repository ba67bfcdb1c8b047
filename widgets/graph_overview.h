// The picture of a large graph zoomed far out, which GraphView paints instead of every item
// (GraphView::kOverviewItems): boxes and edges as plain data, collected on the GUI thread
// from the items, and drawn into an image on any thread (no scene or item is touched).
#pragma once

#include <QColor>
#include <QImage>
#include <QPainterPath>
#include <QPen>
#include <QRectF>
#include <QSize>
#include <vector>

namespace collage {

struct OverviewPicture {
  struct Box {
    QRectF rect;  // scene coordinates
    QColor fill;  // invalid: an outline only
    QPen pen;
  };
  struct Edge {
    QPainterPath path;  // scene coordinates
    QPen pen;
  };
  QRectF scene_rect;  // what the image shows, stretched to `size`
  QSize size;
  QColor background;
  std::vector<Edge> edges;  // drawn first
  std::vector<Box> boxes;   // then these, in order
};

// Without antialiasing: the image is only shown scaled down (smoothly), and antialiased
// lines made drawing it four times slower.
QImage draw_overview(const OverviewPicture& picture);

}  // namespace collage
