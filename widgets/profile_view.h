// The profile of a real run (ProfileReport, core/search/profile_report.h) shown from its
// table model (ProfileModel, app/explorer/model/profile_model.h): a timeline drawn from
// that model (ProfileTimeline: a Gantt chart with one lane per backend, one bar per kernel
// at its median start offset, as long as its median in-run time, coloured by backend) and
// the panel holding it over the table (ProfilePanel). Selecting a bar or a row selects the
// kernel in both and reports it.
#pragma once

#include <QWidget>

#include "app/explorer/model/profile_model.h"

class QLabel;
class QTableView;

namespace collage {

class ProfileTimeline : public QWidget {
  Q_OBJECT
 public:
  explicit ProfileTimeline(ProfileModel* model, QWidget* parent = nullptr);
  void set_selected(int row);    // -1: none
  int row_at(QPoint pos) const;  // the kernel whose bar is under `pos`, -1 if none
  QRectF bar_rect(int row) const;
  QSize sizeHint() const override;

 signals:
  void kernel_clicked(int row);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;  // tool tips

 private:
  int lane_of(int row) const;
  double span_ms() const;
  ProfileModel* model_;
  QStringList lanes_;  // backends in order of first appearance
  int left_margin_;    // wide enough for the longest lane name
  int selected_ = -1;
};

class ProfilePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ProfilePanel(QWidget* parent = nullptr);
  void set_report(const ProfileReport& report);
  void clear();

  ProfileModel* model() const { return model_; }
  ProfileTimeline* timeline() const { return timeline_; }
  QTableView* view() const { return view_; }
  QString summary() const;

 signals:
  void kernel_selected(int row);

 private:
  QLabel* summary_;
  ProfileModel* model_;
  ProfileTimeline* timeline_;
  QTableView* view_;
};

}  // namespace collage
