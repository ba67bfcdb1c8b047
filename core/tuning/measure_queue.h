// The measurement queue in a team's PostgreSQL cost DB. Tuners (`tune --remote`)
// enqueue the candidates the DB lacks; `collage worker`s on machines of the target
// kind claim them (SELECT ... FOR UPDATE SKIP LOCKED), measure each in their isolated
// measure worker process, and store the cost and finish the job in one transaction.
//
// Invariants:
// - A job is keyed like its cost (signature, threads, device): two tuners asking for
//   the same kernel share one job, and a job is `done` exactly when its cost row exists
//   (both written in one transaction).
// - A worker claims only jobs of its own device fingerprint, with at most its thread
//   budget, for backend versions it has: a cost is never measured on the wrong kind.
// - A claimed job carries a lease that the worker's heartbeat extends; a job whose
//   lease ran out (its worker died or hangs) is claimable again (attempts counts claims).
// - A job is self-contained (its payload: the candidate as a small model with its
//   constants, plus its input tensors), so workers need no shared filesystem.
// Tables: collage_workers, collage_jobs; version `queue_schema_version` in collage_meta.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/subgraph.h"
#include "core/ir/tensor.h"
#include "core/tuning/cost_db.h"
#include "core/tuning/measure_worker.h"

namespace collage {

namespace pg {
class Connection;
}

// Placement fitness jobs (refinement): backend kPlacementBackend, at the version
// placement_backend_version() of the tuner's build (a worker with other library versions
// does not take them); the model travels once (put_model), keyed by its fingerprint.
inline constexpr const char* kPlacementBackend = "placement";

struct MeasureJob {
  int64_t id = 0;
  CostKey key;
  std::string backend, backend_version, label;
  std::string kind = "kernel";  // or "fitness"
  std::string model;            // fitness: the model's fingerprint (collage_models)
  // kernel: job_payload(); fitness: the worker protocol's "fitness ..." request line.
  // Filled for enqueue and by claim().
  std::string payload;
  int attempts = 0;  // claims so far, this one included
};

struct WorkerInfo {
  std::string name;  // unique in the DB; a restarted worker of the same name takes its row over
  std::string host;
  std::string device;                                   // device_fingerprint()
  int threads = 1;                                      // the largest thread count of a job it takes
  std::map<std::string, std::string> backend_versions;  // backend -> version it measures
};

struct WorkerStatus {
  WorkerInfo info;
  std::string state;  // "idle", "measuring", "stopped"
  double heartbeat_age_s = 0;
  bool alive = false;  // heartbeat within the lease
  int64_t jobs_done = 0;
  int64_t in_flight = 0;
  std::string current;  // what it measures now ("onednn Conv+Relu")
};

enum class JobState { Pending, Running, Done };

// A job's payload: the sub-model (extract_submodel, subgraph.h) in the artifact format,
// its input tensors (TensorProto) and, when the tuner has them, its native reference
// outputs and node times (the worker then skips its own reference run).
std::string job_payload(const Graph& model, const std::vector<Tensor>& inputs,
                        const KnownReference* known = nullptr);
// Throws InvalidInput naming the job for a payload that does not parse. `known`
// receives the reference (empty when the payload carries none).
void read_job_payload(const std::string& payload, const std::string& origin, Graph& model,
                      std::vector<Tensor>& inputs, KnownReference* known = nullptr);

class MeasureQueue {
 public:
  // Connects and creates or migrates the queue's tables. Throws Error(Io) when the
  // server cannot be reached, InvalidInput for a foreign or newer schema.
  explicit MeasureQueue(const std::string& url);
  ~MeasureQueue();
  MeasureQueue(const MeasureQueue&) = delete;
  MeasureQueue& operator=(const MeasureQueue&) = delete;

  // ---- tuner side ----
  // Enqueues each job (pending again if an earlier one for its key was done), returns
  // the job ids, aligned. One transaction.
  std::vector<int64_t> enqueue(const std::vector<MeasureJob>& jobs);
  std::map<int64_t, JobState> states(const std::vector<int64_t>& ids) const;
  // Live workers (heartbeat within `max_age_s`) that can measure on `device` with
  // `threads` threads (and, if given, `backend` at `version`).
  size_t live_workers(const std::string& device, int threads, double max_age_s,
                      const std::string& backend = "", const std::string& version = "") const;

  // A model for fitness jobs, stored once (job_payload of the whole graph).
  void put_model(const std::string& fingerprint, const std::string& payload);
  std::string model_payload(const std::string& fingerprint) const;

  // ---- worker side ----
  void register_worker(const WorkerInfo& worker);
  // The oldest job this worker may take, claimed with a lease of `lease_s` (payload
  // included), or nothing. Also a heartbeat.
  std::optional<MeasureJob> claim(const WorkerInfo& worker, double lease_s);
  // The worker is alive; its running job's lease is extended by `lease_s`.
  void heartbeat(const std::string& worker, double lease_s);
  // Stores the cost and marks the job done, one transaction; counts it for `worker`.
  void complete(const MeasureJob& job, const std::string& worker, const CostRecord& record);
  // Marks `worker` stopped and gives back its running jobs as pending, their claim's attempt undone.
  void unregister(const std::string& worker);

  // ---- listing ----
  std::vector<WorkerStatus> workers(double lease_s) const;
  // Jobs per state ("pending", "running", "done").
  std::map<std::string, int64_t> job_counts() const;

 private:
  std::unique_ptr<pg::Connection> db_;
};

}  // namespace collage
