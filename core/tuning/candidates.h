// Candidate kernels: every (fused) sub-graph each backend offers for a model.
#pragma once

#include <string>
#include <vector>

#include "core/backend_api/backend.h"

namespace collage {

struct Candidate {
  IndexSet nodes;
  std::string backend;
  std::string label;  // "Conv+Add+Relu"
};

// Matches every pattern at every node and runs every rule's generator; keeps
// convex groups within the backend's limits; one entry per (backend, node set).
std::vector<Candidate> enumerate_candidates(const Graph& graph,
                                            const std::vector<const BackendSpec*>& backends);

}  // namespace collage
