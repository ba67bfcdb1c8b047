// Conv (or ConvTranspose) followed by an inference BatchNormalization is one
// convolution with rescaled weights and a shifted bias. Library backends fold it at compile time
// so Conv+BN(+Add)+Relu groups become one fused kernel.
#pragma once

#include <optional>

#include "core/ir/subgraph.h"

namespace collage {

struct FoldedConv {
  Tensor weight;               // as the node stores it: Conv [M, C/g, k...], ConvTranspose [C, M/g, k...]
  std::optional<Tensor> bias;  // [M]
  size_t nodes_used = 1;       // 2 when a BatchNormalization was folded
};

// True for an inference BatchNormalization (one output, training_mode=0): the only kind a
// convolution can absorb, as training mode normalises with the batch's own statistics.
bool foldable_batch_norm(const Graph& graph, const Node& bn);

// True if the sub-graph starts with Conv/ConvTranspose -> BatchNormalization (constant parameters).
bool starts_with_conv_batch_norm(const Graph& graph, const SubGraph& sub);

// The BatchNormalization that is the only reader of `conv`'s output, when it is in `nodes`
// (a region a graph-level backend compiles): the one fold_conv would merge.
const Node* batch_norm_after(const Graph& graph, const Node& conv, const IndexSet& nodes);

// The head Conv's or ConvTranspose's constant weight and bias, with a following
// BatchNormalization folded in.
// Throws Unsupported when the weights are not constant.
FoldedConv fold_conv(const Graph& graph, const SubGraph& sub);

}  // namespace collage
