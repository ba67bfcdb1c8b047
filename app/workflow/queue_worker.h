// `collage worker`: serves a team's measurement queue (core/tuning/measure_queue.h)
// from this machine. It registers (device fingerprint, backend versions, thread
// budget), claims jobs of its kind one at a time, measures each in an isolated
// measure worker process (as `tune` does locally: a crashing kernel costs that job an
// invalid cost, not the worker), stores the cost and finishes the job in one
// transaction, and heartbeats from a second connection so its lease holds while a
// kernel runs. Stops when the observer asks (Ctrl+C, SIGTERM; a kernel being timed is
// stopped too, its measure worker killed), after `max_jobs`, or after `idle_exit_s` without
// work; it gives back a job it has not finished, as unclaimed (its attempt undone).
#pragma once

#include <string>

#include "core/ir/settings.h"
#include "core/tuning/measurer.h"
#include "core/tuning/progress.h"

namespace collage::workflow {

struct QueueWorkerOptions {
  std::string cost_db;                        // postgresql://...
  std::string name;                           // empty: <host>-<pid>
  int threads = 0;                            // the largest job thread count taken; 0: this machine's cores
  double lease_s = kSettings.worker_lease_s;  // a job's lease, renewed every lease_s / 3 by the heartbeat
  int max_jobs = 0;                           // 0: no limit
  double idle_exit_s = 0;                     // 0: wait for work forever
  MeasureOptions measure;                     // sampling and tolerance (threads come from each job)
};

struct QueueWorkerReport {
  std::string name;
  int jobs_done = 0;
  int jobs_invalid = 0;  // of those, with an invalid cost (crashed, timed out, refused...)
};

// The version of kPlacementBackend (measure_queue.h) in this build: a digest of every
// backend's name and version, so a genome is timed only by a worker with the same libraries.
std::string placement_backend_version();

// Throws Error(InvalidInput) for a cost DB that is not PostgreSQL, Error(Io) when it
// cannot be reached. Each finished job is reported through observer->on_notice.
QueueWorkerReport run_queue_worker(const QueueWorkerOptions& options, ProgressObserver* observer);

}  // namespace collage::workflow
