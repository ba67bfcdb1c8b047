#include "widgets/profile_view.h"

#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "app/explorer/model/backend_colors.h"

namespace collage {

namespace {
constexpr int kLaneHeight = 22;
constexpr int kMinLeftMargin = 110;  // lane names
constexpr int kAxisHeight = 18;
}  // namespace

ProfileTimeline::ProfileTimeline(ProfileModel* model, QWidget* parent)
    : QWidget(parent), model_(model), left_margin_(kMinLeftMargin) {
  setMinimumHeight(kAxisHeight + 2 * kLaneHeight);
  connect(model_, &QAbstractItemModel::modelReset, this, [this] {
    lanes_.clear();
    for (int r = 0; r < model_->rowCount(); ++r) {
      QString backend = QString::fromStdString(model_->kernel(r).backend);
      if (!lanes_.contains(backend)) lanes_ << backend;
    }
    left_margin_ = kMinLeftMargin;
    for (const QString& lane : lanes_)
      left_margin_ = std::max(left_margin_, fontMetrics().horizontalAdvance(lane) + 12);
    selected_ = -1;
    setMinimumHeight(kAxisHeight + std::max<int>(2, static_cast<int>(lanes_.size())) * kLaneHeight + 4);
    updateGeometry();
    update();
  });
}

QSize ProfileTimeline::sizeHint() const {
  return {600, kAxisHeight + std::max<int>(2, static_cast<int>(lanes_.size())) * kLaneHeight + 4};
}

void ProfileTimeline::set_selected(int row) {
  selected_ = row;
  update();
}

int ProfileTimeline::lane_of(int row) const {
  return static_cast<int>(lanes_.indexOf(QString::fromStdString(model_->kernel(row).backend)));
}

double ProfileTimeline::span_ms() const {
  double span = model_->report().e2e_median_ms;
  for (const KernelProfile& k : model_->report().kernels) span = std::max(span, k.start_ms + k.in_run_ms);
  return span > 0 ? span : 1;
}

QRectF ProfileTimeline::bar_rect(int row) const {
  const KernelProfile& k = model_->kernel(row);
  double scale = (width() - left_margin_ - 8) / span_ms();
  double x = left_margin_ + k.start_ms * scale;
  double w = std::max(1.0, k.in_run_ms * scale);  // the shortest kernels still show
  return QRectF(x, kAxisHeight + lane_of(row) * kLaneHeight + 3, w, kLaneHeight - 6);
}

int ProfileTimeline::row_at(QPoint pos) const {
  // Short kernels' bars (1 px at least) may touch: the bar whose centre is nearest wins.
  int best = -1;
  double best_distance = 0;
  for (int r = 0; r < model_->rowCount(); ++r) {
    QRectF bar = bar_rect(r);
    if (!bar.adjusted(-1, 0, 1, 0).contains(pos)) continue;
    double distance = std::abs(bar.center().x() - pos.x());
    if (best < 0 || distance < best_distance) best = r, best_distance = distance;
  }
  return best;
}

void ProfileTimeline::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (model_->rowCount() == 0) {
    p.drawText(rect(), Qt::AlignCenter, "Profile a placement to see its kernels on a timeline.");
    return;
  }
  // Axis: ticks at round milliseconds.
  double span = span_ms(), scale = (width() - left_margin_ - 8) / span;
  double step = 1e-3;
  while (span / step > 10) step *= (QString::number(step).contains('2') ? 2.5 : 2);
  p.setPen(palette().mid().color());
  for (double t = 0; t <= span; t += step) {
    int x = left_margin_ + static_cast<int>(t * scale);
    p.drawLine(x, kAxisHeight - 4, x, height());
    p.drawText(x + 2, kAxisHeight - 5, QString("%1 ms").arg(t, 0, 'g', 3));
  }
  p.setPen(palette().text().color());
  for (int lane = 0; lane < lanes_.size(); ++lane)
    p.drawText(QRect(4, kAxisHeight + lane * kLaneHeight, left_margin_ - 8, kLaneHeight),
               Qt::AlignVCenter | Qt::AlignLeft, lanes_[lane]);
  for (int r = 0; r < model_->rowCount(); ++r) {
    QRectF bar = bar_rect(r);
    p.fillRect(bar, backend_color(QString::fromStdString(model_->kernel(r).backend)));
    if (r == selected_) {
      p.setPen(QPen(palette().highlight().color(), 2));
      p.drawRect(bar.adjusted(-1, -2, 1, 2));
      p.setPen(palette().text().color());
    }
  }
}

void ProfileTimeline::mousePressEvent(QMouseEvent* event) {
  int row = row_at(event->pos());
  if (row >= 0) {
    set_selected(row);
    emit kernel_clicked(row);
  }
}

bool ProfileTimeline::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    int row = row_at(help->pos());
    if (row < 0) {
      QToolTip::hideText();
      return true;
    }
    const KernelProfile& k = model_->kernel(row);
    QToolTip::showText(help->globalPos(),
                       QString("%1 (%2)\nstart %3 ms, in run %4 ms, isolated %5 ms")
                           .arg(QString::fromStdString(k.label), QString::fromStdString(k.backend))
                           .arg(k.start_ms, 0, 'f', 3)
                           .arg(k.in_run_ms, 0, 'f', 3)
                           .arg(k.isolated_ms, 0, 'f', 3));
    return true;
  }
  return QWidget::event(event);
}

ProfilePanel::ProfilePanel(QWidget* parent)
    : QWidget(parent),
      summary_(new QLabel(this)),
      model_(new ProfileModel(this)),
      view_(new QTableView(this)) {
  timeline_ = new ProfileTimeline(model_, this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  view_->setModel(model_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setWordWrap(false);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(timeline_);
  split->addWidget(view_);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(summary_);
  layout->addWidget(split, 1);
  connect(view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (!current.isValid()) return;
            timeline_->set_selected(current.row());
            emit kernel_selected(current.row());
          });
  connect(timeline_, &ProfileTimeline::kernel_clicked, this,
          [this](int row) { view_->selectRow(row); });  // the table's selection reports it
}

void ProfilePanel::set_report(const ProfileReport& r) {
  model_->set_report(r);
  view_->resizeColumnsToContents();
  // A region's label can be long: cap it so the numbers stay in view (the tooltip has it whole).
  view_->setColumnWidth(ProfileModel::kKernel, std::min(view_->columnWidth(ProfileModel::kKernel), 260));
  summary_->setText(
      QString("end to end %1 ms (median of %2 profiled runs, %3 thread(s)); kernels in the run %4 ms, "
              "isolated %5 ms; additive error %6 ms = kernels %7 ms + outside kernels %8 ms; %9 GFLOP at %10 "
              "GFLOP/s")
          .arg(r.e2e_median_ms, 0, 'f', 3)
          .arg(r.runs.size())
          .arg(r.threads)
          .arg(r.kernel_sum_ms, 0, 'f', 3)
          .arg(r.isolated_sum_ms, 0, 'f', 3)
          .arg(r.additive_error_ms(), 0, 'f', 3)
          .arg(r.kernel_sum_ms - r.isolated_sum_ms, 0, 'f', 3)
          .arg(r.outside_kernels_ms(), 0, 'f', 3)
          .arg(r.flops * 1e-9, 0, 'g', 3)
          .arg(r.gflop_per_s(), 0, 'f', 1));
}

void ProfilePanel::clear() {
  model_->clear();
  summary_->clear();
}

QString ProfilePanel::summary() const { return summary_->text(); }

}  // namespace collage
