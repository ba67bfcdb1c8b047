// collage_runtime, C++ API: loads a compiled artifact (core/runtime/artifact.h) and runs
// it. No Qt, no SQLite, no search, no ONNX importer: the graph, the kernels'
// placement and the memory plan all come from the artifact.
//
// An artifact holds one plan, or one per shape bucket (`collage export` of a placement
// tuned with --dim seq=16,32,...): every plan's kernels are built at load, so no run pays
// for a first use, and each run takes the plan whose input shapes its inputs have.
//
// A Runtime is one context: its own kernels and memory arenas. Separate contexts
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

  // The first plan's; model name, device, threads and backends are every plan's.
  const ArtifactInfo& info() const { return info(0); }
  // Differences from the machine the artifact was tuned on (backend versions, device).
  const std::vector<std::string>& notes() const { return notes_; }
  // Where load time went: reading, verifying and parsing the file vs building the kernels.
  double parse_ms() const { return parse_ms_; }
  double compile_ms() const { return compile_ms_; }
  // Converted weights (packed, reordered) a kernel took from an earlier kernel instead of
  // converting its own: across buckets, the same weight in the same layout (SharedConstants).
  size_t shared_weights() const { return shared_weights_; }

  // Plans, in file order; each with its dims (empty for a one-plan artifact).
  size_t bucket_count() const { return buckets_.size(); }
  const DimValues& bucket_dims(size_t bucket) const { return buckets_.at(bucket).dims; }
  const ArtifactInfo& info(size_t bucket) const { return buckets_.at(bucket).artifact.info; }
  const Graph& graph(size_t bucket = 0) const { return buckets_.at(bucket).artifact.graph; }
  size_t kernel_count(size_t bucket = 0) const { return buckets_.at(bucket).artifact.kernels.size(); }
  size_t arena_bytes(size_t bucket = 0) const { return buckets_.at(bucket).artifact.memory_plan.arena_bytes; }
  // The plan that takes inputs of these shapes (info(b).inputs order); InvalidInput listing
  // the buckets' input shapes when none does.
  size_t select(const std::vector<Shape>& shapes) const;

  // Inputs in info().inputs order, run on the plan select() picks for their shapes; throws
  // InvalidInput on a count or dtype mismatch or a shape no plan takes.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // The plan of the last successful run (0 before any).
  size_t last_bucket() const;
  MemoryStats last_memory_stats() const;

 private:
  Runtime() = default;
  std::vector<ArtifactBucket> buckets_;               // filled once at load, never resized
  std::vector<std::unique_ptr<Executor>> executors_;  // one per bucket, referring to its graph
  std::vector<std::string> notes_;
  double parse_ms_ = 0, compile_ms_ = 0;
  size_t shared_weights_ = 0;
  size_t last_bucket_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace collage
