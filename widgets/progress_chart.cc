#include "widgets/progress_chart.h"

#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>

namespace collage {

// Passing the chart to the base constructor: setChart() would release (not delete) the default chart.
ProgressChart::ProgressChart(QWidget* parent) : QtCharts::QChartView(new QtCharts::QChart(), parent) {
  QtCharts::QChart* chart = this->chart();
  series_ = new QtCharts::QLineSeries(chart);
  series_->setName("best predicted latency (ms)");
  series_->setPointsVisible(true);
  chart->addSeries(series_);
  x_axis_ = new QtCharts::QValueAxis(chart);
  y_axis_ = new QtCharts::QValueAxis(chart);
  x_axis_->setTitleText("seconds");
  y_axis_->setTitleText("ms");
  x_axis_->setLabelFormat("%.1f");
  y_axis_->setLabelFormat("%.1f");
  setMinimumWidth(420);
  QFont small;
  small.setPointSizeF(7);  // docked charts are short: default fonts elide every tick label
  for (QtCharts::QValueAxis* axis : {x_axis_, y_axis_}) {
    axis->setLabelsFont(small);
    axis->setTitleFont(small);
  }
  chart->legend()->setFont(small);
  chart->setMargins(QMargins(2, 2, 2, 2));
  chart->addAxis(x_axis_, Qt::AlignBottom);
  chart->addAxis(y_axis_, Qt::AlignLeft);
  series_->attachAxis(x_axis_);
  series_->attachAxis(y_axis_);
  chart->legend()->setAlignment(Qt::AlignBottom);
  setRenderHint(QPainter::Antialiasing);
  clear();
}

void ProgressChart::clear() {
  series_->clear();
  max_x_ = 1;
  max_y_ = 1;
  x_axis_->setRange(0, max_x_);
  y_axis_->setRange(0, max_y_);
}

int ProgressChart::point_count() const { return series_->count(); }

void ProgressChart::add_point(double seconds, double best_ms) {
  series_->append(seconds, best_ms);
  max_x_ = std::max(max_x_, seconds * 1.1);
  max_y_ = std::max(max_y_, best_ms * 1.2);
  x_axis_->setRange(0, max_x_);
  y_axis_->setRange(0, max_y_);
}

}  // namespace collage
