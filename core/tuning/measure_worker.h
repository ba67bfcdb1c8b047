// Isolated measurement: candidates are built, verified and timed in a worker
// process, so a library that crashes, hangs or exhausts memory on one shape costs
// that candidate (an invalid Cost naming what happened), not the tune.
//
// Protocol. The parent writes a session directory: the graph as an artifact file
// (docs/artifact-format.md, exact node ids and constants) and the graph inputs as
// TensorProto files (a bucketed session: one artifact with a graph per shape bucket, and
// `--bucket N` says which one). It starts `command... --session DIR <measure options>`; the
// worker computes the reference values (the same native evaluator, the same
// inputs, hence the same values as in the parent), applies the thread count and a
// memory limit, and answers on fd 3 -- stdout stays free for libraries' chatter:
//   worker -> "ready <native ms of node 0> <node 1> ...\n"
//   parent -> "measure <backend> <node count> <ids...>\n"
//           | "fitness <runs> <kernel count> {<backend> <node count> <ids...>}...\n"
//           | "session <threads>\n"   (the session files were rewritten: reload them)
//           | "session <threads> <bucket>\n" (a bucketed session: that graph of the
//                                             artifact, its inputs rewritten)
//   worker -> "timing\n"                (before answering measure/fitness: it holds
//                                         the machine's measurement lock, host_lock.h)
//   worker -> "ok <median> <p90> <stddev> <samples> <build ms>\n"
//           | "invalid <build ms> <reason>\n"
//           | "ready ...\n"            (after "session")
// (fitness: a whole placement compiled, one warm-up run, the median of `runs`).
// The parent bounds each answer, from "timing" on, by a time limit derived from the
// native reference time of the candidate's nodes (waiting for the lock is not counted:
// another tune on the machine is not this kernel's fault); a worker that dies or
// overruns is killed, reported and replaced on the next request. The worker, not the
// parent, waits for the lock, so a stop (the observer's cancel_requested) reaches every
// wait: the parent kills the worker -- its lock, if held, goes with it -- and throws
// Error(Cancelled) within kStopPollMs. Timings are taken inside the worker by the
// same Measurer code as in-process measuring.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend_api/backend.h"
#include "core/ir/graph.h"
#include "core/ir/kernel.h"
#include "core/ir/kernel_group.h"
#include "core/ir/shape_buckets.h"
#include "core/tuning/cost.h"
#include "core/tuning/progress.h"

namespace collage {

struct MeasureOptions;

struct WorkerOptions {
  // The worker executable and its leading arguments; empty measures in-process.
  std::vector<std::string> command;
  // Per candidate: min_limit_s + limit_factor x the native reference time of its
  // nodes, at most max_limit_s (build, verification and timing together).
  double min_limit_s = 10;
  double limit_factor = 50;
  double max_limit_s = 120;
  // Address-space limit of a worker; 0: three quarters of the memory available when
  // it starts (MemAvailable), so a hoarding kernel fails its allocation before the
  // machine's OOM killer picks a victim.
  int64_t memory_budget_mb = 0;
  // The worker holds the machine's measurement lock (host_lock.h) while a candidate or a
  // placement is built and timed, so concurrent tunes and workers on one machine do not slow each other's
  // timings; off only where they run on disjoint cores (`collage worker --share-host`).
  bool host_exclusive = true;
};

// A front end's executable doubles as its worker: re-entered with kMeasureWorkerFlag
// (workflow::enable_measure_workers, first thing in its main()).
inline constexpr const char* kMeasureWorkerFlag = "--measure-worker";

// Empty until enable_measure_workers (or a test) sets it: a program that never sets it
// (a unit test binary) measures in-process.
const std::vector<std::string>& default_worker_command();
void set_default_worker_command(std::vector<std::string> command);

// What the parent already computed for a graph (a queue job carries it from the
// tuner): the native reference outputs and each node's native time. Given, the worker
// checks against these and skips its own reference run.
struct KnownReference {
  std::vector<Tensor> outputs;  // per graph output
  std::vector<double> node_ms;  // per node
};

// The parent's side: one worker process at a time, started on first use.
class MeasureWorker {
 public:
  MeasureWorker(const Graph& graph, const std::vector<Tensor>& graph_inputs, const MeasureOptions& options,
                const KnownReference* known = nullptr);
  ~MeasureWorker();
  MeasureWorker(const MeasureWorker&) = delete;
  MeasureWorker& operator=(const MeasureWorker&) = delete;

  // Builds, verifies and times `nodes` on `backend` in the worker. Never throws for
  // what the worker does: a crash, overrun or lost worker is an invalid Cost.
  // Throws Error(Io) if no worker can be started at all.
  // `observer` (optional) is asked while waiting: cancel_requested() ends the request with
  // Error(Cancelled); a wait of HostMeasureLock::kNoticeAfterMs for the machine's lock is told
  // through on_notice, once per worker.
  Cost measure(const std::string& backend, const std::vector<NodeId>& nodes,
               ProgressObserver* observer = nullptr);
  // Whole-placement fitness (refinement): the median of `runs` timed runs as median_ms.
  Cost fitness(const std::vector<KernelGroup>& kernels, int runs, ProgressObserver* observer = nullptr);
  int workers_started() const { return started_; }
  // One session for several graphs of one model (a tune's shape buckets): the graphs go to the
  // worker in one artifact, so the weights they share are written and mapped once, and the
  // worker process switches between them. select() before the first request.
  struct SessionBucket {
    DimValues dims;
    const Graph* graph = nullptr;
  };
  MeasureWorker(const std::vector<SessionBucket>& buckets, const MeasureOptions& options);
  // Makes bucket `bucket` (whose graph is `graph`, measured on `graph_inputs`) the one later
  // requests refer to; the running worker reloads only what differs. InternalError when `graph`
  // is not that bucket's graph.
  void select(size_t bucket, const Graph& graph, const std::vector<Tensor>& graph_inputs, int threads);
  // Switches to another graph (a queue worker's next job) in the running worker
  // process, which reloads the session, sets `threads` and answers "ready": no new
  // process per graph. Node ids in later requests are the new graph's.
  void load(const Graph& graph, const std::vector<Tensor>& graph_inputs, int threads,
            const KnownReference* known = nullptr);

 private:
  struct Process;
  Cost request(const std::string& line, double limit_s, ProgressObserver* observer);
  void start();
  void stop(bool kill);
  double limit_s(const std::vector<NodeId>& nodes) const;
  Cost lost_worker(const std::string& what);
  void open_session(const std::function<void()>& write);
  void set_args(const MeasureOptions& options);
  void set_arg(const std::string& key, const std::string& value);
  void set_threads(int threads);
  void write_session(const Graph& graph, const std::vector<Tensor>& graph_inputs,
                     const KnownReference* known);
  void write_session_inputs(const Graph& graph, const std::vector<Tensor>& graph_inputs);
  void switch_session(const std::string& request);
  void read_ready(const std::string& line);

  std::vector<std::string> args_;
  WorkerOptions worker_;
  std::string session_dir_;
  std::unique_ptr<Process> process_;
  std::vector<double> native_ms_;  // per node, from the worker's reference run
  int started_ = 0;
  bool lock_noticed_ = false;  // the user was told that another process holds the lock
  int threads_ = 1;
  std::vector<std::string> fingerprints_;  // per bucket of a bucketed session (model_fingerprint)
  size_t bucket_ = 0;                      // the selected one
};

// The line protocol, shared by both sides.
namespace worker_channel {
inline constexpr int kFd = 3;  // the worker's end of the socket pair
// In a session directory beside graph.collage and input_<i>.pb: output_<o>.pb and this
// file (one native ms per node, written last) when the parent knows the reference.
inline constexpr const char* kKnownNodeMsFile = "native_ms.txt";
bool write_all(int fd, const std::string& text);
// One line, waiting at most until `deadline` (time_point::max(): forever); false on
// EOF, error or timeout (`timed_out` tells which).
bool read_line(int fd, std::string& buffer, std::string& line, std::chrono::steady_clock::time_point deadline,
               bool* timed_out);
enum class ReadOutcome { Line, Closed, TimedOut, Stopped };
// The same, also ending (Stopped) when `stop` turns true; it is asked every kStopPollMs (progress.h).
ReadOutcome read_line_until(int fd, std::string& buffer, std::string& line,
                            std::chrono::steady_clock::time_point deadline,
                            const std::function<bool()>& stop);
std::string format_double(double v);  // round-trips
// "fitness <runs> <kernel count> {<backend> <node count> <ids...>}..." and back (false
// on a malformed line; node ids are not checked against any graph here).
std::string fitness_request(const std::vector<KernelGroup>& kernels, int runs);
bool parse_fitness_request(const std::string& line, std::vector<KernelGroup>& kernels, int& runs);
std::string cost_reply(const Cost& cost);
Cost parse_cost_reply(const std::string& line);
}  // namespace worker_channel

}  // namespace collage
