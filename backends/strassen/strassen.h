// strassen: fully connected layers as one level of Strassen's algorithm in Winograd's form,
// seven half-size products instead of eight, each run by stream-gemm's kernel (packed_gemm.h).
// For the large fp32 products of transformers and MLPs, which every library here already runs
// at the FMA peak: 1/8 of the multiplications is the only time left to take.
//
// What it covers: MatMul (A of rank >= 2, constant [K, N] weights) and Gemm (no transA,
// constant B, C a bias row), with a bias Add, then a Relu or a GELU (erf or tanh, as exporters
// write it: a ConvNeXt or BERT MLP's first product) or a residual Add, K even, both halves at least
// 64, at least 16 rows. Each quarter of C takes the bias and what follows as it becomes final. An
// odd N (a vocabulary: GPT-2's 50257) runs its first N - 1 columns so and the last one as a plain
// product. The seven
// combinations of the weights' quarters are formed and packed once, at compile time; a run forms four sums of
// A's quarters and one sum of C's, so the extra passes cost O(m(k + n)) against the m k n / 8 multiply-adds
// saved. An odd row count is handled as if A had one more row of zeros (never materialised).
//
// Precision: fp32 throughout, but the sums of quarters round differently from a plain dot
// product; the error stays a small multiple of the classic one (every kernel is checked
// against the native reference within kKernelTolerance like any other).
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& strassen_backend();

}  // namespace collage
