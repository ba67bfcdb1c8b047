// A kernel that runs a sub-graph node by node with per-node kernels: the
// generic way to execute a fused candidate when a library has no fused form
// for it (and the reference for those that do).
#pragma once

#include <memory>

#include "core/ir/subgraph.h"
#include "core/runtime/executor.h"

namespace collage {

std::unique_ptr<Kernel> make_composite_kernel(const Graph& graph, const SubGraph& subgraph,
                                              const NodeKernelFactory& make_node_kernel);

}  // namespace collage
