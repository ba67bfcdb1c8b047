// Candidate kernels: every (fused) sub-graph each backend offers for a model.
#pragma once

#include <string>
#include <vector>

#include "core/backend_api/backend.h"
#include "core/ir/kernel_group.h"

namespace collage {

// A kernel group the tuner may measure (see core/ir/kernel_group.h for why the
// nodes are an IndexSet here).
struct Candidate {
  IndexSet nodes;
  std::string backend;
  std::string label;  // "Conv+Add+Relu"
  KernelGroup group() const { return {node_ids(nodes), backend, label}; }
};

// The nodes that read or write a value whose shape is decided at run time (shape_known false).
IndexSet nodes_with_dynamic_shapes(const Graph& graph);

// Matches every pattern at every node and runs every rule's generator; keeps
// convex groups within the backend's limits; one entry per (backend, node set). A backend
// this CPU cannot run (unavailable_reason) offers none; a node with a dynamic shape is
// offered alone, and only to backends that take such shapes (takes_dynamic_shapes).
std::vector<Candidate> enumerate_candidates(const Graph& graph,
                                            const std::vector<const BackendSpec*>& backends);

}  // namespace collage
