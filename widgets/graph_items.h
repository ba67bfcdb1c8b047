// The graph view's scene items, each drawing itself with level of detail: below
// a zoom threshold text is skipped (a 10k-node graph zoomed out paints boxes
// only). NodeItem: one node (fill, op label, pinned border). ScopeItem: one
// collapsed name scope (path, node count, total kernel time and share, a bar of
// its backend mix proportional to time). KernelItem: a multi-node kernel's dashed
// outline and label ("onednn 0.412 ms · 3.1%"); a one-node kernel's label is the
// NodeItem's second line.
// Edges are plain QGraphicsPathItems. Items know no graph: the view sets what
// they show.
#pragma once

#include <QColor>
#include <QFont>
#include <QGraphicsItem>
#include <QPen>
#include <QString>
#include <utility>
#include <vector>

#include "core/ir/graph.h"
#include "widgets/graph_overview.h"

namespace collage {

// The cost heatmap's colour of `ms` on the scale 0..max_ms (pale yellow to dark red).
QColor heat_color(double ms, double max_ms);
// Black or white, whichever reads on `fill`.
QColor text_color_on(const QColor& fill);

// Below this scale (level of detail) the items draw no text.
constexpr double kTextLod = 0.45;

// The font of a node box's label (its first line).
QFont node_label_font();

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  NodeItem(NodeId node, const QRectF& rect, QString label);
  int type() const override { return Type; }
  NodeId node() const { return node_; }
  QRectF rect() const { return rect_; }
  QColor fill() const { return fill_; }
  const QString& label() const { return label_; }
  void set_fill(const QColor& fill);
  void set_pinned(bool pinned);
  void set_detail(const QString& detail);  // a second, smaller line ("" none): its kernel's cost
  const QString& detail() const { return detail_; }
  OverviewPicture::Box overview_box() const;  // as painted far out
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  NodeId node_;
  QRectF rect_;
  QString label_;
  QString detail_;
  QColor fill_ = Qt::white;
  bool pinned_ = false;
};

class ScopeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  ScopeItem(int scope, const QRectF& rect, QString title, int nodes);
  int type() const override { return Type; }
  int scope() const { return scope_; }
  // Total time, its share of the placement and the time per backend (empty: no placement).
  void set_cost(double ms, double share, int kernels, std::vector<std::pair<QString, double>> backend_ms);
  QString text() const;  // what the box reads, in one line
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  int scope_;
  QRectF rect_;
  QString title_;
  int nodes_;
  bool costed_ = false;
  double ms_ = 0, share_ = 0;
  int kernels_ = 0;
  std::vector<std::pair<QString, double>> backend_ms_;
};

class KernelItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  // `box`: the kernel's node boxes united; outlined when `outlined`, labelled at its right.
  KernelItem(const QRectF& box, bool outlined, QString label, const QColor& color);
  int type() const override { return Type; }
  bool outlined() const { return outlined_; }
  OverviewPicture::Box overview_box() const;  // the outline, as painted
  const QString& label() const { return label_; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  QRectF box_;
  bool outlined_;
  QString label_;
  QColor color_;
  QRectF label_rect_;
};

}  // namespace collage
