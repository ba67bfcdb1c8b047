#include "core/tuning/host_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

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

std::string HostMeasureLock::waiting_notice() {
  return std::string(
             "another process on this machine is timing kernels: measuring waits for it, one at a "
             "time (the lock ") +
         path() + ")";
}

HostMeasureLock::HostMeasureLock(bool enabled) {
  if (!enabled || lock_fd() < 0) return;  // no lock file can be had: measure unguarded
  while (::flock(lock_fd(), LOCK_EX) != 0)
    if (errno != EINTR) return;
  held_ = true;
}

HostMeasureLock::HostMeasureLock(bool enabled, const std::function<bool()>& stop,
                                 const std::function<void()>& waiting) {
  if (!enabled) return;
  int fd = ::open(path(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return;  // no lock file can be had: measure unguarded
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    own_fd_ = fd;
    held_ = true;
    return;
  }
  // A blocking flock cannot be interrupted, so a thread waits in it; a stop abandons the
  // thread, which lets go of the lock (closes the file) as soon as it gets it.
  struct Wait {
    std::mutex m;
    std::condition_variable cv;
    bool done = false, got = false, abandoned = false;
  };
  auto wait = std::make_shared<Wait>();
  std::thread([wait, fd] {
    int r = 0;
    while ((r = ::flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    std::lock_guard<std::mutex> lock(wait->m);
    wait->done = true;
    wait->got = r == 0;
    if (wait->abandoned) ::close(fd);
    wait->cv.notify_one();
  }).detach();
  std::unique_lock<std::mutex> lock(wait->m);
  const auto notice_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(kNoticeAfterMs);
  bool noticed = !waiting;
  while (!wait->done) {
    if (stop && stop()) {
      wait->abandoned = true;  // the file is the thread's now
      stopped_ = true;
      return;
    }
    if (!noticed && std::chrono::steady_clock::now() >= notice_at) {
      noticed = true;
      waiting();
    }
    wait->cv.wait_for(lock, std::chrono::milliseconds(kStopPollMs));
  }
  own_fd_ = fd;
  held_ = wait->got;
}

HostMeasureLock::~HostMeasureLock() {
  if (own_fd_ >= 0)
    ::close(own_fd_);
  else if (held_)
    ::flock(lock_fd(), LOCK_UN);
}

}  // namespace collage
