#include "core/tuning/host_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace collage {
namespace {

// One descriptor per process, opened on first use and kept: flock belongs to the open
// file, so threads of one process would not exclude each other (one process times one
// candidate at a time anyway).
int lock_fd() {
  static const int fd = [] {
    int f = ::open(HostMeasureLock::path(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (f >= 0) ::fchmod(f, 0666);  // other users' tunes and workers meet here too (umask)
    return f;
  }();
  return fd;
}

}  // namespace

const char* HostMeasureLock::path() { return "/tmp/collage-measure.lock"; }

HostMeasureLock::HostMeasureLock(bool enabled) {
  if (!enabled || lock_fd() < 0) return;  // no lock file can be had: measure unguarded
  while (::flock(lock_fd(), LOCK_EX) != 0)
    if (errno != EINTR) return;
  held_ = true;
}

HostMeasureLock::~HostMeasureLock() {
  if (held_) ::flock(lock_fd(), LOCK_UN);
}

}  // namespace collage
