// Runs a graph as a sequence of kernels (one per node now; one per fused
// sub-graph once placements exist) with a memory plan: a buffer returns to a
// pool when its last consumer has run and is reused by later allocations.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/kernel.h"

namespace collage {

struct ExecStep {
  std::unique_ptr<Kernel> kernel;
  std::vector<ValueId> inputs;   // kNoValue for omitted optional inputs
  std::vector<ValueId> outputs;  // kNoValue for outputs nobody reads
  std::string label;             // for errors and profiles
};

struct MemoryStats {
  size_t peak_live_bytes = 0;     // max bytes held by intermediate buffers at once
  size_t allocated_bytes = 0;     // bytes of storage newly allocated during the run
  size_t reused_allocations = 0;  // allocations served from the pool
};

// Steps with one kernel per node, made by `make_kernel`, in node order.
using NodeKernelFactory = std::function<std::unique_ptr<Kernel>(const Node&)>;
std::vector<ExecStep> per_node_steps(const Graph& graph, const NodeKernelFactory& make_kernel);

class Executor {
 public:
  // `graph` must outlive the executor. Steps must be in a valid execution order.
  Executor(const Graph& graph, std::vector<ExecStep> steps);
  ~Executor();

  // Inputs in graph.inputs order; throws InvalidInput on count/dtype/shape mismatch.
  // Returns outputs in graph.outputs order.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs_by_name);

  const MemoryStats& memory_stats() const { return stats_; }
  // Turns buffer reuse off (to measure what the memory plan saves).
  void set_reuse_buffers(bool reuse) { reuse_ = reuse; }

 private:
  class PoolAllocator;
  const Graph& graph_;
  std::vector<ExecStep> steps_;
  std::vector<int> last_use_;  // per value: index of the last step reading it, -1 if none
  MemoryStats stats_;
  bool reuse_ = true;
};

}  // namespace collage
