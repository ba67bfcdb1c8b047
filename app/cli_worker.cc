// `collage worker` (serve the team's measurement queue) and `collage workers` (list it).
#include <csignal>
#include <cstdio>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/workflow/queue_worker.h"
#include "app/workflow/workflow.h"
#include "core/ir/error.h"
#include "core/tuning/cost_store.h"
#include "core/tuning/measure_queue.h"

namespace collage::cli {
namespace {

// SIGINT / SIGTERM: finish (or give back) the current job, unregister, exit 0. The
// handler resets itself, so a second signal kills.
volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop(int signal) {
  g_stop = 1;
  std::signal(signal, SIG_DFL);
}

class WorkerLog : public ProgressObserver {
 public:
  bool cancel_requested() const override { return g_stop != 0; }
  void on_progress(const ProgressEvent&) override {}
  void on_notice(const std::string& message) override {
    std::printf("%s\n", message.c_str());
    std::fflush(stdout);
  }
};

std::string shared_cost_db(const Args& args, const char* command) {
  std::string db = workflow::cost_db_path(args.get("--cost-db", ""));
  if (!cost_store::is_postgres_location(db))
    throw Error(ErrorKind::InvalidInput,
                std::string("collage ") + command +
                    " needs a shared cost DB: --cost-db postgresql://user@host:port/db "
                    "(or $COLLAGE_COST_DB), not '" +
                    cost_store::redacted(db) + "'");
  return db;
}

}  // namespace

int command_worker(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, {"--cost-db", "--threads", "--name", "--lease", "--max-jobs", "--idle-exit"},
                         {"--share-host"});
  if (!args.positional.empty())
    throw Error(ErrorKind::InvalidInput,
                "usage: collage worker --cost-db postgresql://... [--threads N] [--name W] [--lease SECONDS] "
                "[--max-jobs N] [--idle-exit SECONDS] [--share-host]");
  workflow::QueueWorkerOptions options;
  options.cost_db = shared_cost_db(args, "worker");
  options.threads = args.get_int("--threads", 0, 0, 4096);
  options.name = args.get("--name", "");
  options.lease_s = args.get_seconds("--lease", options.lease_s, 1, 86400);
  options.max_jobs = args.get_int("--max-jobs", 0, 0, 1 << 30);
  options.idle_exit_s = args.get_seconds("--idle-exit", 0, 0, 1e9);
  options.measure.worker.host_exclusive = !args.has("--share-host");
  g_stop = 0;
  std::signal(SIGINT, on_stop);
  std::signal(SIGTERM, on_stop);
  WorkerLog log;
  workflow::QueueWorkerReport report = workflow::run_queue_worker(options, &log);
  std::printf("worker %s: %d jobs done (%d with an invalid cost)\n", report.name.c_str(), report.jobs_done,
              report.jobs_invalid);
  return 0;
}

int command_workers(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, {"--cost-db"}, {});
  if (!args.positional.empty())
    throw Error(ErrorKind::InvalidInput, "usage: collage workers --cost-db postgresql://...");
  MeasureQueue queue(shared_cost_db(args, "workers"));
  const double lease = kSettings.worker_lease_s;
  std::vector<WorkerStatus> workers = queue.workers(lease);
  auto counts = queue.job_counts();
  std::printf("%zu workers; jobs: %lld pending, %lld running, %lld done\n", workers.size(),
              static_cast<long long>(counts["pending"]), static_cast<long long>(counts["running"]),
              static_cast<long long>(counts["done"]));
  std::printf("%-24s %-10s %7s %6s %9s %9s %10s  %s\n", "name", "state", "threads", "alive", "jobs done",
              "in flight", "heartbeat", "device / measuring");
  for (const WorkerStatus& w : workers) {
    std::printf("%-24.24s %-10s %7d %6s %9lld %9lld %8.1f s  %s\n", w.info.name.c_str(), w.state.c_str(),
                w.info.threads, w.alive ? "yes" : "no", static_cast<long long>(w.jobs_done),
                static_cast<long long>(w.in_flight), w.heartbeat_age_s, w.info.device.c_str());
    if (!w.current.empty()) std::printf("%-24s measuring %s\n", "", w.current.c_str());
    std::string versions;
    for (const auto& [name, version] : w.info.backend_versions)
      versions += (versions.empty() ? "" : ", ") + name + " " + version;
    std::printf("%-24s backends: %s (host %s)\n", "", versions.c_str(), w.info.host.c_str());
  }
  return 0;
}

}  // namespace collage::cli
