#include "app/workflow/queue_worker.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/backend_api/kernel_signature.h"
#include "core/ir/error.h"
#include "core/tuning/measure_queue.h"
#include "core/tuning/measure_worker.h"

namespace collage::workflow {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kIdlePoll = std::chrono::milliseconds(200);

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "host";
}

// Renews the worker's heartbeat and its job's lease from its own connection, so a
// kernel that runs for minutes keeps its job.
class Heartbeat {
 public:
  Heartbeat(const std::string& url, const std::string& name, double lease_s)
      : thread_([this, url, name, lease_s] { run(url, name, lease_s); }) {}
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void run(const std::string& url, const std::string& name, double lease_s) {
    const auto period = std::chrono::duration<double>(lease_s / 3);
    std::unique_ptr<MeasureQueue> queue;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
      try {
        if (!queue) queue = std::make_unique<MeasureQueue>(url);
        queue->heartbeat(name, lease_s);
      } catch (const Error&) {
        // The server went away: reconnect next time. Meanwhile the lease may run out and
        // another worker take the job over, which is what leases are for.
        queue.reset();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

// What one worker keeps from job to job: the measure worker process (switched to each
// job's graph with MeasureWorker::load) and which fitness model it holds.
struct WorkerState {
  Graph model;
  std::vector<Tensor> inputs;
  std::unique_ptr<MeasureWorker> process;
  std::string loaded_model;  // fingerprint of the fitness model loaded; "" after a kernel job
  KnownReference known;      // the tuner's reference for a kernel job (may be empty)
  int threads = 0;           // of the process's session
  double load_ms = 0;        // the last job's payload parse and session switch
};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void load(WorkerState& state, MeasureOptions measure) {
  auto t0 = Clock::now();
  measure.worker.command = default_worker_command();
  const KnownReference* known = state.known.node_ms.empty() ? nullptr : &state.known;
  if (state.process)
    state.process->load(state.model, state.inputs, measure.threads, known);
  else
    state.process = std::make_unique<MeasureWorker>(state.model, state.inputs, measure, known);
  state.threads = measure.threads;
  state.load_ms += ms_since(t0);
}

Cost measure_kernel_job(const MeasureJob& job, const MeasureOptions& measure, WorkerState& state,
                        ProgressObserver* observer) {
  state.loaded_model.clear();
  auto t0 = Clock::now();
  read_job_payload(job.payload, "job " + std::to_string(job.id), state.model, state.inputs, &state.known);
  state.load_ms += ms_since(t0);
  const BackendSpec* backend = find_backend(job.backend);
  if (!backend) return Cost::invalid("backend " + job.backend + " is not in this worker");
  std::vector<NodeId> nodes;
  for (NodeId n = 0; n < state.model.num_nodes(); ++n) nodes.push_back(n);
  if (!default_worker_command().empty()) {
    load(state, measure);
    return state.process->measure(job.backend, nodes, observer);
  }
  // No worker executable (a unit test binary): in this process.
  apply_threads({backend}, measure.threads);
  Measurer measurer(state.model, reference_values(state.model, state.inputs, native::node_evaluator()),
                    nullptr, measure);
  IndexSet all(static_cast<size_t>(state.model.num_nodes()), std::vector<size_t>(nodes.begin(), nodes.end()));
  return measurer.measure_in_process(*backend, make_subgraph(state.model, all));
}

// A refinement genome: the whole model (fetched once per model) under a placement.
// `model_payload`: the job's model, fetched by the caller when state does not hold it.
Cost measure_fitness_job(const MeasureJob& job, const MeasureOptions& measure, WorkerState& state,
                         const std::string& model_payload, ProgressObserver* observer) {
  if (default_worker_command().empty()) return Cost::invalid("fitness jobs need the collage executable");
  std::vector<KernelGroup> kernels;
  int runs = 0;
  if (!worker_channel::parse_fitness_request(job.payload, kernels, runs))
    return Cost::invalid("job " + std::to_string(job.id) + ": malformed fitness request");
  if (state.loaded_model != job.model) {
    read_job_payload(model_payload, "model " + job.model, state.model, state.inputs, &state.known);
    load(state, measure);
    state.loaded_model = job.model;
  } else if (state.threads != measure.threads) {
    load(state, measure);  // the same graph at another thread count
  }
  return state.process->fitness(kernels, runs, observer);
}

// Throws Cancelled when a stop arrives while measuring (the measure worker is killed mid-kernel).
Cost measure_job(const MeasureJob& job, const QueueWorkerOptions& options, WorkerState& state,
                 const std::string& model_payload, ProgressObserver* observer) {
  MeasureOptions measure = options.measure;
  measure.threads = job.key.threads;
  try {
    return job.kind == "fitness" ? measure_fitness_job(job, measure, state, model_payload, observer)
                                 : measure_kernel_job(job, measure, state, observer);
  } catch (const Error& e) {  // a payload that does not parse
    if (e.kind() == ErrorKind::Cancelled) throw;
    state.loaded_model.clear();
    return Cost::invalid(e.what());
  }
}

}  // namespace

std::string placement_backend_version() {
  std::string versions;
  for (const BackendSpec* b : all_backends()) versions += b->name + " " + b->version + ";";
  return hex64(fnv1a64(versions));
}

QueueWorkerReport run_queue_worker(const QueueWorkerOptions& options, ProgressObserver* observer) {
  WorkerInfo info;
  info.host = host_name();
  info.name = options.name.empty() ? info.host + "-" + std::to_string(::getpid()) : options.name;
  info.device = device_fingerprint();
  unsigned cores = std::thread::hardware_concurrency();
  info.threads = options.threads > 0 ? options.threads : static_cast<int>(cores > 0 ? cores : 1);
  for (const BackendSpec* b : all_backends()) info.backend_versions[b->name] = b->version;
  info.backend_versions[kPlacementBackend] = placement_backend_version();

  auto queue = std::make_unique<MeasureQueue>(options.cost_db);
  queue->register_worker(info);
  QueueWorkerReport report;
  report.name = info.name;
  auto notice = [&](const std::string& line) {
    if (observer) observer->on_notice(line);
  };
  auto stopping = [&] { return observer && observer->cancel_requested(); };
  // A database that goes away (a restart, the network) is waited for, not fatal: the
  // step is retried on a new connection, with backoff; a stop request ends the wait.
  auto with_db = [&](auto&& step) {
    for (double wait_s = 1;; wait_s = std::min(wait_s * 2, 30.0)) {
      try {
        if (!queue) {
          queue = std::make_unique<MeasureQueue>(options.cost_db);
          queue->register_worker(info);
          notice("worker " + info.name + ": reconnected to the cost DB");
        }
        return step(*queue);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Io) throw;
        queue.reset();
        notice("worker " + info.name + ": " + e.what() + "; retrying in " + std::to_string(int(wait_s)) +
               " s");
        for (auto until = Clock::now() + std::chrono::duration<double>(wait_s); Clock::now() < until;) {
          if (stopping()) throw;
          std::this_thread::sleep_for(kIdlePoll);  // backoff, watching for a stop request
        }
      }
    }
  };
  notice("worker " + info.name + " registered: " + info.device + ", up to " + std::to_string(info.threads) +
         " threads");
  try {
    Heartbeat heartbeat(options.cost_db, info.name, options.lease_s);
    auto idle_since = Clock::now();
    WorkerState state;
    while (!stopping()) {
      if (options.max_jobs > 0 && report.jobs_done >= options.max_jobs) break;
      auto t_claim = Clock::now();
      std::optional<MeasureJob> job =
          with_db([&](MeasureQueue& q) { return q.claim(info, options.lease_s); });
      if (!job) {
        if (options.idle_exit_s > 0 &&
            std::chrono::duration<double>(Clock::now() - idle_since).count() > options.idle_exit_s)
          break;
        std::this_thread::sleep_for(kIdlePoll);  // polling the queue for work
        continue;
      }
      auto t_measure = Clock::now();
      state.load_ms = 0;
      std::string model_payload, no_model;  // a fitness job's model, unless the worker holds it already
      if (job->kind == "fitness" && state.loaded_model != job->model) try {
          model_payload = with_db([&](MeasureQueue& q) { return q.model_payload(job->model); });
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::InvalidInput) throw;
          no_model = e.what();  // deleted from the DB: this genome cannot be timed
        }
      Cost cost;
      try {
        cost = no_model.empty() ? measure_job(*job, options, state, model_payload, observer)
                                : Cost::invalid(no_model);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Cancelled) throw;
        // Stopped mid-kernel: nothing is stored; unregistering below gives the job back to the queue.
        notice("job " + std::to_string(job->id) + " " + job->backend + " " + job->label +
               ": stopped while measuring, given back to the queue");
        break;
      }
      auto t_store = Clock::now();
      CostRecord record;
      record.key = job->key;
      record.backend = job->backend;
      record.backend_version = job->backend_version;
      record.label = job->label;
      record.cost = cost;
      with_db([&](MeasureQueue& q) {
        q.complete(*job, info.name, record);
        return 0;
      });
      // Where a job's time goes, for whoever sizes the fleet.
      char times[160];
      std::snprintf(times, sizeof times, " [claim %.0f ms, load %.0f ms, measure %.0f ms, store %.0f ms]",
                    std::chrono::duration<double, std::milli>(t_measure - t_claim).count(), state.load_ms,
                    std::chrono::duration<double, std::milli>(t_store - t_measure).count() - state.load_ms,
                    ms_since(t_store));
      ++report.jobs_done;
      if (!cost.valid()) ++report.jobs_invalid;
      notice("job " + std::to_string(job->id) + " " + job->backend + " " + job->label + ": " +
             (cost.valid() ? std::to_string(cost.median_ms) + " ms" : "invalid: " + cost.invalid_reason) +
             (job->attempts > 1 ? " (attempt " + std::to_string(job->attempts) + ")" : "") + times);
      idle_since = Clock::now();
    }
  } catch (const Error& e) {
    if (!stopping()) throw;  // stopped while the DB was away: nothing to give back we could reach
    notice("worker " + info.name + " stopped while waiting for the cost DB after " +
           std::to_string(report.jobs_done) + " jobs");
    return report;
  }
  with_db([&](MeasureQueue& q) {
    q.unregister(info.name);
    return 0;
  });
  notice("worker " + info.name + " stopped after " + std::to_string(report.jobs_done) + " jobs");
  return report;
}

}  // namespace collage::workflow
