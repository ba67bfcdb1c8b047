#include "core/backend_api/int8_weights.h"

#include <algorithm>
#include <cmath>

#include "core/backend_api/pattern.h"

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

}  // namespace collage
