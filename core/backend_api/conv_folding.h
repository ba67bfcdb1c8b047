// Conv followed by an inference BatchNormalization is one convolution with
// rescaled weights and a shifted bias. Library backends fold it at compile time
// so Conv+BN(+Add)+Relu groups become one fused kernel.
#pragma once

#include <optional>

#include "core/ir/subgraph.h"

namespace collage {

struct FoldedConv {
  Tensor weight;               // [M, C/g, k...]
  std::optional<Tensor> bias;  // [M]
  size_t nodes_used = 1;       // 2 when a BatchNormalization was folded
};

// True if the sub-graph starts with Conv -> BatchNormalization (constant parameters).
bool starts_with_conv_batch_norm(const Graph& graph, const SubGraph& sub);

// The head Conv's constant weight and bias, with a following BatchNormalization folded in.
// Throws Unsupported when the weights are not constant.
FoldedConv fold_conv(const Graph& graph, const SubGraph& sub);

}  // namespace collage
