#include "core/backend_api/int8_weights.h"

#include <algorithm>
#include <cmath>

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

}  // namespace collage
