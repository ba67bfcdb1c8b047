// Placed bodies: a control-flow node (If, Loop, Scan, SequenceMap) whose bodies have
// placements of their own runs each body through an executor of that placement's kernels.
// The node's kernel stays the native one; while it runs, its bodies' executors are in force
// on the running thread, and the native control-flow kernels (backends/native/
// control_flow_ops.cc) run a body through its executor when it has one and the values
// given fit what the body was placed for; otherwise node by node, as without a placement.
// Invariants: an executor is found by the body's address (bodies are shared by every copy
// of their node, core/ir/graph.h), runs only inside its node's kernel, one run at a time.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "core/runtime/executor.h"

namespace collage {

class PlacedBodies {
 public:
  void add(const Graph* body, std::unique_ptr<Executor> executor);
  // The executor for `body`, or null when it has none.
  Executor* find(const Graph* body) const;
  bool empty() const { return executors_.empty(); }

 private:
  std::map<const Graph*, std::unique_ptr<Executor>> executors_;
};

// The placed bodies in force on this thread (the innermost running control node's), or null.
const PlacedBodies* current_placed_bodies();

// Whether `args` (a body's inputs in order) fit what `body` was placed for: none omitted,
// each of the input's kind and type, and of its shape where that is static.
bool fits_placed_body(const Graph& body, const std::vector<const Tensor*>& args);

// `inner` (a control node's kernel) run with `bodies` in force.
std::unique_ptr<Kernel> with_placed_bodies(std::unique_ptr<Kernel> inner, PlacedBodies bodies);

}  // namespace collage
