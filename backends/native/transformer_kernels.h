// Native kernels for the transformer blocks of core/backend_api/transformer_fusion.h: layer
// normalisation (with a residual Add), GELU (with bias Add and MatMul) and the
// attention core.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/native/fast_math_avx2.h"
#include "backends/native/fast_math_avx512.h"
#include "core/ir/kernel.h"
#include "core/ir/subgraph.h"

namespace collage::native {

// The fused kernel when `sub` is exactly one such block, else nullptr.
// Throws Unsupported for a block the kernels cannot lay out (e.g. an output
// Transpose that moves the last axis). `threads`: the GELU pass shares large tensors between them;
// every other native kernel runs on the calling thread.
std::unique_ptr<Kernel> make_transformer_kernel(const Graph& graph, const SubGraph& sub, int threads = 1);

// The attention core's softmax of one scores row of `n` floats in place, after adding `mask`
// (n contiguous floats, or null): the portable version and the eight-lane one (call it only
// where avx2_fma()). Declared for the tests, which hold both to a double-precision softmax.
void softmax_row(float* row, const float* mask, int64_t n);
COLLAGE_AVX2 void softmax_row_avx2(float* row, const float* mask, int64_t n);

// The GELU kernel's pass: y[i] = gelu(x[i] + b[i * bstride]) over n floats (b null: no bias;
// bstride 0: one bias for all), by erf or by tanh. The portable one, eight lanes (only where
// avx2_fma()), sixteen lanes (only where the CPU has AVX-512F): the fast_math forms, so they differ
// in the last bits only. y may be x. Declared for the tests.
void gelu_span(const float* x, const float* b, int64_t bstride, float* y, int64_t n, bool tanh);
COLLAGE_AVX2 void gelu_span_avx2(const float* x, const float* b, int64_t bstride, float* y, int64_t n,
                                 bool tanh);
COLLAGE_AVX512F void gelu_span_avx512(const float* x, const float* b, int64_t bstride, float* y, int64_t n,
                                      bool tanh);
using GeluSpan = void (*)(const float*, const float*, int64_t, float*, int64_t, bool);
GeluSpan best_gelu_span();  // the widest this CPU runs

}  // namespace collage::native
