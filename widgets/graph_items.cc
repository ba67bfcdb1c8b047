#include "widgets/graph_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>

#include "app/explorer/model/backend_colors.h"

namespace collage {

namespace {

double lod_of(const QPainter* painter, const QStyleOptionGraphicsItem* option) {
  return option->levelOfDetailFromTransform(painter->worldTransform());
}

QFont small_font(double points) {
  QFont f;
  f.setPointSizeF(points);
  return f;
}

}  // namespace

QFont node_label_font() { return small_font(8); }

QColor heat_color(double ms, double max_ms) {
  double t = max_ms > 0 ? std::clamp(ms / max_ms, 0.0, 1.0) : 0.0;
  // Hue from yellow (0.16) to red (0.0), saturation up, value slightly down.
  return QColor::fromHsvF(0.16 * (1 - t), 0.12 + 0.88 * t, 1.0 - 0.3 * t);
}

QColor text_color_on(const QColor& fill) { return fill.lightness() < 110 ? Qt::white : Qt::black; }

// ---- NodeItem ----

NodeItem::NodeItem(NodeId node, const QRectF& rect, QString label)
    : node_(node), rect_(rect), label_(std::move(label)) {
  setFlag(ItemIsSelectable);
  setZValue(2);
  setCacheMode(DeviceCoordinateCache);  // panning repaints from the cache
}

void NodeItem::set_fill(const QColor& fill) {
  if (fill == fill_) return;
  fill_ = fill;
  update();
}

void NodeItem::set_pinned(bool pinned) {
  if (pinned == pinned_) return;
  pinned_ = pinned;
  update();
}

void NodeItem::set_detail(const QString& detail) {
  if (detail == detail_) return;
  detail_ = detail;
  update();
}

QRectF NodeItem::boundingRect() const { return rect_.adjusted(-3, -3, 3, 3); }

namespace {

constexpr double kFarLod = 0.15;  // below this scale a box is a few pixels

// Far out a box is under a pixel: a cosmetic (1 px) outline in its colour keeps it visible.
QPen node_pen(bool pinned, const QColor& fill, double lod) {
  return pinned          ? QPen(Qt::black, 3)
         : lod < kFarLod ? QPen(fill == Qt::white ? QColor(0x77, 0x77, 0x77) : fill.darker(130), 0)
                         : QPen(QColor(0x33, 0x33, 0x33));
}

const QPen kSelectedPen(QColor(0xff, 0x6d, 0x00), 3);

}  // namespace

OverviewPicture::Box NodeItem::overview_box() const {
  if (isSelected()) return {rect_.adjusted(-2, -2, 2, 2), fill_, kSelectedPen};
  return {rect_, fill_, node_pen(pinned_, fill_, 0)};
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = lod_of(painter, option);
  painter->setPen(node_pen(pinned_, fill_, lod));
  painter->setBrush(fill_);
  painter->drawRect(rect_);
  if (isSelected()) {
    painter->setPen(kSelectedPen);
    painter->setBrush(Qt::NoBrush);
    painter->drawRect(rect_.adjusted(-2, -2, 2, 2));
  }
  if (lod < kTextLod) return;
  QFont font = node_label_font();
  painter->setFont(font);
  painter->setPen(text_color_on(fill_));
  const double width = rect_.width() - 6;
  if (detail_.isEmpty()) {
    painter->drawText(rect_, Qt::AlignCenter, QFontMetricsF(font).elidedText(label_, Qt::ElideRight, width));
    return;
  }
  const QRectF top(rect_.left(), rect_.top() + 1, rect_.width(), rect_.height() * 0.55);
  const QRectF bottom(rect_.left(), top.bottom() - 2, rect_.width(), rect_.bottom() - top.bottom() + 1);
  painter->drawText(top, Qt::AlignCenter, QFontMetricsF(font).elidedText(label_, Qt::ElideRight, width));
  QFont small = small_font(6.5);
  painter->setFont(small);
  painter->drawText(bottom, Qt::AlignCenter, QFontMetricsF(small).elidedText(detail_, Qt::ElideRight, width));
}

// ---- ScopeItem ----

ScopeItem::ScopeItem(int scope, const QRectF& rect, QString title, int nodes)
    : scope_(scope), rect_(rect), title_(std::move(title)), nodes_(nodes) {
  setFlag(ItemIsSelectable);
  setZValue(2);
  setCacheMode(DeviceCoordinateCache);
}

void ScopeItem::set_cost(double ms, double share, int kernels,
                         std::vector<std::pair<QString, double>> backend_ms) {
  costed_ = !backend_ms.empty();
  ms_ = ms;
  share_ = share;
  kernels_ = kernels;
  backend_ms_ = std::move(backend_ms);
  update();
}

QString ScopeItem::text() const {
  QString s = QString("%1 · %2 nodes").arg(title_).arg(nodes_);
  if (costed_)
    s += QString(" · %1 ms · %2% · %3 kernel%4")
             .arg(ms_, 0, 'f', 3)
             .arg(100 * share_, 0, 'f', 1)
             .arg(kernels_)
             .arg(kernels_ == 1 ? "" : "s");
  return s;
}

QRectF ScopeItem::boundingRect() const { return rect_.adjusted(-3, -3, 3, 3); }

void ScopeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = lod_of(painter, option);
  painter->setPen(
      QPen(isSelected() ? QColor(0xff, 0x6d, 0x00) : QColor(0x44, 0x44, 0x66), isSelected() ? 3 : 1.5));
  painter->setBrush(QColor(0xee, 0xf0, 0xf8));
  painter->drawRoundedRect(rect_, 6, 6);
  // The backend mix: one segment per backend, as wide as its share of the scope's time.
  const QRectF bar(rect_.left() + 6, rect_.bottom() - 14, rect_.width() - 12, 8);
  double total = 0;
  for (const auto& [backend, ms] : backend_ms_) total += ms;
  if (total > 0) {
    double x = bar.left();
    painter->setPen(Qt::NoPen);
    for (const auto& [backend, ms] : backend_ms_) {
      double w = bar.width() * ms / total;
      painter->setBrush(backend.isEmpty() ? QColor(Qt::white) : backend_color(backend));
      painter->drawRect(QRectF(x, bar.top(), w, bar.height()));
      x += w;
    }
  }
  if (lod < kTextLod) {  // zoomed out: one line at a fixed on-screen size while the box is tall enough
    if (rect_.height() * lod < 14) return;
    QFont font = small_font(7 / lod);
    painter->setFont(font);
    painter->setPen(Qt::black);
    QString line = title_.section('/', -1);
    if (costed_) line += QString(" · %1 ms").arg(ms_, 0, 'f', 2);
    const QRectF area = rect_.adjusted(4, 2, -4, -(rect_.bottom() - bar.top()));
    painter->drawText(area, Qt::AlignCenter,
                      QFontMetricsF(font).elidedText(line, Qt::ElideRight, area.width()));
    return;
  }
  QFont bold = small_font(8.5);
  bold.setBold(true);
  QFont plain = small_font(7.5);
  const QRectF title_rect(rect_.left() + 8, rect_.top() + 3, rect_.width() - 16, 17);
  painter->setPen(Qt::black);
  painter->setFont(bold);
  painter->drawText(title_rect, Qt::AlignLeft | Qt::AlignVCenter,
                    QFontMetricsF(bold).elidedText("▸ " + title_, Qt::ElideLeft, title_rect.width()));
  painter->setFont(plain);
  QString line = QString("%1 nodes").arg(nodes_);
  if (costed_)
    line = QString("%1 ms · %2% · %3 kernel%4 · %5 nodes")
               .arg(ms_, 0, 'f', 3)
               .arg(100 * share_, 0, 'f', 1)
               .arg(kernels_)
               .arg(kernels_ == 1 ? "" : "s")
               .arg(nodes_);
  painter->drawText(QRectF(rect_.left() + 8, rect_.top() + 20, rect_.width() - 16, 15),
                    Qt::AlignLeft | Qt::AlignVCenter, line);
}

// ---- KernelItem ----

KernelItem::KernelItem(const QRectF& box, bool outlined, QString label, const QColor& color)
    : box_(outlined ? box.adjusted(-6, -6, 6, 6) : box),
      outlined_(outlined),
      label_(std::move(label)),
      color_(color) {
  setZValue(outlined ? 1 : 3);
  QFontMetricsF metrics(small_font(7));
  label_rect_ =
      QRectF(box_.right() + 4, box_.top() - 2, metrics.horizontalAdvance(label_) + 4, metrics.height() + 2);
  setAcceptedMouseButtons(Qt::NoButton);  // clicks go to the nodes below
}

QRectF KernelItem::boundingRect() const {
  return (outlined_ ? box_.adjusted(-1, -1, 1, 1) : QRectF()).united(label_rect_);
}

OverviewPicture::Box KernelItem::overview_box() const {
  return {box_, QColor(), QPen(color_.darker(160), 2, Qt::DashLine)};
}

void KernelItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const double lod = lod_of(painter, option);
  if (outlined_) {
    painter->setPen(overview_box().pen);
    painter->setBrush(Qt::NoBrush);
    painter->drawRect(box_);
  }
  if (lod < kTextLod) return;
  painter->setFont(small_font(7));
  painter->setPen(color_.darker(220));
  painter->drawText(label_rect_, Qt::AlignLeft | Qt::AlignVCenter, label_);
}

}  // namespace collage
