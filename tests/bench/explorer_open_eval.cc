// How fast the explorer opens a model and how fluid its graph view stays (not part of
// the suite; tests/bench/explorer_open_bench.sh runs it). Each round opens MODEL in a fresh
// 1400×900 main window, as File ▸ Open does, and times:
//   loaded  open_model -> the load job's end (import and the full layout, off the GUI thread)
//   shown   open_model -> the opening view on screen (its collapse depth laid out, fitted)
//   gap     the longest the GUI thread did not answer while opening (a 5 ms timer's lateness)
// then paints frames synchronously (viewport repaint) after zoom steps and pans, at the
// opening view and with every scope expanded and fitted (all nodes on screen: the worst
// case; once its overview image is drawn), and prints each side's median and longest frame.
// usage: collage_explorer_open_eval MODEL.onnx [ROUNDS]
#include <QApplication>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "app/explorer/main_window.h"
#include "core/ir/statistics.h"
#include "widgets/graph_view.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The event loop's longest silence: a 5 ms timer that notes how late each tick is.
struct GapMeter {
  QTimer timer;
  Clock::time_point last = Clock::now();
  double longest_ms = 0;
  GapMeter() {
    QObject::connect(&timer, &QTimer::timeout, [this] {
      longest_ms = std::max(longest_ms, ms_since(last));
      last = Clock::now();
    });
    timer.start(5);
  }
};

struct Frames {
  std::vector<double> ms;
  double median() const { return collage::median(ms); }
  double longest() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
};

// Zooms in 14.5× and out again around the centre and pans a third of the view each way,
// painting each frame.
Frames paint_frames(collage::GraphView* view) {
  Frames f;
  auto frame = [&] {
    auto t0 = Clock::now();
    view->viewport()->repaint();
    f.ms.push_back(ms_since(t0));
  };
  for (int i = 0; i < 12; ++i) view->zoom_by(1.25), frame();  // ×14.5: from fitted to readable boxes
  for (int i = 0; i < 12; ++i) view->zoom_by(0.8), frame();
  for (int i = 0; i < 12; ++i) {
    QRectF r = view->visible_scene_rect();
    const double dx = (i % 4 < 2 ? 1 : -1) * r.width() / 3, dy = (i % 2 ? 1 : -1) * r.height() / 3;
    view->centerOn(r.center() + QPointF(dx, dy));
    frame();
  }
  return f;
}

bool wait_layout(collage::GraphView* view) {
  QSignalSpy relaid(view, &collage::GraphView::layout_changed);
  return !view->layout_pending() || relaid.wait(120000);
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: collage_explorer_open_eval MODEL.onnx [ROUNDS]\n");
    return 2;
  }
  const QString model = argv[1];
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  std::vector<double> loaded, shown, gaps, overview_ms;
  Frames opening, expanded;
  int nodes = 0, depth = 0, boxes = 0;
  bool whole = true;
  for (int round = 0; round < rounds; ++round) {
    collage::MainWindow window;
    window.resize(1400, 900);
    window.show();
    if (!QTest::qWaitForWindowExposed(&window)) return 2;
    collage::ExplorerController* c = window.controller();
    collage::GraphView* view = window.graph_view();
    QSignalSpy finished(c, &collage::ExplorerController::job_finished);
    QSignalSpy failed(c, &collage::ExplorerController::job_failed);
    GapMeter gap;
    const auto t0 = Clock::now();
    window.open_model(model);
    if (!finished.wait(120000) && finished.isEmpty()) {
      std::fprintf(stderr, "%s: did not open (%s)\n", argv[1], failed.isEmpty() ? "timeout" : "load failed");
      return 2;
    }
    loaded.push_back(ms_since(t0));
    if (!wait_layout(view)) return 2;
    shown.push_back(ms_since(t0));
    gaps.push_back(gap.longest_ms);
    nodes = c->graph()->num_nodes();
    depth = view->opening_depth();
    whole = view->opened_whole();
    boxes = view->scope_box_count();
    for (double ms : paint_frames(view).ms) opening.ms.push_back(ms);
    view->expand_all();
    if (!wait_layout(view)) return 2;
    view->fit();
    // Zoomed out on many items the view paints one overview image, drawn off the GUI thread
    // (GraphView::kOverviewItems); the items are painted until it is ready.
    if (view->overview_shown()) {
      QSignalSpy drawn(view, &collage::GraphView::overview_drawn);
      const auto t1 = Clock::now();
      view->viewport()->repaint();
      if (!drawn.wait(30000)) return 2;
      overview_ms.push_back(ms_since(t1));
    }
    for (double ms : paint_frames(view).ms) expanded.ms.push_back(ms);
  }
  std::printf(
      "%s: %d nodes; opens at depth %d (%s, %d boxes); loaded %.0f ms, shown %.0f ms (medians of %d), "
      "longest GUI gap %.0f ms; frames at opening median %.1f ms, longest %.1f ms; all %d nodes expanded "
      "median %.1f ms, longest %.1f ms (overview image drawn in %.0f ms)\n",
      argv[1], nodes, depth, whole ? "whole graph fitted" : "legible zoom on its start", boxes,
      collage::median(loaded), collage::median(shown), rounds, *std::max_element(gaps.begin(), gaps.end()),
      opening.median(), opening.longest(), nodes, expanded.median(), expanded.longest(),
      overview_ms.empty() ? 0.0 : collage::median(overview_ms));
  return 0;
}
