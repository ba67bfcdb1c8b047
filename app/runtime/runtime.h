// collage_runtime, C++ API: loads a compiled artifact (core/runtime/artifact.h) and runs
// it. No Qt, no SQLite, no search, no ONNX importer: the graph, the kernels'
// placement and the memory plan all come from the artifact.
//
// A Runtime is one context: its own kernels and memory arena. Separate contexts
// may run concurrently from several threads; calls on one context are serialised.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/runtime/artifact.h"
#include "core/runtime/executor.h"

namespace collage {

struct RuntimeOptions {
  bool use_memory_plan = true;  // false: the executor's dynamic buffer pool instead of the static arena
};

class Runtime {
 public:
  // Throws collage::Error (InvalidInput for a bad artifact, Io for an unreadable file).
  static std::unique_ptr<Runtime> load(const std::string& path, const RuntimeOptions& options = {});
  ~Runtime();

  const ArtifactInfo& info() const { return artifact_.info; }
  // Differences from the machine the artifact was tuned on (backend versions, device).
  const std::vector<std::string>& notes() const { return notes_; }
  const Graph& graph() const { return artifact_.graph; }
  size_t kernel_count() const { return artifact_.kernels.size(); }
  // Where load time went: reading, verifying and parsing the file vs building the kernels.
  double parse_ms() const { return parse_ms_; }
  double compile_ms() const { return compile_ms_; }
  size_t arena_bytes() const { return artifact_.memory_plan.arena_bytes; }

  // Inputs in info().inputs order; throws InvalidInput on a count, dtype or shape mismatch.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  MemoryStats last_memory_stats() const;

 private:
  Runtime() = default;
  Artifact artifact_;
  std::unique_ptr<Executor> executor_;  // refers to artifact_.graph: a Runtime never moves
  std::vector<std::string> notes_;
  double parse_ms_ = 0, compile_ms_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace collage
