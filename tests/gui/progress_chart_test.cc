// QtTest, no window: the refine chart plots a generation's best and mean fitness only
// when they exist (a generation with no measured genome has neither), and the
// per-backend bar reports "not shown" as no value.
#include "widgets/progress_chart.h"

#include <QtTest>

using collage::ProgressChart;

class ProgressChartTest : public QObject {
  Q_OBJECT

 private slots:
  void generations_without_a_fitness_plot_nothing() {
    ProgressChart chart;
    chart.add_generation(1, std::nullopt, std::nullopt);  // nothing measured yet
    QCOMPARE(chart.best_points(), 0);
    QCOMPARE(chart.mean_points(), 0);
    chart.add_generation(2, 1.5, std::nullopt);  // a best so far, this generation all failed
    QCOMPARE(chart.best_points(), 1);
    QCOMPARE(chart.mean_points(), 0);
    chart.add_generation(3, 1.25, 2.0);
    QCOMPARE(chart.best_points(), 2);
    QCOMPARE(chart.mean_points(), 1);
    QCOMPARE(chart.point_count(), 3);
    chart.clear_refine();
    QCOMPARE(chart.best_points() + chart.mean_points(), 0);
  }

  void bars_of_unknown_categories_and_backends_have_no_value() {
    ProgressChart chart;
    QVERIFY(!chart.bar_ms("op-level", "native").has_value());
    collage::Placement p;
    collage::PlacedKernel measured, unknown;
    measured.nodes = {0};
    measured.backend = "native";
    measured.cost = collage::Cost::of_ms(0.5);
    unknown.nodes = {1};
    unknown.backend = "onednn";  // no cost: no time to draw
    p.kernels = {measured, unknown};
    chart.show_placement("op-level", p);
    std::optional<double> native = chart.bar_ms("op-level", "native");
    QVERIFY(native.has_value());
    QCOMPARE(*native, 0.5);
    QVERIFY(!chart.bar_ms("op-level", "onednn").has_value());
    QVERIFY(!chart.bar_ms("refined", "native").has_value());
  }
};

QTEST_MAIN(ProgressChartTest)
#include "progress_chart_test.moc"
