// Best predicted latency over time while the op-level search runs.
#pragma once

#include <QtCharts/QChartView>

namespace QtCharts {
class QLineSeries;
class QValueAxis;
}  // namespace QtCharts

namespace collage {

class ProgressChart : public QtCharts::QChartView {
  Q_OBJECT

 public:
  explicit ProgressChart(QWidget* parent = nullptr);
  void clear();
  void add_point(double seconds, double best_ms);
  // Graph-level search: best and mean fitness per generation.
  void add_generation(int generation, double best_ms, double mean_ms);
  int point_count() const;

 private:
  QtCharts::QLineSeries* series_;
  QtCharts::QLineSeries* best_generation_;
  QtCharts::QLineSeries* mean_generation_;
  QtCharts::QValueAxis* x_axis_;
  QtCharts::QValueAxis* y_axis_;
  double max_x_ = 1, max_y_ = 1;
};

}  // namespace collage
