// The attention core (core/backend_api/transformer_fusion.h) as oneDNN primitives:
// scores = scale * Q K^T [+ mask] by one matmul (scale and mask as post-ops), softmax in
// place, context = P V by a second matmul written straight into the layout after the
// block's Transpose/Reshape. Q, K and V are read where they lie through strided memory
// descriptors, so the Slices, Reshapes, Transposes and scale the block absorbed cost
// no pass over memory: what the same nodes cost as separate kernels is saved.
#pragma once

#include <memory>

#include "core/backend_api/backend.h"
#include "core/backend_api/transformer_fusion.h"

namespace collage::onednn {

// Throws Unsupported where oneDNN has no primitive for the views (e.g. neither of an
// operand's last two dims contiguous).
std::unique_ptr<Kernel> compile_attention(const Graph& g, const SubGraph& sub, const AttentionBlock& b);

// One scores row: softmax(scale * x + mask) over `n` floats in place (`mask` may be null). The
// kernel takes the widest this CPU runs; call the AVX2 one only where the CPU has AVX2 and FMA,
// the AVX-512 one only where it has AVX-512F.
void softmax_row_portable(float* x, int64_t n, float scale, const float* mask);
void softmax_row_avx2(float* x, int64_t n, float scale, const float* mask);
void softmax_row_avx512(float* x, int64_t n, float scale, const float* mask);

}  // namespace collage::onednn
