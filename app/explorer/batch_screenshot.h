// Batch mode (`--screenshot PATH [--placement P] [--tune [--refine]] [--collapse-depth N]`):
// drives the controller through load, the placement and its costs from the cost DB,
// tune and refine, collapses the graph's name scopes to depth N (after the view's
// relayout), saves the window as PNG once the last step is shown, and quits: status 0,
// or 2 with the error on stderr (as the CLI) when a step failed (the picture is still saved).
#pragma once

#include <QObject>
#include <QString>

namespace collage {

class MainWindow;
struct JobFailure;
struct JobReport;

class BatchScreenshot : public QObject {
  Q_OBJECT
 public:
  // Create after the window (its handlers run first) and before the model is opened.
  struct Steps {
    QString placement;        // loaded after the model when not empty
    bool tune = false;        // then tuned
    bool refine = false;      // then refined (implies tune)
    int collapse_depth = -1;  // >= 1: scopes of this depth collapsed before the shot
  };
  BatchScreenshot(MainWindow* window, const QString& path, Steps steps);

 private:
  void on_finished(const JobReport& report);
  void on_failed(const JobFailure& failure);
  void shoot(const QString& failure);
  void laid_out();  // the graph view showed a new layout
  void save();

  MainWindow* window_;
  QString path_;
  Steps steps_;
  bool done_ = false;    // shoot() ran
  bool failed_ = false;  // a step failed: exit status 2
  bool saving_ = false;
};

}  // namespace collage
