// Runs a graph as a sequence of kernels (one per node now; one per fused
// sub-graph once placements exist) with a memory plan: a buffer returns to a
// pool when its last consumer has run and is reused by later allocations.
// Profiling (off by default) records each step's start and end in every run.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/kernel.h"
#include "core/runtime/memory_plan.h"

namespace collage {

struct ExecStep {
  std::unique_ptr<Kernel> kernel;
  std::vector<ValueId> inputs;   // kNoValue for omitted optional inputs
  std::vector<ValueId> outputs;  // kNoValue for outputs nobody reads
  std::string label;             // for errors and profiles
};

// When one step ran inside a profiled run: steady_clock offsets from the run's start.
struct StepTime {
  double start_ms = 0;
  double end_ms = 0;
};

struct MemoryStats {
  size_t peak_live_bytes = 0;        // max bytes held by intermediate buffers at once
  size_t allocated_bytes = 0;        // bytes of storage newly allocated during the run
  size_t reused_allocations = 0;     // allocations served from the pool (or the planned arena)
  size_t unplanned_allocations = 0;  // with a memory plan: allocations the plan did not foresee
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

  // Profiling: every run records when each step's kernel started and ended (one branch per
  // step when off). step_times() is the last run's, one entry per step, in step order.
  void set_profiling(bool on) { profiling_ = on; }
  const std::vector<StepTime>& step_times() const { return step_times_; }
  const std::vector<ExecStep>& steps() const { return steps_; }

  // Runs once on `inputs`, recording every allocation's size and lifetime.
  std::vector<BufferLifetime> trace_buffers(const std::vector<Tensor>& inputs);
  // From now on every run serves its allocations from one arena laid out by `plan`
  // (allocated here, once); an allocation the plan did not foresee falls back to the heap.
  void use_memory_plan(MemoryPlan plan);
  const MemoryPlan* memory_plan() const { return plan_ ? &*plan_ : nullptr; }

 private:
  class RunAllocator;
  class PoolAllocator;
  class TracingAllocator;
  class PlannedAllocator;
  std::vector<Tensor> run_with(const std::vector<Tensor>& inputs, RunAllocator& alloc);
  const Graph& graph_;
  std::vector<ExecStep> steps_;
  std::vector<int> last_use_;  // per value: index of the last step reading it, -1 if none
  MemoryStats stats_;
  bool reuse_ = true;
  bool profiling_ = false;
  std::vector<StepTime> step_times_;
  std::unique_ptr<PoolAllocator> pool_;  // kept across runs
  std::optional<MemoryPlan> plan_;
  std::shared_ptr<Storage> arena_;
};

}  // namespace collage
