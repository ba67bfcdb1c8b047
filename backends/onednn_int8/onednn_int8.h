// onednn-int8: oneDNN's u8 x s8 matmul for the fully connected layers (MatMul or Gemm with
// constant weights, then a bias Add, an activation or a residual Add as post-ops), a
// reduced-precision backend: it takes part only under `tune --accuracy` (core/ir/accuracy.h).
//
// Weights: per output column, symmetric, 7 bits ([-63, 63]) so that AVX2's u8 x s8 pair
// products (vpmaddubsw, 16-bit saturating) cannot saturate; quantized once at compile time.
// Activations: per tensor, asymmetric u8, the range taken from each run's own input (dynamic
// quantization, as ONNX Runtime's DynamicQuantizeMatMul): nothing is calibrated or stored,
// so the artifact carries the fp32 weights and quantizes them when it loads.
// Measured on a 2-core AVX2 EPYC: 128x768x3072 at 143 GFLOP/s on 1 thread, ~1.9x fp32's peak.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onednn_int8_backend();

}  // namespace collage
