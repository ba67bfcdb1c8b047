// stream-gemm-int8: the project's own int8 fully connected layers (int8_gemm.h: AVX512-VNNI,
// activations quantized per run as ONNX Runtime's DynamicQuantizeLinear, the shared 7-bit
// per-column weights of core/backend_api/int8_weights.h), for the groups stream-gemm takes in fp32
// (product_group.h): MatMul or Gemm with constant weights, then a bias, a Relu, a GELU or a
// residual Add, computed while the tile is hot. A reduced-precision backend: it takes part only
// under `tune --accuracy`. Unavailable, with the reason, where the CPU lacks AVX512-VNNI.
//
// It computes the same integers as ONNX Runtime on the model `export --qdq` writes (same weights,
// same quantization of the activations), so a placement's numbers do not depend on which of the
// int8 backends runs a layer beyond the rounding of the final scale.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& stream_gemm_int8_backend();

}  // namespace collage
