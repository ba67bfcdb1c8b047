// The native backend as kernels: one node = one Kernel (fused groups come with
// the backends issue) and the NodeEvaluator the importer needs.
#pragma once

#include <memory>

#include "core/ir/subgraph.h"
#include "core/runtime/executor.h"

namespace collage::native {

// Throws Unsupported (naming node, op and opset) if no native kernel exists.
std::unique_ptr<Kernel> make_node_kernel(const Node& node);
NodeEvaluator node_evaluator();
// A kernel for a sub-graph of natively supported nodes. Element-wise chains run
// in one pass over memory (tile by tile); anything else runs node by node.
std::unique_ptr<Kernel> make_fused_kernel(const Graph& graph, const SubGraph& subgraph, int threads = 1);
// Executor steps running every node with its native kernel.
std::vector<ExecStep> native_steps(const Graph& graph);

}  // namespace collage::native
