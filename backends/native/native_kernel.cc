#include "backends/native/native_kernel.h"

#include "backends/native/native_ops.h"

namespace collage::native {

namespace {
class NodeKernel : public Kernel {
 public:
  NodeKernel(Node node, OpFunction fn) : node_(std::move(node)), fn_(fn) {}
  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    return run_op(fn_, node_, inputs, alloc);
  }

 private:
  Node node_;
  OpFunction fn_;
};
}  // namespace

std::unique_ptr<Kernel> make_node_kernel(const Node& node) {
  return std::make_unique<NodeKernel>(node, find_op(node));
}

NodeEvaluator node_evaluator() { return &evaluate_node; }

std::vector<ExecStep> native_steps(const Graph& graph) { return per_node_steps(graph, &make_node_kernel); }

}  // namespace collage::native
