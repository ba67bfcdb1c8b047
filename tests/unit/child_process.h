// A background program for the tests (a measurement worker, a tuner): started with
// extra environment variables, its stdout and stderr in a log file, killed with
// SIGKILL if the test ends before it does.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace collage::testing {

// A background program (a worker, a tuner) with its output in a log file.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log)
      : log_(log) {
    std::vector<std::string> environment = env;
    for (char** e = environ; *e; ++e) environment.emplace_back(*e);
    std::vector<char*> args, envp;
    std::vector<std::string> argv_copy = argv;
    for (std::string& a : argv_copy) args.push_back(a.data());
    args.push_back(nullptr);
    for (std::string& e : environment) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
  }
  ~Process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  void signal(int sig) { ::kill(pid_, sig); }
  // The exit code (128 + signal when killed); kills it after `limit`. Waits on a pidfd, which
  // becomes readable when the child exits: no polling interval.
  int wait(std::chrono::seconds limit = std::chrono::seconds(180)) {
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd exited{pidfd, POLLIN, 0};
      if (pidfd < 0 || left.count() <= 0 || ::poll(&exited, 1, static_cast<int>(left.count())) == 0) {
        ::kill(pid_, SIGKILL);  // past the limit (or no pidfd on this kernel: no wait without a bound)
        ::waitpid(pid_, &status, 0);
        break;
      }
    }
    if (pidfd >= 0) ::close(pidfd);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

}  // namespace collage::testing
