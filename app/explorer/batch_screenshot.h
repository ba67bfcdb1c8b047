// Batch mode (`--screenshot PATH [--tune [--refine]] [--select NODE]`): drives the
// controller through load, tune and refine, selects the node named NODE (the
// inspector then shows it, "Why here" included once tuned), saves the window as
// PNG once the last step is shown, and quits: status 0, or 2 with the error on
// stderr (as the CLI) when a step failed or no node has that name (the picture
// is still saved).
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
  BatchScreenshot(MainWindow* window, const QString& path, bool tune, bool refine,
                  const QString& select = QString());

 private:
  void on_finished(const JobReport& report);
  void on_failed(const JobFailure& failure);
  void shoot(const QString& failure);

  MainWindow* window_;
  QString path_;
  bool tune_;
  bool refine_;
  QString select_;  // node name to select before the picture; empty: none
  bool done_ = false;
};

}  // namespace collage
