// Batch mode (`--screenshot PATH [--tune [--refine]]`): drives the controller
// through load, tune and refine, saves the window as PNG once the last step is
// shown, and quits: status 0, or 2 with the error on stderr (as the CLI) when a
// step failed (the picture is still saved).
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
  BatchScreenshot(MainWindow* window, const QString& path, bool tune, bool refine);

 private:
  void on_finished(const JobReport& report);
  void on_failed(const JobFailure& failure);
  void shoot(const QString& failure);

  MainWindow* window_;
  QString path_;
  bool tune_;
  bool refine_;
  bool done_ = false;
};

}  // namespace collage
