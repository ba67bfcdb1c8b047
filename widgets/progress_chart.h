// The "Search progress" panel: three small charts side by side.
//  * Measuring: kernels done over seconds; the title gives done/total, elapsed and an ETA
//    (elapsed / done × remaining: cost-DB hits are fast, so it is pessimistic early on).
//  * Refine: best and mean measured fitness per generation, on its own generation axis.
//  * Predicted time per backend: one stacked bar per placement shown ("op-level",
//    "refined"), a segment per backend from time_per_backend() (Σ kernel costs, no ε).
// It only draws what it is given.
#pragma once

#include <QString>
#include <QWidget>
#include <map>
#include <optional>
#include <vector>

#include "core/search/placement.h"

namespace QtCharts {
class QChart;
class QChartView;
class QLineSeries;
class QValueAxis;
}  // namespace QtCharts

namespace collage {

class ProgressChart : public QWidget {
  Q_OBJECT

 public:
  explicit ProgressChart(QWidget* parent = nullptr);
  void clear();         // a new tune: every chart emptied
  void clear_refine();  // a new refinement: its chart and its bar emptied
  // Measure-stage progress: `done` of `total` candidates after `elapsed_s` seconds.
  void add_measure_progress(size_t done, size_t total, double elapsed_s);
  // Graph-level search: best and mean fitness of one generation; each plotted only when
  // present (a generation may have no measured genome).
  void add_generation(int generation, std::optional<double> best_ms, std::optional<double> mean_ms);
  // The placement's predicted time per backend as the bar `category` (replaced if shown).
  void show_placement(const QString& category, const Placement& placement);

  int point_count() const;  // measuring and refine points
  QString measure_title() const;
  // The bar segment of `backend` in `category` (ms); none when not shown.
  std::optional<double> bar_ms(const QString& category, const QString& backend) const;
  int best_points() const;  // refine: generations with a best fitness plotted
  int mean_points() const;  // refine: generations with a mean fitness plotted

 private:
  void rebuild_bars();

  QtCharts::QChartView* measure_view_;
  QtCharts::QLineSeries* measured_;
  QtCharts::QValueAxis* measure_x_;
  QtCharts::QValueAxis* measure_y_;
  size_t last_done_ = 0;

  QtCharts::QChartView* refine_view_;
  QtCharts::QLineSeries* best_generation_;
  QtCharts::QLineSeries* mean_generation_;
  QtCharts::QValueAxis* refine_x_;
  QtCharts::QValueAxis* refine_y_;
  double refine_max_x_ = 4, refine_max_y_ = 1;

  QtCharts::QChartView* bar_view_;
  std::vector<QString> categories_;                      // bar order
  std::map<QString, std::map<QString, double>> bar_ms_;  // category -> backend -> ms
};

}  // namespace collage
