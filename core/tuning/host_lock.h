// One measurement at a time per machine. Kernels timed at the same moment on one
// machine slow each other down: on a 2-vCPU machine, ResNet-50 kernels over 1 ms
// measured by two concurrent workers came out 2.0x slower (median) than measured
// alone, which would poison a shared cost DB. So every timing section (a candidate in
// a measure worker or in-process, a fitness evaluation in a worker) holds an exclusive
// flock on one host-wide file; work around it (loading, storing) still overlaps.
// Machines whose workers are pinned to disjoint cores turn it off (`worker --share-host`).
#pragma once

#include <functional>
#include <string>

#include "core/tuning/progress.h"

namespace collage {

class HostMeasureLock {
 public:
  // Blocks until no other process on this machine is timing. `enabled` false: no-op.
  explicit HostMeasureLock(bool enabled);
  // The same, but gives up when `stop` turns true (asked every kStopPollMs): then
  // stopped() is true and nothing is held. The wait itself stays a blocking flock on a
  // thread of its own, so waiting processes are served as fairly as with the plain
  // constructor. It locks its own open file: another thread of this process holding the
  // lock excludes it too.
  // `waiting` (optional) is called once if the wait lasts kNoticeAfterMs: another tune is timing.
  HostMeasureLock(bool enabled, const std::function<bool()>& stop, const std::function<void()>& waiting = {});
  ~HostMeasureLock();
  bool stopped() const { return stopped_; }
  HostMeasureLock(const HostMeasureLock&) = delete;
  HostMeasureLock& operator=(const HostMeasureLock&) = delete;

  // The lock file: /tmp/collage-measure.lock (not $TMPDIR: every user and login of
  // the machine must meet at the same file).
  static const char* path();
  // What a front end tells its user when a measurement has waited kNoticeAfterMs for the lock.
  static constexpr int kNoticeAfterMs = 2000;
  static std::string waiting_notice();

 private:
  bool held_ = false;
  bool stopped_ = false;
  int own_fd_ = -1;  // the stoppable constructor's open file (closing it lets go)
};

}  // namespace collage
