#include "app/runtime/runtime.h"

#include <chrono>

#include "backends/registry.h"
#include "core/backend_api/kernel_signature.h"

namespace collage {

std::unique_ptr<Runtime> Runtime::load(const std::string& path, const RuntimeOptions& options) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  auto t0 = Clock::now();
  std::unique_ptr<Runtime> rt(new Runtime());  // private constructor: make_unique cannot reach it
  rt->artifact_ = load_artifact(path);
  rt->parse_ms_ = ms_since(t0);
  const ArtifactInfo& info = rt->artifact_.info;
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
  rt->executor_ =
      std::make_unique<Executor>(rt->artifact_.graph, artifact_steps(rt->artifact_, all_backends(), copts));
  if (options.use_memory_plan) rt->executor_->use_memory_plan(rt->artifact_.memory_plan);
  rt->compile_ms_ = ms_since(t1);
  return rt;
}

Runtime::~Runtime() = default;

std::vector<Tensor> Runtime::run(const std::vector<Tensor>& inputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  // OpenMP's thread count belongs to the calling thread: a context loaded on one
  // thread and run on another still runs at the artifact's count.
  set_backend_threads(artifact_.info.threads);
  return executor_->run(inputs);
}

MemoryStats Runtime::last_memory_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return executor_->memory_stats();
}

}  // namespace collage
