#include "core/tuning/measure_queue.h"

#include <cstdlib>
#include <cstring>

#include "core/ir/error.h"
#include "core/runtime/artifact.h"
#include "core/tensor_io/tensor_proto.h"
#include "core/tuning/cost_store.h"
#include "core/tuning/pg_connection.h"
#include "onnx/onnx_pb.h"

namespace collage {
namespace {

// Migrations: entry i upgrades queue_schema_version i to i + 1. Jobs are unique by the
// md5 of the signature (signatures run to kilobytes, past a b-tree entry's limit).
const std::vector<const char*> kQueueMigrations = {
    // 0 -> 1
    "CREATE TABLE IF NOT EXISTS collage_workers ("
    "  name TEXT PRIMARY KEY, host TEXT NOT NULL, device TEXT NOT NULL, threads INTEGER NOT NULL,"
    "  backends TEXT NOT NULL, state TEXT NOT NULL, current TEXT NOT NULL DEFAULT '',"
    "  started_at TIMESTAMPTZ NOT NULL DEFAULT now(), last_heartbeat TIMESTAMPTZ NOT NULL DEFAULT now(),"
    "  jobs_done BIGINT NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS collage_jobs ("
    "  id BIGSERIAL PRIMARY KEY, signature TEXT NOT NULL,"
    "  signature_md5 TEXT GENERATED ALWAYS AS (md5(signature)) STORED,"
    "  threads INTEGER NOT NULL, device TEXT NOT NULL, backend TEXT NOT NULL, backend_version TEXT NOT NULL,"
    "  label TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'kernel', model TEXT NOT NULL DEFAULT '',"
    "  payload BYTEA NOT NULL, state TEXT NOT NULL DEFAULT 'pending', worker TEXT,"
    "  lease_until TIMESTAMPTZ, attempts INTEGER NOT NULL DEFAULT 0,"
    "  created_at TIMESTAMPTZ NOT NULL DEFAULT now(), finished_at TIMESTAMPTZ,"
    "  UNIQUE (signature_md5, threads, device));"
    "CREATE INDEX IF NOT EXISTS collage_jobs_open ON collage_jobs(device, state, id);"
    "CREATE TABLE IF NOT EXISTS collage_models (fingerprint TEXT PRIMARY KEY, payload BYTEA NOT NULL,"
    "  created_at TIMESTAMPTZ NOT NULL DEFAULT now());",
};

constexpr const char* kPayloadMagic = "collage-job 1\n";

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// "\nname@version\n..." -- matched in SQL with position(), no array quoting needed.
std::string backend_list(const WorkerInfo& worker) {
  std::string out = "\n";
  for (const auto& [name, version] : worker.backend_versions) out += name + "@" + version + "\n";
  return out;
}

std::string format_seconds(double s) { return std::to_string(s); }

}  // namespace

std::string job_payload(const Graph& model, const std::vector<Tensor>& inputs, const KnownReference* known) {
  std::string out = kPayloadMagic;
  std::string artifact = serialize_artifact(native_artifact(model));
  put_u64(out, artifact.size());
  out += artifact;
  put_u64(out, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string proto;
    tensor_to_proto(inputs[i], model.value(model.inputs.at(i)).name).SerializeToString(&proto);
    put_u64(out, proto.size());
    out += proto;
  }
  const bool with_reference = known && known->outputs.size() == model.outputs.size() &&
                              known->node_ms.size() == static_cast<size_t>(model.num_nodes());
  put_u64(out, with_reference ? known->outputs.size() : 0);
  if (!with_reference) return out;
  for (size_t o = 0; o < known->outputs.size(); ++o) {
    std::string proto;
    tensor_to_proto(known->outputs[o], model.value(model.outputs[o]).name).SerializeToString(&proto);
    put_u64(out, proto.size());
    out += proto;
  }
  for (double ms : known->node_ms) {
    uint64_t bits = 0;
    std::memcpy(&bits, &ms, sizeof bits);
    put_u64(out, bits);
  }
  return out;
}

void read_job_payload(const std::string& payload, const std::string& origin, Graph& model,
                      std::vector<Tensor>& inputs, KnownReference* known) {
  size_t pos = 0;
  auto fail = [&](const std::string& what) {
    throw Error(ErrorKind::InvalidInput, origin + ": malformed job payload (" + what + ")");
  };
  auto take = [&](size_t n) {
    if (payload.size() - pos < n) fail("truncated at byte " + std::to_string(pos));
    std::string part = payload.substr(pos, n);
    pos += n;
    return part;
  };
  auto u64 = [&] {
    std::string b = take(8);
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[static_cast<size_t>(i)]);
    return v;
  };
  if (take(std::strlen(kPayloadMagic)) != kPayloadMagic) fail("not a collage job");
  uint64_t artifact_size = u64();
  if (artifact_size > payload.size()) fail("artifact size past the end");
  Artifact artifact = parse_artifact(take(artifact_size), origin);
  uint64_t count = u64();
  if (count != artifact.graph.inputs.size()) fail("input count differs from the model's");
  auto tensor = [&](const std::string& what) {
    uint64_t size = u64();
    if (size > payload.size()) fail(what + " size past the end");
    onnx::TensorProto proto;
    if (!proto.ParseFromString(take(size))) fail(what + " does not parse");
    return tensor_from_proto(proto, "");
  };
  inputs.clear();
  for (uint64_t i = 0; i < count; ++i) inputs.push_back(tensor("input " + std::to_string(i)));
  KnownReference reference;
  uint64_t outputs = u64();
  if (outputs != 0) {
    if (outputs != artifact.graph.outputs.size()) fail("output count differs from the model's");
    for (uint64_t o = 0; o < outputs; ++o) reference.outputs.push_back(tensor("output " + std::to_string(o)));
    for (int32_t n = 0; n < artifact.graph.num_nodes(); ++n) {
      uint64_t bits = u64();
      double ms = 0;
      std::memcpy(&ms, &bits, sizeof ms);
      reference.node_ms.push_back(ms);
    }
  }
  if (pos != payload.size()) fail("bytes after the end");
  if (known) *known = std::move(reference);
  model = std::move(artifact.graph);
}

MeasureQueue::MeasureQueue(const std::string& url) {
  if (!cost_store::is_postgres_location(url))
    throw Error(ErrorKind::InvalidInput,
                "remote measurement needs a postgresql:// cost DB, not '" + url + "'");
  cost_store::open_postgres(url);  // creates or migrates collage_costs, which jobs refer to
  db_ = std::make_unique<pg::Connection>(url, "measurement queue");
  db_->exec("SET synchronous_commit TO off");  // as the cost store: a lost commit is re-measured
  pg::migrate(*db_, "queue_schema_version", kQueueMigrations);
}

MeasureQueue::~MeasureQueue() = default;

std::vector<int64_t> MeasureQueue::enqueue(const std::vector<MeasureJob>& jobs) {
  std::vector<int64_t> ids;
  db_->transaction([&] {
    for (const MeasureJob& job : jobs) {
      // A done job whose cost is gone (deleted, imported over) is measured again; done
      // jobs drop their payload (complete()), so it comes back with the request.
      pg::Result r = db_->query(
          "INSERT INTO collage_jobs (signature, threads, device, backend, backend_version, label, payload, "
          "kind, model) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
          "ON CONFLICT (signature_md5, threads, device) DO UPDATE SET "
          "  (state, payload) = (SELECT CASE WHEN gone THEN 'pending' ELSE collage_jobs.state END, "
          "                             CASE WHEN gone THEN EXCLUDED.payload ELSE collage_jobs.payload END "
          "    FROM (SELECT collage_jobs.state = 'done' AND NOT EXISTS (SELECT 1 FROM collage_costs c "
          "      WHERE c.signature = collage_jobs.signature AND c.threads = collage_jobs.threads "
          "      AND c.device = collage_jobs.device) AS gone) AS cost_gone) "
          "RETURNING id",
          {job.key.signature, std::to_string(job.key.threads), job.key.device, job.backend,
           job.backend_version, job.label, pg::Param::bytes(job.payload), job.kind, job.model});
      ids.push_back(std::stoll(r.text(0, 0)));
    }
  });
  return ids;
}

std::map<int64_t, JobState> MeasureQueue::states(const std::vector<int64_t>& ids) const {
  std::string list = "{";
  for (int64_t id : ids) list += (list.size() > 1 ? "," : "") + std::to_string(id);
  list += "}";
  pg::Result r = db_->query("SELECT id, state FROM collage_jobs WHERE id = ANY($1::bigint[])", {list});
  std::map<int64_t, JobState> out;
  for (int i = 0; i < r.rows(); ++i) {
    std::string s = r.text(i, 1);
    out[std::stoll(r.text(i, 0))] = s == "done"      ? JobState::Done
                                    : s == "running" ? JobState::Running
                                                     : JobState::Pending;
  }
  return out;
}

size_t MeasureQueue::live_workers(const std::string& device, int threads, double max_age_s,
                                  const std::string& backend, const std::string& version) const {
  pg::Result r = db_->query(
      "SELECT count(*) FROM collage_workers WHERE device = $1 AND threads >= $2 AND state <> 'stopped' "
      "AND last_heartbeat > now() - make_interval(secs => $3::float8) "
      "AND ($4 = '' OR position(E'\\n' || $4 || E'\\n' IN backends) > 0)",
      {device, std::to_string(threads), format_seconds(max_age_s),
       backend.empty() ? "" : backend + "@" + version});
  return static_cast<size_t>(std::stoull(r.text(0, 0)));
}

void MeasureQueue::register_worker(const WorkerInfo& worker) {
  db_->transaction([&] {
    db_->query(
        "INSERT INTO collage_workers (name, host, device, threads, backends, state) "
        "VALUES ($1, $2, $3, $4, $5, 'idle') ON CONFLICT (name) DO UPDATE SET host = $2, device = $3, "
        "threads = $4, backends = $5, state = 'idle', current = '', started_at = now(), last_heartbeat = "
        "now()",
        {worker.name, worker.host, worker.device, std::to_string(worker.threads), backend_list(worker)});
    // A restarted worker of this name gives back what its earlier self held.
    db_->query(
        "UPDATE collage_jobs SET state = 'pending', worker = NULL, lease_until = NULL "
        "WHERE worker = $1 AND state = 'running'",
        {worker.name});
  });
}

std::optional<MeasureJob> MeasureQueue::claim(const WorkerInfo& worker, double lease_s) {
  std::optional<MeasureJob> job;
  db_->transaction([&] {
    pg::Result r = db_->query(
        "UPDATE collage_jobs SET state = 'running', worker = $1, attempts = attempts + 1, "
        "  lease_until = now() + make_interval(secs => $5::float8) "
        "WHERE id = (SELECT id FROM collage_jobs WHERE device = $2 AND threads <= $3 "
        "  AND (state = 'pending' OR (state = 'running' AND lease_until < now())) "
        "  AND position(E'\\n' || backend || '@' || backend_version || E'\\n' IN $4) > 0 "
        "  ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) "
        "RETURNING id, signature, threads, backend, backend_version, label, attempts, kind, model",
        {worker.name, worker.device, std::to_string(worker.threads), backend_list(worker),
         format_seconds(lease_s)});
    if (r.rows() == 1) {
      MeasureJob j;
      j.id = std::stoll(r.text(0, 0));
      j.key = {r.text(0, 1), std::atoi(r.text(0, 2).c_str()), worker.device};
      j.backend = r.text(0, 3);
      j.backend_version = r.text(0, 4);
      j.label = r.text(0, 5);
      j.attempts = std::atoi(r.text(0, 6).c_str());
      j.kind = r.text(0, 7);
      j.model = r.text(0, 8);
      job = std::move(j);
    }
    db_->query("UPDATE collage_workers SET last_heartbeat = now(), state = $2, current = $3 WHERE name = $1",
               {worker.name, job ? "measuring" : "idle", job ? job->backend + " " + job->label : ""});
  });
  if (job) {
    pg::Result p = db_->query_binary("SELECT payload FROM collage_jobs WHERE id = $1::bigint",
                                     {std::to_string(job->id)});
    if (p.rows() == 1) job->payload = p.text(0, 0);
  }
  return job;
}

void MeasureQueue::put_model(const std::string& fingerprint, const std::string& payload) {
  db_->query("INSERT INTO collage_models (fingerprint, payload) VALUES ($1, $2) ON CONFLICT DO NOTHING",
             {fingerprint, pg::Param::bytes(payload)});
}

std::string MeasureQueue::model_payload(const std::string& fingerprint) const {
  pg::Result r =
      db_->query_binary("SELECT payload FROM collage_models WHERE fingerprint = $1", {fingerprint});
  if (r.rows() != 1)
    throw Error(ErrorKind::InvalidInput, db_->where() + ": no model '" + fingerprint + "' for a fitness job");
  return r.text(0, 0);
}

void MeasureQueue::heartbeat(const std::string& worker, double lease_s) {
  db_->transaction([&] {
    db_->query("UPDATE collage_workers SET last_heartbeat = now() WHERE name = $1", {worker});
    db_->query(
        "UPDATE collage_jobs SET lease_until = now() + make_interval(secs => $2::float8) "
        "WHERE worker = $1 AND state = 'running'",
        {worker, format_seconds(lease_s)});
  });
}

void MeasureQueue::complete(const MeasureJob& job, const std::string& worker, const CostRecord& record) {
  db_->transaction([&] {
    cost_store::upsert_cost(*db_, record);
    db_->query(
        "UPDATE collage_jobs SET state = 'done', finished_at = now(), lease_until = NULL, payload = '' "
        "WHERE id = $1",
        {std::to_string(job.id)});
    db_->query(
        "UPDATE collage_workers SET jobs_done = jobs_done + 1, state = 'idle', current = '', "
        "last_heartbeat = now() WHERE name = $1",
        {worker});
  });
}

void MeasureQueue::unregister(const std::string& worker) {
  db_->transaction([&] {
    db_->query("UPDATE collage_workers SET state = 'stopped', current = '' WHERE name = $1", {worker});
    // A job given back by a worker that stops is not an attempt that failed: its claim is undone.
    db_->query(
        "UPDATE collage_jobs SET state = 'pending', worker = NULL, lease_until = NULL, "
        "  attempts = GREATEST(attempts - 1, 0) "
        "WHERE worker = $1 AND state = 'running'",
        {worker});
  });
}

std::vector<WorkerStatus> MeasureQueue::workers(double lease_s) const {
  pg::Result r = db_->query(
      "SELECT w.name, w.host, w.device, w.threads, w.backends, w.state, w.current, "
      "  EXTRACT(EPOCH FROM now() - w.last_heartbeat), w.jobs_done, "
      "  (SELECT count(*) FROM collage_jobs j WHERE j.worker = w.name AND j.state = 'running') "
      "FROM collage_workers w ORDER BY w.name");
  std::vector<WorkerStatus> out;
  for (int i = 0; i < r.rows(); ++i) {
    WorkerStatus s;
    s.info.name = r.text(i, 0);
    s.info.host = r.text(i, 1);
    s.info.device = r.text(i, 2);
    s.info.threads = std::atoi(r.text(i, 3).c_str());
    std::string backends = r.text(i, 4);
    for (size_t start = 0, end; (end = backends.find('\n', start)) != std::string::npos; start = end + 1) {
      std::string entry = backends.substr(start, end - start);
      size_t at = entry.rfind('@');
      if (at != std::string::npos) s.info.backend_versions[entry.substr(0, at)] = entry.substr(at + 1);
    }
    s.state = r.text(i, 5);
    s.current = r.text(i, 6);
    s.heartbeat_age_s = std::strtod(r.text(i, 7).c_str(), nullptr);
    s.alive = s.state != "stopped" && s.heartbeat_age_s <= lease_s;
    s.jobs_done = std::stoll(r.text(i, 8));
    s.in_flight = std::stoll(r.text(i, 9));
    out.push_back(std::move(s));
  }
  return out;
}

std::map<std::string, int64_t> MeasureQueue::job_counts() const {
  pg::Result r = db_->query("SELECT state, count(*) FROM collage_jobs GROUP BY state");
  std::map<std::string, int64_t> out{{"pending", 0}, {"running", 0}, {"done", 0}};
  for (int i = 0; i < r.rows(); ++i) out[r.text(i, 0)] = std::stoll(r.text(i, 1));
  return out;
}

}  // namespace collage
