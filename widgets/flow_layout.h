// A layout that places its items left to right and starts a new row when the next one would
// not fit the width: labelled chips (the backend legend) keep their whole text at any window
// width instead of being elided on one row. Height follows width (heightForWidth), so a parent
// box layout gives it as many rows as it needs.
#pragma once

#include <QLayout>
#include <QList>

namespace collage {

class FlowLayout : public QLayout {
 public:
  explicit FlowLayout(QWidget* parent, int spacing = 4);
  ~FlowLayout() override;

  void addItem(QLayoutItem* item) override;
  int count() const override;
  QLayoutItem* itemAt(int index) const override;
  QLayoutItem* takeAt(int index) override;
  Qt::Orientations expandingDirections() const override { return {}; }
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize minimumSize() const override;
  QSize sizeHint() const override;
  void setGeometry(const QRect& rect) override;

 private:
  // Lays the items out in `rect` (only measures when `apply` is false); returns the height used.
  int arrange(const QRect& rect, bool apply) const;

  QList<QLayoutItem*> items_;  // owned
};

}  // namespace collage
