#include "app/workflow/remote_fitness.h"

#include <chrono>
#include <memory>
#include <thread>

#include "app/workflow/queue_worker.h"
#include "core/backend_api/kernel_signature.h"
#include "core/tuning/measure_queue.h"
#include "core/tuning/measure_worker.h"

namespace collage::workflow {

FitnessFn remote_fitness(const Graph& graph, const std::vector<Tensor>& inputs, int runs, int threads,
                         CostDb& db, double lease_s, FitnessFn local, ProgressObserver* observer) {
  auto queue = std::make_shared<MeasureQueue>(db.location());
  const std::string device = device_fingerprint(), version = placement_backend_version();
  if (queue->live_workers(device, threads, lease_s, kPlacementBackend, version) == 0) {
    if (observer)
      observer->on_notice(
          "no measurement worker with this build's libraries is registered for this machine kind (" + device +
          ", " + std::to_string(threads) + " threads): refining locally");
    return {};
  }
  const std::string model = model_fingerprint(graph);
  queue->put_model(model, job_payload(graph, inputs));
  return [queue, &db, device, version, model, runs, threads, lease_s, local = std::move(local),
          observer](const Placement& p) {
    using Clock = std::chrono::steady_clock;
    MeasureJob job;
    job.key = placement_fitness_key(p, model, threads);
    job.kind = "fitness";
    job.model = model;
    job.backend = kPlacementBackend;
    job.backend_version = version;
    job.label = "refine genome (" + std::to_string(p.kernels.size()) + " kernels)";
    job.payload =
        worker_channel::fitness_request(std::vector<KernelGroup>(p.kernels.begin(), p.kernels.end()), runs);
    const int64_t id = queue->enqueue({job}).at(0);
    auto last_alive = Clock::now();
    for (;;) {
      if (observer && observer->cancel_requested())
        return Cost::invalid("cancelled before a worker measured it", CostStatus::NotMeasured);
      if (queue->states({id})[id] == JobState::Done)
        if (auto record = db.find(job.key)) return record->cost;
      if (queue->live_workers(device, threads, lease_s, kPlacementBackend, version) > 0) {
        last_alive = Clock::now();
      } else if (std::chrono::duration<double>(Clock::now() - last_alive).count() > lease_s) {
        if (observer)
          observer->on_notice("the measurement workers stopped answering: timing this genome locally");
        return local(p);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling the queue
    }
  };
}

}  // namespace collage::workflow
