// The int8 fully connected kernel of onednn-int8 (see onednn_int8.h).
#pragma once

#include <memory>

#include "core/backend_api/backend.h"

namespace collage::onednn_int8 {

// `sub`: node_list[0] a MatMul ([.., M, K] x constant [K, N]) or Gemm (constant B, C; no
// transA), then post-op units (onednn::units_of). Throws Error(Unsupported) otherwise.
std::unique_ptr<Kernel> compile_int8_matmul(const Graph& g, const SubGraph& sub);

// 7-bit symmetric per-column quantization of `w` [K, N]: the s8 values (row-major) and the
// N scales (w ~= q * scale).
struct QuantizedWeights {
  std::vector<int8_t> q;
  std::vector<float> scale;
};
inline constexpr int kWeightLevels = 63;  // |q| <= 63: AVX2's 16-bit pair sums cannot saturate
QuantizedWeights quantize_weights(const float* w, int64_t k, int64_t n);

}  // namespace collage::onednn_int8
