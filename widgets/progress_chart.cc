#include "widgets/progress_chart.h"

#include <QHBoxLayout>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalStackedBarSeries>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>
#include <set>

#include "app/explorer/model/backend_colors.h"

namespace collage {

namespace {

using namespace QtCharts;

QFont small_font() {
  QFont small;
  small.setPointSizeF(7);  // docked charts are short: default fonts elide every tick label
  return small;
}

QChartView* make_view(const QString& title, QWidget* parent) {
  // Passing the chart to the constructor: setChart() would release (not delete) the default chart.
  auto* view = new QChartView(new QChart(), parent);
  QChart* chart = view->chart();
  chart->setTitle(title);
  chart->setTitleFont(small_font());
  chart->legend()->setFont(small_font());
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(2, 2, 2, 2));
  view->setRenderHint(QPainter::Antialiasing);
  view->setMinimumWidth(220);
  return view;
}

QValueAxis* add_axis(QChart* chart, const QString& title, const char* format, Qt::Alignment where) {
  auto* axis = new QValueAxis(chart);
  axis->setTitleText(title);
  axis->setLabelFormat(format);
  axis->setLabelsFont(small_font());
  axis->setTitleFont(small_font());
  chart->addAxis(axis, where);
  return axis;
}

QLineSeries* add_line(QChart* chart, const QString& name, QValueAxis* x, QValueAxis* y) {
  auto* series = new QLineSeries(chart);
  series->setName(name);
  chart->addSeries(series);
  series->attachAxis(x);
  series->attachAxis(y);
  return series;
}

}  // namespace

ProgressChart::ProgressChart(QWidget* parent) : QWidget(parent) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);

  measure_view_ = make_view("Measuring", this);
  QChart* m = measure_view_->chart();
  measure_x_ = add_axis(m, "seconds", "%.1f", Qt::AlignBottom);
  measure_y_ = add_axis(m, "kernels", "%d", Qt::AlignLeft);
  measured_ = add_line(m, "kernels measured or from the cost DB", measure_x_, measure_y_);
  m->legend()->hide();

  refine_view_ = make_view("Refine (measured fitness)", this);
  QChart* r = refine_view_->chart();
  refine_x_ = add_axis(r, "generation", "%d", Qt::AlignBottom);
  refine_y_ = add_axis(r, "ms", "%.2f", Qt::AlignLeft);
  best_generation_ = add_line(r, "best", refine_x_, refine_y_);
  mean_generation_ = add_line(r, "mean", refine_x_, refine_y_);

  bar_view_ = make_view("Predicted time per backend", this);

  layout->addWidget(measure_view_, 1);
  layout->addWidget(refine_view_, 1);
  layout->addWidget(bar_view_, 1);
  clear();
}

void ProgressChart::clear() {
  measured_->clear();
  last_done_ = 0;
  measure_x_->setRange(0, 1);
  measure_y_->setRange(0, 4);  // whole kernels on the five ticks of "%d"
  measure_view_->chart()->setTitle("Measuring");
  categories_.clear();
  bar_ms_.clear();
  clear_refine();  // also rebuilds the bars
}

void ProgressChart::clear_refine() {
  best_generation_->clear();
  mean_generation_->clear();
  refine_max_x_ = 4;
  refine_max_y_ = 1;
  refine_x_->setRange(0, refine_max_x_);
  refine_x_->applyNiceNumbers();  // whole generations on the ticks
  refine_y_->setRange(0, refine_max_y_);
  auto refined = std::find(categories_.begin(), categories_.end(), "refined");
  if (refined != categories_.end()) {
    bar_ms_.erase(*refined);
    categories_.erase(refined);
  }
  rebuild_bars();
}

void ProgressChart::add_measure_progress(size_t done, size_t total, double elapsed_s) {
  if (total == 0) return;
  // At most ~200 points a run: tens of thousands of candidates must not slow the GUI thread.
  const bool last = done == total;
  if (!last && measured_->count() > 0 && done < last_done_ + std::max<size_t>(1, total / 200)) return;
  last_done_ = done;
  measured_->append(elapsed_s, static_cast<double>(done));
  measure_x_->setRange(0, std::max(1.0, elapsed_s * 1.1));
  measure_y_->setRange(0, static_cast<double>(std::max<size_t>(total, 4)));
  measure_y_->applyNiceNumbers();
  QString title;
  if (last)
    title = QString("Measured %1 kernels in %2 s").arg(total).arg(elapsed_s, 0, 'f', 1);
  else if (done == 0)
    title = QString("Measuring 0/%1 kernels").arg(total);
  else
    title = QString("Measuring %1/%2 kernels, %3 s, ETA %4 s")
                .arg(done)
                .arg(total)
                .arg(elapsed_s, 0, 'f', 1)
                .arg(elapsed_s / static_cast<double>(done) * static_cast<double>(total - done), 0, 'f', 0);
  measure_view_->chart()->setTitle(title);
}

void ProgressChart::add_generation(int generation, std::optional<double> best_ms,
                                   std::optional<double> mean_ms) {
  // A generation with no measured genome has no point: a 0 would plot as a very fast one.
  if (best_ms) {
    best_generation_->append(generation, *best_ms);
    refine_max_y_ = std::max(refine_max_y_, *best_ms * 1.2);
  }
  if (mean_ms) {
    mean_generation_->append(generation, *mean_ms);
    refine_max_y_ = std::max(refine_max_y_, *mean_ms * 1.2);
  }
  refine_max_x_ = std::max(refine_max_x_, generation * 1.1);
  refine_x_->setRange(0, refine_max_x_);
  refine_x_->applyNiceNumbers();
  refine_y_->setRange(0, refine_max_y_);
}

void ProgressChart::show_placement(const QString& category, const Placement& placement) {
  if (std::find(categories_.begin(), categories_.end(), category) == categories_.end())
    categories_.push_back(category);
  std::map<QString, double>& shares = bar_ms_[category];
  shares.clear();
  for (const auto& [backend, share] : time_per_backend(placement))
    shares[QString::fromStdString(backend)] = share.predicted_ms;
  rebuild_bars();
}

void ProgressChart::rebuild_bars() {
  QChart* chart = bar_view_->chart();
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
  if (categories_.empty()) return;
  std::set<QString> backends;
  for (const auto& [category, shares] : bar_ms_)
    for (const auto& [backend, ms] : shares) backends.insert(backend);
  auto* series = new QHorizontalStackedBarSeries(chart);
  double widest = 0;
  std::vector<double> totals(categories_.size(), 0);
  for (const QString& backend : backends) {
    auto* set = new QBarSet(backend, series);
    set->setColor(backend_color(backend));
    for (size_t i = 0; i < categories_.size(); ++i) {
      const auto& shares = bar_ms_[categories_[i]];
      auto it = shares.find(backend);
      double ms = it == shares.end() ? 0 : it->second;
      *set << ms;
      totals[i] += ms;
    }
    series->append(set);
  }
  for (double t : totals) widest = std::max(widest, t);
  chart->addSeries(series);
  auto* names = new QBarCategoryAxis(chart);
  for (const QString& c : categories_) names->append(c);
  names->setLabelsFont(small_font());
  chart->addAxis(names, Qt::AlignLeft);
  series->attachAxis(names);
  QValueAxis* ms = add_axis(chart, "predicted ms (Σ kernel costs)", "%.2f", Qt::AlignBottom);
  ms->setRange(0, std::max(widest * 1.05, 1e-3));
  series->attachAxis(ms);
}

int ProgressChart::point_count() const {
  return measured_->count() + best_generation_->count() + mean_generation_->count();
}

int ProgressChart::best_points() const { return best_generation_->count(); }
int ProgressChart::mean_points() const { return mean_generation_->count(); }

QString ProgressChart::measure_title() const { return measure_view_->chart()->title(); }

std::optional<double> ProgressChart::bar_ms(const QString& category, const QString& backend) const {
  // Read back from the chart itself: what is drawn, not what was asked for.
  const QList<QAbstractSeries*> series = bar_view_->chart()->series();
  auto* bars = series.isEmpty() ? nullptr : qobject_cast<QHorizontalStackedBarSeries*>(series.front());
  auto c = std::find(categories_.begin(), categories_.end(), category);
  if (!bars || c == categories_.end()) return std::nullopt;
  for (const QBarSet* set : bars->barSets())
    if (set->label() == backend) {
      double ms = set->at(static_cast<int>(c - categories_.begin()));
      if (ms > 0) return ms;  // another category's backend has a 0 segment here: not drawn
    }
  return std::nullopt;
}

}  // namespace collage
