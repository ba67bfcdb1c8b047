// Waiting for the end of the controller's current job (finished or failed) without
// polling: an event loop that quits on either signal, or when the bound runs out.
// The controller emits on the GUI thread, so no signal can slip in between the
// check and the loop.
#pragma once

#include <QEventLoop>
#include <QSignalSpy>
#include <QTimer>

#include "app/explorer/model/explorer_controller.h"

namespace collage::testing {

inline bool wait_for_job_end(ExplorerController* c, const QSignalSpy& finished, const QSignalSpy& failed,
                             int ms) {
  if (!finished.isEmpty() || !failed.isEmpty()) return true;
  QEventLoop loop;
  QTimer bound;
  bound.setSingleShot(true);
  QObject::connect(&bound, &QTimer::timeout, &loop, &QEventLoop::quit);
  QObject::connect(c, &ExplorerController::job_finished, &loop, &QEventLoop::quit);
  QObject::connect(c, &ExplorerController::job_failed, &loop, &QEventLoop::quit);
  bound.start(ms);
  loop.exec();
  return !finished.isEmpty() || !failed.isEmpty();
}

}  // namespace collage::testing
