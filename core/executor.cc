#include "core/executor.h"

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

// Best-fit reuse of released storage; tracks live bytes for the memory report.
class Executor::PoolAllocator : public TensorAllocator {
 public:
  PoolAllocator(MemoryStats& stats, bool reuse) : stats_(stats), reuse_(reuse) {}

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

  // Called with a tensor whose value is dead; recycles the storage once no alias holds it.
  void release(Tensor& tensor) {
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

Executor::Executor(const Graph& graph, std::vector<ExecStep> steps) : graph_(graph), steps_(std::move(steps)) {
  last_use_.assign(graph_.values.size(), -1);
  std::vector<bool> available(graph_.values.size(), false);
  for (size_t v = 0; v < graph_.values.size(); ++v)
    available[v] = graph_.values[v].constant.has_value() || graph_.values[v].is_graph_input;
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (ValueId in : steps_[s].inputs) {
      if (in == kNoValue) continue;
      if (!available[static_cast<size_t>(in)])
        throw Error(ErrorKind::Internal, steps_[s].label + " reads '" + graph_.value(in).name + "' before it is computed");
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

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  if (inputs.size() != graph_.inputs.size())
    throw Error(ErrorKind::InvalidInput, "the model takes " + std::to_string(graph_.inputs.size()) + " inputs, got " +
                                             std::to_string(inputs.size()));
  stats_ = MemoryStats{};
  PoolAllocator alloc(stats_, reuse_);
  std::vector<Tensor> slots(graph_.values.size());
  for (size_t v = 0; v < graph_.values.size(); ++v)
    if (graph_.values[v].constant) slots[v] = *graph_.values[v].constant;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph_.value(graph_.inputs[i]);
    if (inputs[i].dtype() != v.dtype || inputs[i].shape() != v.shape)
      throw Error(ErrorKind::InvalidInput, "input '" + v.name + "' must be " + dtype_name(v.dtype) + " " +
                                               shape_to_string(v.shape) + ", got " + dtype_name(inputs[i].dtype()) +
                                               " " + shape_to_string(inputs[i].shape()));
    slots[static_cast<size_t>(graph_.inputs[i])] = inputs[i];
  }
  std::vector<const Tensor*> args;
  for (size_t s = 0; s < steps_.size(); ++s) {
    ExecStep& step = steps_[s];
    args.clear();
    for (ValueId in : step.inputs) args.push_back(in == kNoValue ? nullptr : &slots[static_cast<size_t>(in)]);
    std::vector<Tensor> outs = step.kernel->run(args, alloc);
    if (outs.size() < step.outputs.size())
      throw Error(ErrorKind::Internal, step.label + " returned " + std::to_string(outs.size()) + " outputs, expected " +
                                           std::to_string(step.outputs.size()));
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      ValueId out = step.outputs[k];
      if (out == kNoValue) continue;
      const Value& v = graph_.value(out);
      if (outs[k].shape() != v.shape || outs[k].dtype() != v.dtype)
        throw Error(ErrorKind::Internal, step.label + ": output '" + v.name + "' is " + dtype_name(outs[k].dtype()) +
                                             " " + shape_to_string(outs[k].shape()) + ", the graph says " +
                                             dtype_name(v.dtype) + " " + shape_to_string(v.shape));
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
  }
  std::vector<Tensor> results;
  for (ValueId out : graph_.outputs) results.push_back(slots[static_cast<size_t>(out)]);
  return results;
}

}  // namespace collage
