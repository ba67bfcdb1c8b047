// How graph nodes map onto oneDNN element-wise work: single ops as one or more
// eltwise stages, multi-node blocks (x*Sigmoid(x), the 5-node erf GELU, the tanh GELU) as one
// eltwise op, and a fused group's tail split into post-op units.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "core/ir/subgraph.h"

namespace collage::onednn {

struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};

// The eltwise stages computing `n` (HardSigmoid = linear then clip), or nullopt.
std::optional<std::vector<Eltwise>> eltwise_of(const Graph& g, const Node& n);
std::optional<dnnl::algorithm> binary_of(const std::string& op);
bool commutative(const std::string& op);

// A block of nodes computing one eltwise op of `x`, found from its last node.
struct Block {
  Eltwise e;
  ValueId x = kNoValue;
  std::vector<NodeId> nodes;  // root included
};
std::optional<Block> block_at(const Graph& g, NodeId root);

// The constant float row `add` adds to `product` (shape [1, .., 1, cols], rank at most `rank`): a Linear's
// bias as exporters write it (MatMul, then Add), which a matmul takes as its bias argument. Null otherwise.
const Tensor* bias_row(const Graph& g, const Node& add, ValueId product, int64_t cols, size_t rank);

// One post-op step of a chain: eltwise stages of `in` (a node or a block) or a binary node.
struct Unit {
  std::vector<Eltwise> stages;
  const Node* binary = nullptr;
  ValueId in = kNoValue, out = kNoValue;
};
// The nodes of `sub` from node_list[first] on, as units in execution order.
// Throws Unsupported for a node that is neither.
std::vector<Unit> units_of(const Graph& g, const SubGraph& sub, size_t first);

}  // namespace collage::onednn
