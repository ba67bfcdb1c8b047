// stream-gemm: the project's own GEMM for products whose constant weights stream from DRAM on
// every request (a transformer at a short sequence, small-batch MLPs): MatMul / Gemm with
// constant 2-D weights, fused with a bias Add and then a residual Add, a Relu or a GELU (erf or
// tanh, as exporters write it). See packed_gemm.h for how it keeps the weight stream overlapped
// with the arithmetic. Offered at any number of rows (the kernel takes them in L2-sized chunks;
// at large m it is an ordinary compute-bound GEMM the tuner weighs against the libraries') where
// the CPU has AVX2 and FMA.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& stream_gemm_backend();

namespace stream_gemm {

// A float constant that is one value per output column of width n (or one value): a bias the
// epilogue adds (strassen folds the same biases).
bool row_constant(const Graph& g, ValueId v, int64_t n);
// An Add of such a bias to a product's output.
bool bias_add_ok(const Graph& g, const Node& n);
// An Add of two operands already of the output's shape: a residual.
bool residual_add_ok(const Graph& g, const Node& n);
// MatMul + bias Add + GELU (erf or tanh, transformer_fusion.h) where product_ok takes the MatMul.
PatternPtr gelu_block(bool (*product_ok)(const Graph&, const Node&));

}  // namespace stream_gemm

}  // namespace collage
