#include "core/backend_api/int8_weights.h"

#include <algorithm>
#include <cmath>

#include "core/backend_api/pattern.h"
#include "core/ir/error.h"

namespace collage {

QuantizedWeights quantize_weights(const float* w, int64_t k, int64_t n) {
  QuantizedWeights r;
  r.scale.assign(static_cast<size_t>(n), 0.0f);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j)
      r.scale[static_cast<size_t>(j)] = std::max(r.scale[static_cast<size_t>(j)], std::fabs(w[i * n + j]));
  for (float& s : r.scale) s = s > 0 && std::isfinite(s) ? s / kWeightLevels : 1.0f;
  r.q.resize(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float v = std::nearbyint(w[i * n + j] / r.scale[static_cast<size_t>(j)]);
      r.q[static_cast<size_t>(i * n + j)] =
          static_cast<int8_t>(std::min<float>(kWeightLevels, std::max<float>(-kWeightLevels, v)));
    }
  return r;
}

bool int8_weights_matmul(const Graph& g, const Node& n) {
  if (n.op_type != "MatMul" || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  if (!input_is_constant(g, n, 1) || input_is_constant(g, n, 0)) return false;
  const Value& x = g.value(n.inputs[0]);
  const Value& w = g.value(n.inputs[1]);
  return w.shape.size() == 2 && x.shape.size() >= 2 && x.dtype == DType::Float32 &&
         w.dtype == DType::Float32 && g.value(n.outputs[0]).dtype == DType::Float32;
}

bool int8_weights_gemm(const Graph& g, const Node& n) {
  if (n.op_type != "Gemm" || n.inputs.size() < 2 || n.outputs.size() != 1) return false;
  if (n.attr_int("transA", 0) != 0 || !input_is_constant(g, n, 1) || input_is_constant(g, n, 0)) return false;
  if (!input_absent_or_constant(g, n, 2)) return false;
  const Value& x = g.value(n.inputs[0]);
  const Value& w = g.value(n.inputs[1]);
  const bool c_float =
      n.inputs.size() < 3 || n.inputs[2] == kNoValue || g.value(n.inputs[2]).dtype == DType::Float32;
  return w.shape.size() == 2 && x.shape.size() == 2 && x.dtype == DType::Float32 &&
         w.dtype == DType::Float32 && c_float && g.value(n.outputs[0]).dtype == DType::Float32;
}

std::vector<float> product_weights(const Graph& g, const Node& n, int64_t& k, int64_t& cols) {
  const Value& b = g.value(n.inputs.at(1));
  const bool trans = n.op_type == "Gemm" && n.attr_int("transB", 0) != 0;
  const float alpha = n.op_type == "Gemm" ? n.attr_float("alpha", 1.0f) : 1.0f;
  k = trans ? b.shape.at(1) : b.shape.at(0);
  cols = trans ? b.shape.at(0) : b.shape.at(1);
  const float* src = b.constant->data<float>();
  std::vector<float> dense(static_cast<size_t>(k * cols));
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dense[static_cast<size_t>(r * cols + c)] = alpha * (trans ? src[c * k + r] : src[r * cols + c]);
  return dense;
}

QuantizedWeights quantize_node_weights(const Graph& g, const Node& n) {
  if (!int8_weights_matmul(g, n) && !int8_weights_gemm(g, n))
    throw Error(ErrorKind::Unsupported,
                "node '" + n.name + "' has no int8 weights (a MatMul or Gemm of constant 2-D weights)");
  int64_t k = 0, cols = 0;
  const std::vector<float> dense = product_weights(g, n, k, cols);
  return quantize_weights(dense.data(), k, cols);
}

}  // namespace collage
