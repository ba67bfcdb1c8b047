#include "core/runtime/placed_bodies.h"

namespace collage {

namespace {

thread_local const PlacedBodies* current = nullptr;

class PlacedBodiesKernel : public Kernel {
 public:
  PlacedBodiesKernel(std::unique_ptr<Kernel> inner, PlacedBodies bodies)
      : inner_(std::move(inner)), bodies_(std::move(bodies)) {}
  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    // Restored on the way out, exceptions included: a nested control node sets its own.
    struct Scope {
      const PlacedBodies* saved;
      explicit Scope(const PlacedBodies* now) : saved(current) { current = now; }
      ~Scope() { current = saved; }
    } scope(&bodies_);
    return inner_->run(inputs, alloc);
  }

 private:
  std::unique_ptr<Kernel> inner_;
  PlacedBodies bodies_;
};

}  // namespace

void PlacedBodies::add(const Graph* body, std::unique_ptr<Executor> executor) {
  executors_[body] = std::move(executor);
}

Executor* PlacedBodies::find(const Graph* body) const {
  auto it = executors_.find(body);
  return it == executors_.end() ? nullptr : it->second.get();
}

const PlacedBodies* current_placed_bodies() { return current; }

bool fits_placed_body(const Graph& body, const std::vector<const Tensor*>& args) {
  if (args.size() != body.inputs.size()) return false;
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& v = body.value(body.inputs[i]);
    if (!args[i] || !holds_kind(*args[i], v.kind) || args[i]->dtype() != v.dtype) return false;
    if (v.kind == ValueKind::Tensor && args[i]->is_dense() && v.shape_known && args[i]->shape() != v.shape)
      return false;
  }
  return true;
}

std::unique_ptr<Kernel> with_placed_bodies(std::unique_ptr<Kernel> inner, PlacedBodies bodies) {
  return std::make_unique<PlacedBodiesKernel>(std::move(inner), std::move(bodies));
}

}  // namespace collage
