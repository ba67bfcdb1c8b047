#include "core/tuning/measure_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/backend_api/kernel_signature.h"
#include "core/runtime/artifact.h"
#include "core/tensor_io/tensor_proto.h"
#include "core/tuning/host_lock.h"
#include "core/tuning/measurer.h"

extern char** environ;

namespace collage {
namespace {

namespace fs = std::filesystem;
constexpr double kStartLimitS = 300;  // loading the graph and the reference run of the whole model

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace

namespace worker_channel {

bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

ReadOutcome read_line_until(int fd, std::string& buffer, std::string& line,
                            std::chrono::steady_clock::time_point deadline,
                            const std::function<bool()>& stop) {
  using Clock = std::chrono::steady_clock;
  for (;;) {
    if (size_t nl = buffer.find('\n'); nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return ReadOutcome::Line;
    }
    if (stop && stop()) return ReadOutcome::Stopped;
    int wait_ms = stop ? kStopPollMs : -1;
    if (deadline != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return ReadOutcome::TimedOut;
      int until_deadline = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
      wait_ms = wait_ms < 0 ? until_deadline : std::min(wait_ms, until_deadline);
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ReadOutcome::Closed;
    if (r == 0) continue;  // the deadline and stop checks above decide
    char chunk[4096];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ReadOutcome::Closed;
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

bool read_line(int fd, std::string& buffer, std::string& line, std::chrono::steady_clock::time_point deadline,
               bool* timed_out) {
  ReadOutcome got = read_line_until(fd, buffer, line, deadline, {});
  if (timed_out) *timed_out = got == ReadOutcome::TimedOut;
  return got == ReadOutcome::Line;
}

std::string format_double(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

std::string cost_reply(const Cost& cost) {
  if (!cost.valid()) {
    std::string reason = cost.invalid_reason;
    for (char& c : reason)
      if (c == '\n' || c == '\r') c = ' ';
    return std::string("invalid ") + cost_status_name(cost.status) + " " + format_double(cost.build_ms) +
           " " + reason + "\n";
  }
  return "ok " + format_double(cost.median_ms) + " " + format_double(cost.p90_ms) + " " +
         format_double(cost.stddev_ms) + " " + std::to_string(cost.samples) + " " +
         format_double(cost.build_ms) + "\n";
}

std::string fitness_request(const std::vector<KernelGroup>& kernels, int runs) {
  std::string line = "fitness " + std::to_string(runs) + " " + std::to_string(kernels.size());
  for (const KernelGroup& k : kernels) {
    line += " " + k.backend + " " + std::to_string(k.nodes.size());
    for (NodeId n : k.nodes) line += " " + std::to_string(n);
  }
  return line;
}

bool parse_fitness_request(const std::string& line, std::vector<KernelGroup>& kernels, int& runs) {
  std::istringstream in(line);
  std::string verb;
  size_t count = 0;
  in >> verb >> runs >> count;
  if (!in || verb != "fitness" || runs < 1 || count > (1u << 20)) return false;
  kernels.clear();
  for (size_t k = 0; k < count; ++k) {
    KernelGroup group;
    size_t n = 0;
    in >> group.backend >> n;
    if (!in || n == 0 || n > (1u << 24)) return false;
    group.nodes.resize(n);
    for (NodeId& id : group.nodes) in >> id;
    if (!in) return false;
    kernels.push_back(std::move(group));
  }
  return true;
}

Cost parse_cost_reply(const std::string& line) {
  std::istringstream reply(line);
  std::string verb;
  reply >> verb;
  Cost cost;
  if (verb == "ok") {
    reply >> cost.median_ms >> cost.p90_ms >> cost.stddev_ms >> cost.samples >> cost.build_ms;
    if (!reply.fail()) return cost;
  } else if (verb == "invalid") {
    double build_ms = 0;
    std::string status;
    reply >> status >> build_ms;
    std::string reason;
    std::getline(reply, reason);
    if (!reason.empty() && reason[0] == ' ') reason.erase(0, 1);
    CostStatus parsed = cost_status_from_name(status);
    if (!reason.empty() && !reply.fail()) {
      cost = Cost::invalid(reason, parsed == CostStatus::Measured ? CostStatus::Failed : parsed);
      cost.build_ms = build_ms;
      return cost;
    }
  }
  return Cost::invalid("measure worker: malformed reply '" + line + "'");
}

}  // namespace worker_channel

namespace {
using worker_channel::format_double;
using worker_channel::read_line;
using worker_channel::read_line_until;
using worker_channel::ReadOutcome;
using worker_channel::write_all;

}  // namespace

std::vector<std::string>& default_command() {
  static std::vector<std::string> command;
  return command;
}

const std::vector<std::string>& default_worker_command() { return default_command(); }
void set_default_worker_command(std::vector<std::string> command) { default_command() = std::move(command); }

// ---- the parent's side ----

namespace {

constexpr const char* kSessionPrefix = "collage-measure-";

// A killed tune (SIGKILL) cannot remove its session directory: the next one removes
// those whose tune (the pid in the name) is gone.
void remove_stale_sessions(const std::string& tmp_dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(tmp_dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(kSessionPrefix, 0) != 0) continue;
    std::string rest = name.substr(std::strlen(kSessionPrefix));
    size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || rest.find_first_not_of("0123456789") != dash) continue;
    pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(entry.path(), ec);
  }
}

}  // namespace

struct MeasureWorker::Process {
  pid_t pid = -1;
  int fd = -1;  // the parent's end of the socket pair
  std::string buffer;
};

MeasureWorker::MeasureWorker(const Graph& graph, const std::vector<Tensor>& graph_inputs,
                             const MeasureOptions& options, const KnownReference* known)
    : worker_(options.worker) {
  open_session([&] { write_session(graph, graph_inputs, known); });
  set_args(options);
}

MeasureWorker::MeasureWorker(const std::vector<SessionBucket>& buckets, const MeasureOptions& options)
    : worker_(options.worker) {
  if (buckets.empty()) throw Error(ErrorKind::Internal, "a bucketed measurement session needs a graph");
  open_session([&] {
    std::vector<ArtifactBucket> file;
    for (const SessionBucket& b : buckets) {
      file.push_back({b.dims, native_artifact(*b.graph)});
      fingerprints_.push_back(model_fingerprint(*b.graph));
    }
    write_artifact(file, (fs::path(session_dir_) / "graph.collage").string());
  });
  set_args(options);
  args_.push_back("--bucket");
  args_.push_back("0");
  bucket_ = SIZE_MAX;  // no bucket's inputs written yet: select() first
}

void MeasureWorker::select(size_t bucket, const Graph& graph, const std::vector<Tensor>& graph_inputs,
                           int threads) {
  if (bucket >= fingerprints_.size() || model_fingerprint(graph) != fingerprints_[bucket])
    throw Error(ErrorKind::Internal, "measurement session: graph is not bucket " + std::to_string(bucket) +
                                         " of " + std::to_string(fingerprints_.size()));
  if (bucket == bucket_ && threads == threads_) return;
  write_session_inputs(graph, graph_inputs);
  bucket_ = bucket;
  set_threads(threads);
  set_arg("--bucket", std::to_string(bucket));
  if (process_) switch_session("session " + std::to_string(threads) + " " + std::to_string(bucket) + "\n");
}

void MeasureWorker::open_session(const std::function<void()>& write) {
  if (worker_.command.empty()) throw Error(ErrorKind::Internal, "MeasureWorker needs a worker command");
  const char* tmp = std::getenv("TMPDIR");
  std::string tmp_dir = tmp && *tmp ? tmp : "/tmp";
  remove_stale_sessions(tmp_dir);
  std::string pattern = tmp_dir + "/" + kSessionPrefix + std::to_string(::getpid()) + "-XXXXXX";
  std::vector<char> dir(pattern.begin(), pattern.end());
  dir.push_back('\0');
  if (!::mkdtemp(dir.data()))
    throw Error(ErrorKind::Io, "cannot create a directory for the measurement workers in " + pattern + ": " +
                                   std::strerror(errno));
  session_dir_ = dir.data();
  try {  // the destructor will not run: leave no directory behind
    write();
  } catch (...) {
    std::error_code ec;
    fs::remove_all(session_dir_, ec);
    throw;
  }
}

void MeasureWorker::set_args(const MeasureOptions& options) {
  threads_ = options.threads;
  args_ = worker_.command;
  auto arg = [&](const char* key, const std::string& value) {
    args_.push_back(key);
    args_.push_back(value);
  };
  arg("--session", session_dir_);
  arg("--parent", std::to_string(::getpid()));
  arg("--threads", std::to_string(options.threads));
  arg("--warmup", std::to_string(options.warmup_runs));
  arg("--min-samples", std::to_string(options.min_samples));
  arg("--max-samples", std::to_string(options.max_samples));
  arg("--min-time-ms", format_double(options.min_time_ms));
  arg("--max-time-ms", format_double(options.max_time_ms));
  arg("--atol", format_double(options.tolerance.atol));
  arg("--rtol", format_double(options.tolerance.rtol));
  arg("--peak-rtol", format_double(options.tolerance.peak_rtol));
  if (options.accuracy.enabled()) arg("--accuracy", options.accuracy.to_string());
  arg("--memory-mb", std::to_string(worker_.memory_budget_mb));
  arg("--host-lock", worker_.host_exclusive ? "1" : "0");
}

// The arguments a replacement worker starts with follow the session.
void MeasureWorker::set_arg(const std::string& key, const std::string& value) {
  for (size_t a = 0; a + 1 < args_.size(); ++a)
    if (args_[a] == key) args_[a + 1] = value;
}

void MeasureWorker::set_threads(int threads) {
  threads_ = threads;
  set_arg("--threads", std::to_string(threads));
}

void MeasureWorker::write_session(const Graph& graph, const std::vector<Tensor>& graph_inputs,
                                  const KnownReference* known) {
  const fs::path dir(session_dir_);
  write_artifact(native_artifact(graph), (dir / "graph.collage").string());
  write_session_inputs(graph, graph_inputs);
  if (!known) return;
  for (size_t o = 0; o < known->outputs.size(); ++o)
    write_tensor_file(known->outputs[o], graph.value(graph.outputs.at(o)).name,
                      (dir / ("output_" + std::to_string(o) + ".pb")).string());
  std::ofstream ms(dir /
                   worker_channel::kKnownNodeMsFile);  // last: its presence says the outputs are complete
  for (double v : known->node_ms) ms << format_double(v) << "\n";
  if (!ms) throw Error(ErrorKind::Io, "cannot write the measurement session in " + session_dir_);
}

void MeasureWorker::write_session_inputs(const Graph& graph, const std::vector<Tensor>& graph_inputs) {
  const fs::path dir(session_dir_);
  for (size_t i = 0; i < graph_inputs.size(); ++i)
    write_tensor_file(graph_inputs[i], graph.value(graph.inputs[i]).name,
                      (dir / ("input_" + std::to_string(i) + ".pb")).string());
  std::error_code ec;
  fs::remove(dir / worker_channel::kKnownNodeMsFile,
             ec);  // an earlier graph's: the worker must not believe it
}

void MeasureWorker::load(const Graph& graph, const std::vector<Tensor>& graph_inputs, int threads,
                         const KnownReference* known) {
  if (!fingerprints_.empty())
    throw Error(ErrorKind::Internal, "a bucketed measurement session switches with select(), not load()");
  write_session(graph, graph_inputs, known);
  set_threads(threads);
  if (process_) switch_session("session " + std::to_string(threads) + "\n");  // else the next start reads it
}

void MeasureWorker::switch_session(const std::string& request) {
  std::string line;
  bool timed_out = false;
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(kStartLimitS));
  if (!write_all(process_->fd, request) ||
      !read_line(process_->fd, process_->buffer, line, deadline, &timed_out) || line.rfind("ready", 0) != 0) {
    if (process_ && timed_out) ::kill(process_->pid, SIGKILL);
    lost_worker("");  // the next request starts a fresh one on the new session
    return;
  }
  read_ready(line);
}

void MeasureWorker::read_ready(const std::string& line) {
  std::istringstream ready(line.substr(5));
  native_ms_.clear();
  for (double ms; ready >> ms;) native_ms_.push_back(ms);
}

MeasureWorker::~MeasureWorker() {
  stop(/*kill=*/false);
  std::error_code ec;
  fs::remove_all(session_dir_, ec);
}

void MeasureWorker::start() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    throw Error(ErrorKind::Io,
                std::string("cannot create a socket pair for a measurement worker: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], worker_channel::kFd);  // dup2 clears CLOEXEC on fd 3
  std::vector<char*> argv;
  for (std::string& a : args_) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pair[1]);
  if (rc != 0) {
    ::close(pair[0]);
    throw Error(ErrorKind::Io,
                "cannot start the measurement worker '" + args_[0] + "': " + std::strerror(rc));
  }
  process_ = std::make_unique<Process>();
  process_->pid = pid;
  process_->fd = pair[0];
  ++started_;
  std::string line;
  bool timed_out = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kStartLimitS);
  bool got =
      read_line(process_->fd, process_->buffer, line,
                std::chrono::time_point_cast<std::chrono::steady_clock::duration>(deadline), &timed_out);
  if (!got || line.rfind("ready", 0) != 0) {
    stop(/*kill=*/true);
    throw Error(ErrorKind::Io, "the measurement worker '" + args_[0] + "' did not start" +
                                   (timed_out ? " within " + std::to_string(int(kStartLimitS)) + " s" : "") +
                                   " (its stderr above says why)");
  }
  read_ready(line);
}

void MeasureWorker::stop(bool kill) {
  if (!process_) return;
  ::close(process_->fd);  // a healthy worker sees EOF and exits
  if (kill) ::kill(process_->pid, SIGKILL);
  int status = 0;
  while (::waitpid(process_->pid, &status, 0) < 0 && errno == EINTR) {
  }
  process_.reset();
}

double MeasureWorker::limit_s(const std::vector<NodeId>& nodes) const {
  double ms = 0;
  for (NodeId n : nodes)
    if (static_cast<size_t>(n) < native_ms_.size()) ms += native_ms_[static_cast<size_t>(n)];
  return std::min(worker_.max_limit_s, worker_.min_limit_s + worker_.limit_factor * ms / 1000.0);
}

Cost MeasureWorker::lost_worker(const std::string& what) {
  // Reap it and say how it ended.
  ::close(process_->fd);
  int status = 0;
  while (::waitpid(process_->pid, &status, 0) < 0 && errno == EINTR) {
  }
  process_.reset();
  if (!what.empty()) return Cost::lost(what);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return Cost::lost(sig == SIGKILL ? "crashed: SIGKILL (out of memory?)" : "crashed: " + signal_name(sig));
  }
  return Cost::lost("the measurement worker exited with code " + std::to_string(WEXITSTATUS(status)));
}

Cost MeasureWorker::request(const std::string& line, double limit, ProgressObserver* observer) {
  if (!process_) start();
  if (!write_all(process_->fd, line + "\n")) return lost_worker("");
  using Clock = std::chrono::steady_clock;
  std::function<bool()> stop;
  if (observer) stop = [observer] { return observer->cancel_requested(); };
  auto stopped = [&] {
    ::kill(process_->pid, SIGKILL);  // whatever it waits for or runs; a held lock goes with it
    lost_worker("");
    return Error(ErrorKind::Cancelled, "measuring cancelled");
  };
  // First "timing": the worker holds the machine's lock. Waiting for it has no limit.
  std::string reply;
  ReadOutcome got =
      read_line_until(process_->fd, process_->buffer, reply,
                      Clock::now() + std::chrono::milliseconds(HostMeasureLock::kNoticeAfterMs), stop);
  if (got == ReadOutcome::TimedOut) {
    if (observer && !lock_noticed_) observer->on_notice(HostMeasureLock::waiting_notice());
    lock_noticed_ = true;
    got = read_line_until(process_->fd, process_->buffer, reply, Clock::time_point::max(), stop);
  }
  switch (got) {
    case ReadOutcome::Line:
      break;
    case ReadOutcome::Stopped:
      throw stopped();
    default:
      return lost_worker("");
  }
  if (reply != "timing") return worker_channel::parse_cost_reply(reply);  // refused before timing
  auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  switch (read_line_until(process_->fd, process_->buffer, reply, deadline, stop)) {
    case ReadOutcome::Line:
      return worker_channel::parse_cost_reply(reply);
    case ReadOutcome::Stopped:
      throw stopped();
    case ReadOutcome::TimedOut: {
      ::kill(process_->pid, SIGKILL);
      char text[64];
      std::snprintf(text, sizeof text, "timed out after %.0f s", limit);
      return lost_worker(text);
    }
    case ReadOutcome::Closed:
      break;
  }
  return lost_worker("");
}

Cost MeasureWorker::measure(const std::string& backend, const std::vector<NodeId>& nodes,
                            ProgressObserver* observer) {
  if (!process_) start();  // the limit needs the worker's reference times
  std::string line = "measure " + backend + " " + std::to_string(nodes.size());
  for (NodeId n : nodes) line += " " + std::to_string(n);
  return request(line, limit_s(nodes), observer);
}

Cost MeasureWorker::fitness(const std::vector<KernelGroup>& kernels, int runs, ProgressObserver* observer) {
  if (!process_) start();
  std::string line = worker_channel::fitness_request(kernels, runs);
  std::vector<NodeId> all;
  for (const KernelGroup& k : kernels) all.insert(all.end(), k.nodes.begin(), k.nodes.end());
  // Compiling every kernel, a warm-up and `runs` timed runs: scaled like one candidate per run.
  return request(line, std::min(worker_.max_limit_s, limit_s(all) * (runs + 2)), observer);
}

}  // namespace collage
