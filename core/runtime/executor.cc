#include "core/runtime/executor.h"

#include <algorithm>
#include <unordered_set>

namespace collage {

std::vector<ExecStep> per_node_steps(const Graph& graph, const NodeKernelFactory& make_kernel) {
  std::vector<ExecStep> steps;
  steps.reserve(graph.nodes.size());
  for (const Node& node : graph.nodes) {
    ExecStep step;
    step.kernel = make_kernel(node);
    step.inputs = node.inputs;
    step.outputs = node.outputs;
    step.label = node.describe();
    steps.push_back(std::move(step));
  }
  return steps;
}

// What a run needs from its allocator beyond TensorAllocator.
class Executor::RunAllocator : public TensorAllocator {
 public:
  virtual void begin_step(int /*step*/) {}
  virtual void end_step(int /*step*/) {}
  // Called with a tensor whose value is dead.
  virtual void release(Tensor& tensor) { tensor = Tensor(); }
};

// Best-fit reuse of released storage; tracks live bytes for the memory report.
class Executor::PoolAllocator : public RunAllocator {
 public:
  PoolAllocator(MemoryStats& stats, bool reuse) : stats_(stats), reuse_(reuse) {}
  // Buffers released in one run serve the next: a run in steady state allocates
  // nothing (fresh large blocks would cost page faults and zeroing every run).
  void begin_run(bool reuse) {
    reuse_ = reuse;
    if (!reuse_) free_.clear();
    live_ = 0;
    owned_.clear();
  }

  Tensor allocate(DType dtype, const Shape& shape) override {
    size_t bytes = static_cast<size_t>(shape_size(shape)) * dtype_size(dtype);
    std::shared_ptr<Storage> storage;
    auto it = free_.lower_bound(bytes);
    // Only reuse buffers at most twice the request so big ones are not wasted on small tensors.
    if (reuse_ && it != free_.end() && it->first <= std::max<size_t>(bytes * 2, 4096)) {
      storage = std::move(it->second);
      free_.erase(it);
      ++stats_.reused_allocations;
    } else {
      storage = std::make_shared<Storage>(bytes);
      stats_.allocated_bytes += bytes;
    }
    live_ += storage->capacity();
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, live_);
    owned_.insert(storage.get());
    return Tensor(dtype, shape, std::move(storage));
  }

  // Recycles the storage once no alias holds it.
  void release(Tensor& tensor) override {
    std::shared_ptr<Storage> storage = tensor.storage();
    tensor = Tensor();
    if (!storage || storage.use_count() != 1) return;
    if (owned_.erase(storage.get()) == 0) return;  // constants and caller inputs are not ours
    live_ -= storage->capacity();
    if (reuse_) free_.emplace(storage->capacity(), std::move(storage));
  }

 private:
  MemoryStats& stats_;
  bool reuse_;
  size_t live_ = 0;
  std::multimap<size_t, std::shared_ptr<Storage>> free_;
  std::unordered_set<const Storage*> owned_;
};

// Fresh storage per allocation; notes when each storage dies (after which step).
class Executor::TracingAllocator : public RunAllocator {
 public:
  Tensor allocate(DType dtype, const Shape& shape) override {
    size_t bytes = static_cast<size_t>(shape_size(shape)) * dtype_size(dtype);
    auto storage = std::make_shared<Storage>(bytes);
    lifetimes_.push_back(BufferLifetime{bytes, step_, step_, false});
    alive_.push_back(storage);
    return Tensor(dtype, shape, std::move(storage));
  }
  // A buffer alive when a step starts may be read by it, even if it dies right after.
  void begin_step(int step) override {
    step_ = step;
    mark_alive(step);
  }
  void end_step(int step) override { mark_alive(step); }
  // After the run's own references are gone: what is still alive went to the caller.
  std::vector<BufferLifetime> finish() {
    for (size_t i = 0; i < alive_.size(); ++i)
      if (!alive_[i].expired()) lifetimes_[i].outlives_run = true;
    return lifetimes_;
  }

 private:
  void mark_alive(int step) {
    for (size_t i = first_open_; i < alive_.size(); ++i)
      if (!alive_[i].expired()) lifetimes_[i].last_step = step;
    while (first_open_ < alive_.size() && alive_[first_open_].expired()) ++first_open_;
  }
  int step_ = 0;
  size_t first_open_ = 0;  // buffers before it are all dead: keeps the trace linear-ish
  std::vector<BufferLifetime> lifetimes_;
  std::vector<std::weak_ptr<Storage>> alive_;
};

// Serves the k-th allocation of a run from the plan's k-th arena slot.
class Executor::PlannedAllocator : public RunAllocator {
 public:
  PlannedAllocator(const MemoryPlan& plan, const std::shared_ptr<Storage>& arena, MemoryStats& stats)
      : plan_(plan), arena_(arena), stats_(stats) {
    stats_.peak_live_bytes = plan.arena_bytes;
  }
  Tensor allocate(DType dtype, const Shape& shape) override {
    size_t bytes = static_cast<size_t>(shape_size(shape)) * dtype_size(dtype);
    size_t k = next_++;
    if (k < plan_.buffers.size() && plan_.buffers[k].offset != MemoryPlan::kHeap &&
        bytes <= static_cast<size_t>(plan_.buffers[k].bytes)) {
      ++stats_.reused_allocations;
      auto view = std::make_shared<Storage>(arena_->data() + plan_.buffers[k].offset, bytes, arena_);
      return Tensor(dtype, shape, std::move(view));
    }
    if (k >= plan_.buffers.size() || plan_.buffers[k].offset != MemoryPlan::kHeap ||
        bytes != static_cast<size_t>(plan_.buffers[k].bytes))
      ++stats_.unplanned_allocations;
    stats_.allocated_bytes += bytes;
    stats_.peak_live_bytes += bytes;  // heap buffers (outputs) are counted as never freed
    return Tensor(dtype, shape);
  }

 private:
  const MemoryPlan& plan_;
  const std::shared_ptr<Storage>& arena_;
  MemoryStats& stats_;
  size_t next_ = 0;
};

Executor::Executor(const Graph& graph, std::vector<ExecStep> steps)
    : graph_(graph), steps_(std::move(steps)) {
  last_use_.assign(graph_.values.size(), -1);
  std::vector<bool> available(graph_.values.size(), false);
  for (size_t v = 0; v < graph_.values.size(); ++v)
    available[v] = graph_.values[v].constant.has_value() || graph_.values[v].is_graph_input;
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (ValueId in : steps_[s].inputs) {
      if (in == kNoValue) continue;
      if (!available[static_cast<size_t>(in)])
        throw Error(ErrorKind::Internal,
                    steps_[s].label + " reads '" + graph_.value(in).name + "' before it is computed");
      last_use_[static_cast<size_t>(in)] = static_cast<int>(s);
    }
    for (ValueId out : steps_[s].outputs)
      if (out != kNoValue) available[static_cast<size_t>(out)] = true;
  }
  for (ValueId out : graph_.outputs)
    if (!available[static_cast<size_t>(out)])
      throw Error(ErrorKind::Internal, "graph output '" + graph_.value(out).name + "' is never computed");
}

Executor::~Executor() = default;

std::vector<Tensor> Executor::run(const std::map<std::string, Tensor>& inputs_by_name) {
  std::vector<Tensor> inputs;
  for (ValueId id : graph_.inputs) {
    auto it = inputs_by_name.find(graph_.value(id).name);
    if (it == inputs_by_name.end())
      throw Error(ErrorKind::InvalidInput, "missing input '" + graph_.value(id).name + "'");
    inputs.push_back(it->second);
  }
  for (const auto& [name, t] : inputs_by_name) {
    ValueId id = graph_.find_value(name);
    if (id == kNoValue || !graph_.value(id).is_graph_input)
      throw Error(ErrorKind::InvalidInput, "the model has no input named '" + name + "'");
  }
  return run(inputs);
}

std::vector<BufferLifetime> Executor::trace_buffers(const std::vector<Tensor>& inputs) {
  stats_ = MemoryStats{};
  TracingAllocator alloc;
  std::vector<Tensor> outputs = run_with(inputs, alloc);
  return alloc.finish();  // while `outputs` still holds what the caller would get
}

void Executor::use_memory_plan(MemoryPlan plan) {
  arena_ = std::make_shared<Storage>(std::max<size_t>(plan.arena_bytes, 1));
  plan_ = std::move(plan);
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  stats_ = MemoryStats{};
  if (plan_) {
    PlannedAllocator alloc(*plan_, arena_, stats_);
    return run_with(inputs, alloc);
  }
  if (!pool_) pool_ = std::make_unique<PoolAllocator>(stats_, reuse_);
  pool_->begin_run(reuse_);
  return run_with(inputs, *pool_);
}

std::vector<Tensor> Executor::run_with(const std::vector<Tensor>& inputs, RunAllocator& alloc) {
  if (inputs.size() != graph_.inputs.size())
    throw Error(ErrorKind::InvalidInput, "the model takes " + std::to_string(graph_.inputs.size()) +
                                             " inputs, got " + std::to_string(inputs.size()));
  std::vector<Tensor> slots(graph_.values.size());
  for (size_t v = 0; v < graph_.values.size(); ++v)
    if (graph_.values[v].constant) slots[v] = *graph_.values[v].constant;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph_.value(graph_.inputs[i]);
    if (v.kind != ValueKind::Tensor || !inputs[i].is_dense()) {
      if (!holds_kind(inputs[i], v.kind) || inputs[i].dtype() != v.dtype)
        throw Error(ErrorKind::InvalidInput, "input '" + v.name + "' must be a " + value_kind_name(v.kind) +
                                                 " of " + dtype_name(v.dtype) + ", got " +
                                                 describe_value(inputs[i]));
      slots[static_cast<size_t>(graph_.inputs[i])] = inputs[i];
      continue;
    }
    // A body's input may have a shape decided as it runs: any shape, its dtype only.
    if (inputs[i].dtype() != v.dtype || (v.shape_known && inputs[i].shape() != v.shape))
      throw Error(ErrorKind::InvalidInput, "input '" + v.name + "' must be " + describe_type(v) + ", got " +
                                               describe_value(inputs[i]));
    slots[static_cast<size_t>(graph_.inputs[i])] = inputs[i];
  }
  std::vector<const Tensor*> args;
  using Clock = std::chrono::steady_clock;
  const bool profiling = profiling_;
  Clock::time_point run_start;
  if (profiling) {
    step_times_.assign(steps_.size(), StepTime{});
    run_start = Clock::now();
  }
  auto since_start = [&run_start] {
    return std::chrono::duration<double, std::milli>(Clock::now() - run_start).count();
  };
  for (size_t s = 0; s < steps_.size(); ++s) {
    ExecStep& step = steps_[s];
    args.clear();
    for (ValueId in : step.inputs) args.push_back(in == kNoValue ? nullptr : &slots[static_cast<size_t>(in)]);
    alloc.begin_step(static_cast<int>(s));
    if (profiling) step_times_[s].start_ms = since_start();
    std::vector<Tensor> outs = step.kernel->run(args, alloc);
    if (profiling) step_times_[s].end_ms = since_start();
    if (outs.size() < step.outputs.size())
      throw Error(ErrorKind::Internal, step.label + " returned " + std::to_string(outs.size()) +
                                           " outputs, expected " + std::to_string(step.outputs.size()));
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      ValueId out = step.outputs[k];
      if (out == kNoValue) continue;
      const Value& v = graph_.value(out);
      // A shape left to the run (shape_known false) is whatever the kernel gives; a dtype never is.
      const bool mismatch = (outs[k].shape() != v.shape && v.shape_known) || outs[k].dtype() != v.dtype ||
                            !holds_kind(outs[k], v.kind);
      if (mismatch && v.producer != kNoNode &&
          graph_.node(v.producer).has_bodies())  // what the inputs made a body do: not a kernel's fault
        throw Error(ErrorKind::InvalidInput,
                    graph_.node(v.producer).describe() + ": output '" + v.name + "' came out " +
                        describe_value(outs[k]) + " on these inputs, but the model was imported for " +
                        describe_type(v) +
                        " (its bodies give other shapes for other values): bind the inputs that decide it "
                        "(--bind NAME=FILE.pb)");
      if (mismatch)
        throw Error(ErrorKind::Internal, step.label + ": output '" + v.name + "' is " +
                                             describe_value(outs[k]) + ", the graph says " +
                                             describe_type(v));
      slots[static_cast<size_t>(out)] = std::move(outs[k]);
    }
    outs.clear();  // drop unused extra outputs before recycling
    for (ValueId in : step.inputs) {
      if (in == kNoValue || last_use_[static_cast<size_t>(in)] != static_cast<int>(s)) continue;
      if (graph_.value(in).is_graph_output) continue;
      alloc.release(slots[static_cast<size_t>(in)]);
    }
    // Outputs nobody reads die at once.
    for (ValueId out : step.outputs)
      if (out != kNoValue && last_use_[static_cast<size_t>(out)] < 0 && !graph_.value(out).is_graph_output)
        alloc.release(slots[static_cast<size_t>(out)]);
    alloc.end_step(static_cast<int>(s));
  }
  std::vector<Tensor> results;
  for (ValueId out : graph_.outputs) results.push_back(slots[static_cast<size_t>(out)]);
  return results;
}

}  // namespace collage
