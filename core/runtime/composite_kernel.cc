#include "core/runtime/composite_kernel.h"

#include <unordered_map>

namespace collage {

namespace {

class CompositeKernel : public Kernel {
 public:
  CompositeKernel(const Graph& graph, const SubGraph& sub, const NodeKernelFactory& factory)
      : outputs_(sub.outputs) {
    std::unordered_map<ValueId, int> slot_of;
    auto slot = [&](ValueId v) {
      auto it = slot_of.find(v);
      if (it != slot_of.end()) return it->second;
      int s = static_cast<int>(slot_of.size());
      slot_of[v] = s;
      return s;
    };
    for (ValueId v : sub.inputs) input_slots_.push_back(slot(v));
    for (ValueId v : sub.constants) constants_.emplace_back(slot(v), *graph.value(v).constant);
    for (NodeId n : sub.node_list) {
      Step step;
      step.kernel = factory(graph.node(n));
      for (ValueId v : graph.node(n).inputs) step.inputs.push_back(v == kNoValue ? -1 : slot(v));
      for (ValueId v : graph.node(n).outputs) step.outputs.push_back(v == kNoValue ? -1 : slot(v));
      steps_.push_back(std::move(step));
    }
    for (ValueId v : sub.outputs) output_slots_.push_back(slot(v));
    num_slots_ = slot_of.size();
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    if (inputs.size() != input_slots_.size())
      throw Error(ErrorKind::Internal, "composite kernel got " + std::to_string(inputs.size()) + " inputs");
    std::vector<Tensor> slots(num_slots_);
    for (size_t i = 0; i < inputs.size(); ++i) slots[static_cast<size_t>(input_slots_[i])] = *inputs[i];
    for (const auto& [s, t] : constants_) slots[static_cast<size_t>(s)] = t;
    std::vector<const Tensor*> args;
    for (Step& step : steps_) {
      args.clear();
      for (int s : step.inputs) args.push_back(s < 0 ? nullptr : &slots[static_cast<size_t>(s)]);
      std::vector<Tensor> outs = step.kernel->run(args, alloc);
      for (size_t k = 0; k < step.outputs.size() && k < outs.size(); ++k)
        if (step.outputs[k] >= 0) slots[static_cast<size_t>(step.outputs[k])] = std::move(outs[k]);
    }
    std::vector<Tensor> result;
    for (int s : output_slots_) result.push_back(slots[static_cast<size_t>(s)]);
    return result;
  }

 private:
  struct Step {
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs, outputs;
  };
  std::vector<ValueId> outputs_;
  std::vector<int> input_slots_, output_slots_;
  std::vector<std::pair<int, Tensor>> constants_;
  std::vector<Step> steps_;
  size_t num_slots_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_composite_kernel(const Graph& graph, const SubGraph& subgraph,
                                              const NodeKernelFactory& make_node_kernel) {
  return std::make_unique<CompositeKernel>(graph, subgraph, make_node_kernel);
}

}  // namespace collage
