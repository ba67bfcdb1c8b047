// Native kernels for the transformer blocks of core/backend_api/transformer_fusion.h: layer
// normalisation (with a residual Add), GELU (with bias Add and MatMul) and the
// attention core.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/native/fast_math_avx2.h"
#include "core/ir/kernel.h"
#include "core/ir/subgraph.h"

namespace collage::native {

// The fused kernel when `sub` is exactly one such block, else nullptr.
// Throws Unsupported for a block the kernels cannot lay out (e.g. an output
// Transpose that moves the last axis).
std::unique_ptr<Kernel> make_transformer_kernel(const Graph& graph, const SubGraph& sub);

// The attention core's softmax of one scores row of `n` floats in place, after adding `mask`
// (n contiguous floats, or null): the portable version and the eight-lane one (call it only
// where avx2_fma()). Declared for the tests, which hold both to a double-precision softmax.
void softmax_row(float* row, const float* mask, int64_t n);
COLLAGE_AVX2 void softmax_row_avx2(float* row, const float* mask, int64_t n);

}  // namespace collage::native
