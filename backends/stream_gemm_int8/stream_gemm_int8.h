// stream-gemm-int8: the project's own int8 fully connected layers (int8_gemm.h: AVX512-VNNI tiles,
// else AVX2 tiles; the shared 7-bit per-column weights of core/backend_api/int8_weights.h), for the
// groups stream-gemm takes in fp32 (product_group.h): MatMul or Gemm with constant weights, then a
// bias, a Relu, a GELU or a residual Add, computed while the tile is hot. A reduced-precision
// backend: it takes part only under `tune --accuracy`. Unavailable, with the reason, where the CPU
// lacks AVX2 and FMA.
//
// On the VNNI path it computes the same integers as ONNX Runtime on the model `export --qdq` writes
// (same weights, the activations quantized per tensor to 8 bits as DynamicQuantizeLinear), so a
// placement's numbers do not depend on which int8 backend runs a layer beyond the rounding of the
// final scale. The AVX2 path quantizes each row to 7 bits instead (int8_gemm.h): other integers,
// and an error of its own, which the accuracy back-off weighs against the other int8 backends'.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& stream_gemm_int8_backend();

}  // namespace collage
