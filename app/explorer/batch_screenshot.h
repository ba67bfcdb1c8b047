// Batch mode (`--screenshot PATH`): drives the window through the steps asked for, in
// this order: load the model, load `--placement` (and its costs from the cost DB),
// `--tune`, `--refine`, `--profile` (the profile dock with the timeline), `--diff
// OTHER.json` (the diff dock against OTHER, changed nodes highlighted), `--select NODE`
// (the inspector on that node, "Why here" included once costs are known; or on a name scope
// such as /features/features.3, its box shown and selected),
// `--collapse-depth N` (name scopes of depth N collapsed, 0: all expanded, instead of the
// depth the view opens at),
// `--heatmap` (coloured by kernel time), `--open-body KEY` (with --select NODE: the picture is
// then the window of that node's body KEY, coloured by its placement);
// then saves the window, `--size` big (default 1600x1000, a desktop window whatever the
// screen: the offscreen platform's is 800x600), as PNG and quits: status 0, or 2 with the error on stderr (as
// the CLI) when a step failed (the picture is still saved, and no later job runs).
#pragma once

#include <QObject>
#include <QString>

namespace collage {

class MainWindow;
struct JobFailure;
struct JobReport;

struct BatchOptions {
  static constexpr int kDefaultWidth = 1600, kDefaultHeight = 1000;
  QString screenshot;                                  // PNG path
  int width = kDefaultWidth, height = kDefaultHeight;  // the window's size in the picture
  QString placement;                                   // load after the model (empty: none)
  bool tune = false;
  bool refine = false;  // implies tune
  bool profile = false;
  QString diff;             // compare the final placement with this file (empty: none)
  QString diff_bucket;      // or with this shape bucket of the loaded placement file ("seq=128")
  QString select;           // node name to select last, so the inspector shows it (empty: none)
  int collapse_depth = -1;  // >= 1: scopes of this depth collapsed; 0: expanded; < 0: as opened
  bool heatmap = false;     // colour by kernel time (with its legend) instead of by backend
  QString open_body;        // with select: picture this body of the selected node instead
};

class BatchScreenshot : public QObject {
  Q_OBJECT
 public:
  // Create after the window (its handlers run first) and before the model is opened.
  BatchScreenshot(MainWindow* window, BatchOptions options);

 private:
  void on_finished(const JobReport& report);
  void on_failed(const JobFailure& failure);
  void after_costs();      // tune, else the later steps
  void after_placement();  // profile, then diff, then shoot
  void after_profile();
  void shoot(const QString& failure);
  void laid_out();  // the graph view showed a new layout
  void save();

  MainWindow* window_;
  BatchOptions options_;
  bool done_ = false;    // shoot() ran
  bool failed_ = false;  // a step failed: exit status 2
  bool saving_ = false;
  int pending_node_ = -1;  // --select's node or scope: selected just before the picture
  int pending_scope_ = -1;
};

}  // namespace collage
