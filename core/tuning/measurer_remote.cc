// Measurer's remote phase: the candidates the cost DB lacks go to its measurement
// queue (measure_queue.h), and their costs are awaited as `collage worker`s land them.
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "core/backend_api/kernel_signature.h"
#include "core/ir/error.h"
#include "core/tuning/measure_queue.h"
#include "core/tuning/measurer.h"

namespace collage {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(100);
constexpr size_t kEnqueueBatch = 16;  // payloads held in memory at once

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

void Measurer::measure_remotely(const std::vector<Candidate>& candidates,
                                const std::vector<std::string>& signatures,
                                const std::vector<const BackendSpec*>& backend_of,
                                std::vector<MeasuredCandidate>& out, std::vector<bool>& settled,
                                ProgressObserver* observer) {
  const std::string device = device_fingerprint();
  const auto start = Clock::now();
  size_t settled_count = 0;
  auto settle = [&](size_t i, const Cost& cost, bool from_cache) {
    out[i].signature = signatures[i];
    out[i].cost = cost;
    out[i].from_cache = from_cache;
    settled[i] = true;
    ++settled_count;
    if (observer) observer->on_measured(i, out[i]);
  };
  auto progress = [&](const std::string& message) {
    if (!observer) return;
    ProgressEvent e;
    e.stage = ProgressEvent::Stage::Measure;
    e.done = settled_count;
    e.total = candidates.size();
    e.message = message;
    e.elapsed_ms = 1000 * seconds_since(start);
    observer->on_progress(e);
  };

  // What the DB has settles now; each missing signature becomes one job.
  std::map<std::string, std::vector<size_t>> missing;  // signature -> candidates, in order
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (missing.count(signatures[i])) {
      missing[signatures[i]].push_back(i);
    } else if (auto record = db_->find({signatures[i], options_.threads, device})) {
      settle(i, record->cost, true);
    } else {
      missing[signatures[i]].push_back(i);
    }
  }
  if (missing.empty()) return;

  MeasureQueue queue(options_.remote_queue);
  // Only backends some live worker of this kind can measure go out.
  std::map<std::string, bool> served;  // backend -> a worker takes it
  std::vector<std::string> order;      // signatures to enqueue, in candidate order
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto m = missing.find(signatures[i]);
    if (m == missing.end() || m->second.front() != i) continue;
    const BackendSpec& b = *backend_of[i];
    if (!served.count(b.name))
      served[b.name] =
          queue.live_workers(device, options_.threads, options_.worker_lease_s, b.name, b.version) > 0;
    if (served[b.name]) order.push_back(signatures[i]);
  }
  std::string unserved;
  for (const auto& [name, ok] : served)
    if (!ok) unserved += (unserved.empty() ? "" : ", ") + name;
  if (observer && !unserved.empty())
    observer->on_notice(
        (order.empty() ? std::string("no measurement worker") : "no measurement worker for " + unserved) +
        " is registered for this machine kind (" + device + ", " + std::to_string(options_.threads) +
        " threads): measuring " + (order.empty() ? "" : "those ") + "locally");
  if (order.empty()) return;

  std::map<int64_t, std::string> waiting;  // job id -> signature
  for (size_t first = 0; first < order.size(); first += kEnqueueBatch) {
    std::vector<MeasureJob> jobs;
    for (size_t k = first; k < std::min(order.size(), first + kEnqueueBatch); ++k) {
      size_t i = missing[order[k]].front();
      const Candidate& c = candidates[i];
      SubGraph sub = make_subgraph(graph_, c.nodes);
      std::vector<Tensor> inputs;
      for (ValueId v : sub.inputs) inputs.push_back(values_[static_cast<size_t>(v)]);
      MeasureJob job;
      job.key = {signatures[i], options_.threads, device};
      job.backend = c.backend;
      job.backend_version = backend_of[i]->version;
      job.label = c.label;
      KnownReference known;
      if (node_ms_.size() == static_cast<size_t>(graph_.num_nodes())) {
        for (ValueId v : sub.outputs) known.outputs.push_back(values_[static_cast<size_t>(v)]);
        for (NodeId n : sub.node_list) known.node_ms.push_back(node_ms_[static_cast<size_t>(n)]);
      }
      job.payload = job_payload(extract_submodel(graph_, sub), inputs, &known);
      jobs.push_back(std::move(job));
    }
    std::vector<int64_t> ids = queue.enqueue(jobs);
    for (size_t k = 0; k < ids.size(); ++k) waiting[ids[k]] = order[first + k];
  }
  progress("queued " + std::to_string(waiting.size()) + " kernels for the measurement workers");

  auto last_alive = Clock::now();
  while (!waiting.empty()) {
    if (observer && observer->cancel_requested()) throw Error(ErrorKind::Cancelled, "measuring cancelled");
    std::vector<int64_t> ids;
    for (const auto& [id, sig] : waiting) ids.push_back(id);
    size_t running = 0;
    for (const auto& [id, state] : queue.states(ids)) {
      if (state == JobState::Running) ++running;
      if (state != JobState::Done) continue;
      const std::string& sig = waiting[id];
      auto record = db_->find({sig, options_.threads, device});
      if (!record) continue;  // done, but the cost was replaced since: wait for the re-run
      for (size_t i : missing[sig]) settle(i, record->cost, i != missing[sig].front());  // repeats: as cached
      progress(backend_of[missing[sig].front()]->name + " " + candidates[missing[sig].front()].label);
      waiting.erase(id);
    }
    if (waiting.empty()) break;
    if (queue.live_workers(device, options_.threads, options_.worker_lease_s) > 0) {
      last_alive = Clock::now();
    } else if (seconds_since(last_alive) > options_.worker_lease_s) {
      if (observer)
        observer->on_notice("the measurement workers stopped answering: measuring the remaining " +
                            std::to_string(waiting.size()) + " kernels locally");
      return;
    }
    std::this_thread::sleep_for(kPollInterval);  // polling the queue, not standing in for a join
  }
}

}  // namespace collage
