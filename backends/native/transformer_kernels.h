// Native kernels for the transformer blocks of core/backend_api/transformer_fusion.h: layer
// normalisation (with a residual Add), GELU (with bias Add and MatMul) and the
// attention core.
#pragma once

#include <memory>

#include "core/ir/kernel.h"
#include "core/ir/subgraph.h"

namespace collage::native {

// The fused kernel when `sub` is exactly one such block, else nullptr.
// Throws Unsupported for a block the kernels cannot lay out (e.g. an output
// Transpose that moves the last axis).
std::unique_ptr<Kernel> make_transformer_kernel(const Graph& graph, const SubGraph& sub);

}  // namespace collage::native
