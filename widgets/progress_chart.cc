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
  best_generation_ = new QtCharts::QLineSeries(chart);
  best_generation_->setName("refine: best per generation");
  mean_generation_ = new QtCharts::QLineSeries(chart);
  mean_generation_->setName("refine: mean per generation");
  chart->addSeries(best_generation_);
  chart->addSeries(mean_generation_);
  x_axis_ = new QtCharts::QValueAxis(chart);
  y_axis_ = new QtCharts::QValueAxis(chart);
  x_axis_->setTitleText("seconds (search) / generation (refine)");
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
  for (QtCharts::QLineSeries* s : {series_, best_generation_, mean_generation_}) {
    s->attachAxis(x_axis_);
    s->attachAxis(y_axis_);
  }
  chart->legend()->setAlignment(Qt::AlignBottom);
  setRenderHint(QPainter::Antialiasing);
  clear();
}

void ProgressChart::clear() {
  series_->clear();
  best_generation_->clear();
  mean_generation_->clear();
  max_x_ = 1;
  max_y_ = 1;
  x_axis_->setRange(0, max_x_);
  y_axis_->setRange(0, max_y_);
}

int ProgressChart::point_count() const {
  return series_->count() + best_generation_->count() + mean_generation_->count();
}

void ProgressChart::add_generation(int generation, double best_ms, double mean_ms) {
  best_generation_->append(generation, best_ms);
  mean_generation_->append(generation, mean_ms);
  max_x_ = std::max(max_x_, generation * 1.1);
  max_y_ = std::max(max_y_, std::max(best_ms, mean_ms) * 1.2);
  x_axis_->setRange(0, max_x_);
  y_axis_->setRange(0, max_y_);
}

void ProgressChart::add_point(double seconds, double best_ms) {
  series_->append(seconds, best_ms);
  max_x_ = std::max(max_x_, seconds * 1.1);
  max_y_ = std::max(max_y_, best_ms * 1.2);
  x_axis_->setRange(0, max_x_);
  y_axis_->setRange(0, max_y_);
}

}  // namespace collage
