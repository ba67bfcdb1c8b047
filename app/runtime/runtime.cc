#include "app/runtime/runtime.h"

#include <chrono>

#include "backends/registry.h"
#include "core/backend_api/kernel_signature.h"
#include "core/backend_api/shared_constants.h"

namespace collage {

std::unique_ptr<Runtime> Runtime::load(const std::string& path, const RuntimeOptions& options) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  auto t0 = Clock::now();
  std::unique_ptr<Runtime> rt(new Runtime());  // private constructor: make_unique cannot reach it
  rt->buckets_ = load_artifact_buckets(path);
  rt->parse_ms_ = ms_since(t0);
  const ArtifactInfo& info = rt->info();
  for (const auto& [name, version] : info.backend_versions) {
    const BackendSpec* b = find_backend(name);
    if (b && b->version != version)
      rt->notes_.push_back("backend " + name + " is version " + b->version +
                           ", the artifact was tuned with " + version);
  }
  if (!info.device.empty() && info.device != device_fingerprint())
    rt->notes_.push_back("tuned on a different device (" + info.device +
                         "); the placement may not be the fastest here");
  set_backend_threads(info.threads);
  CompileOptions copts;
  copts.threads = info.threads;
  auto t1 = Clock::now();
  // The buckets' kernels share their converted weights (packed once per layout, not per bucket).
  SharedConstants shared;
  SharedConstantsScope scope(&shared);
  for (const ArtifactBucket& bucket : rt->buckets_) {
    auto executor = std::make_unique<Executor>(bucket.artifact.graph,
                                               artifact_steps(bucket.artifact, all_backends(), copts));
    if (options.use_memory_plan) executor->use_memory_plan(bucket.artifact.memory_plan);
    rt->executors_.push_back(std::move(executor));
  }
  rt->compile_ms_ = ms_since(t1);
  rt->shared_weights_ = shared.hits();
  return rt;
}

Runtime::~Runtime() = default;

size_t Runtime::select(const std::vector<Shape>& shapes) const {
  if (buckets_.size() == 1) return 0;  // the executor names a wrong shape itself
  return select_bucket(buckets_, shapes);
}

std::vector<Tensor> Runtime::run(const std::vector<Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  size_t bucket = select(shapes);
  // OpenMP's thread count belongs to the calling thread: a context loaded on one
  // thread and run on another still runs at the artifact's count.
  set_backend_threads(info().threads);
  std::vector<Tensor> outputs = executors_[bucket]->run(inputs);
  last_bucket_ = bucket;
  return outputs;
}

size_t Runtime::last_bucket() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_bucket_;
}

MemoryStats Runtime::last_memory_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return executors_[last_bucket_]->memory_stats();
}

}  // namespace collage
