// The one int8 weight quantization every int8 fully connected kernel uses (onednn-int8,
// onnxruntime-int8) and `export --qdq` writes, so that the same placement computes the same
// numbers whichever of them runs a layer: per output column, symmetric, 7 bits ([-63, 63]),
// so that AVX2's u8 x s8 pair products (vpmaddubsw, 16-bit saturating) cannot saturate.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace collage {

struct QuantizedWeights {
  std::vector<int8_t> q;     // [K, N] row-major
  std::vector<float> scale;  // [N]: w ~= q * scale per column (1 for an all-zero column)
};
inline constexpr int kWeightLevels = 63;  // |q| <= 63: AVX2's 16-bit pair sums cannot saturate

// `w`: [K, N] row-major fp32.
QuantizedWeights quantize_weights(const float* w, int64_t k, int64_t n);

// The MatMuls these weights are for: float32, constant [K, N] weights, activations computed
// (not constant) of rank >= 2. Every int8 kernel and `export --qdq` ask this one question.
bool int8_weights_matmul(const Graph& graph, const Node& node);
// The Gemms: float32, A computed and 2-D (no transA), B constant 2-D (transB allowed), C absent or
// constant. Their weights are B as [K, N] with alpha folded in.
bool int8_weights_gemm(const Graph& graph, const Node& node);

// A MatMul's or Gemm's constant weights as row-major [K, N] fp32: a Gemm's transB and alpha folded
// in (the one place that rule is written; the int8 kernels and onednn's fully connected chains
// use it). Sets k and n.
std::vector<float> product_weights(const Graph& graph, const Node& node, int64_t& k, int64_t& n);

// The weights of such a MatMul or Gemm, quantized (the one place a Gemm's transB and alpha are
// folded for int8). Throws Error(Unsupported) for any other node.
QuantizedWeights quantize_node_weights(const Graph& graph, const Node& node);

}  // namespace collage
