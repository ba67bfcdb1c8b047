// onednn-bf16: oneDNN's bf16 matmul for the fully connected layers (MatMul or Gemm with
// constant weights, then a bias Add, an activation or a residual Add as post-ops) and for
// products of two activations (attention's Q K^T and P V, a scalar Mul or Div after them), a
// reduced-precision backend: it takes part only under `tune --accuracy` (core/ir/accuracy.h).
//
// Both operands are rounded to bf16 (8 significant bits, round to nearest even): constant
// weights once at compile time, activations on every run; the products accumulate in fp32 and
// the post-ops run in fp32. Only CPUs with bf16 dot products (AVX512_BF16, AMX) have the
// kernel: elsewhere every candidate is refused at compile time (Unsupported, said why), as
// oneDNN's emulated bf16 is slower than fp32. Measured on a 2-core AVX512_BF16 EPYC: a
// 256x768x3072 product in 2.5 ms against fp32's 5.1 on 1 thread, conversion included.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onednn_bf16_backend();

}  // namespace collage
