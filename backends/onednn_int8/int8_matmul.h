// The int8 fully connected kernel of onednn-int8 (see onednn_int8.h).
#pragma once

#include <memory>

#include "core/backend_api/backend.h"
#include "core/backend_api/int8_weights.h"  // quantize_weights: its weights

namespace collage::onednn_int8 {

// `sub`: node_list[0] a MatMul ([.., M, K] x constant [K, N]) or Gemm (constant B, C; no
// transA), then post-op units (onednn::units_of). Throws Error(Unsupported) otherwise.
std::unique_ptr<Kernel> compile_int8_matmul(const Graph& g, const SubGraph& sub);

}  // namespace collage::onednn_int8
