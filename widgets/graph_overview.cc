#include "widgets/graph_overview.h"

#include <QPainter>

namespace collage {

QImage draw_overview(const OverviewPicture& picture) {
  QImage image(picture.size, QImage::Format_ARGB32_Premultiplied);
  image.fill(picture.background);
  if (picture.scene_rect.isEmpty() || image.isNull()) return image;
  QPainter painter(&image);
  painter.scale(picture.size.width() / picture.scene_rect.width(),
                picture.size.height() / picture.scene_rect.height());
  painter.translate(-picture.scene_rect.topLeft());
  painter.setBrush(Qt::NoBrush);
  for (const OverviewPicture::Edge& e : picture.edges) {
    painter.setPen(e.pen);
    painter.drawPath(e.path);
  }
  for (const OverviewPicture::Box& b : picture.boxes) {
    painter.setPen(b.pen);
    painter.setBrush(b.fill.isValid() ? QBrush(b.fill) : QBrush(Qt::NoBrush));
    painter.drawRect(b.rect);
  }
  return image;
}

}  // namespace collage
