#include "core/ir/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace collage {
namespace {

// Equal infinities (a -inf attention mask) and NaN where the reference is NaN are the same
// value, not an error; the tolerance is only meaningful between two finite numbers.
bool non_finite_agree(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::isinf(want) && got == want;
}

}  // namespace

TensorComparison compare_tensors(const Tensor& got, const Tensor& want, const Tolerance& tolerance) {
  TensorComparison r;
  r.dtype_mismatch = got.dtype() != want.dtype();
  if (got.shape() != want.shape()) {
    r.shape_mismatch = true;
    return r;
  }
  std::vector<double> a = got.to_double_vector(), b = want.to_double_vector();
  double peak = 0;
  if (tolerance.peak_rtol != 0)
    for (double v : b)
      if (std::isfinite(v)) peak = std::max(peak, std::fabs(v));
  const double tensor_atol = tolerance.atol + tolerance.peak_rtol * peak;
  r.elements = std::min(a.size(), b.size());
  for (size_t i = 0; i < r.elements; ++i) {
    if (non_finite_agree(a[i], b[i])) continue;
    double err = std::fabs(a[i] - b[i]);
    r.max_abs_error =
        std::max(r.max_abs_error, std::isnan(err) ? std::numeric_limits<double>::infinity() : err);
    if (std::isfinite(a[i]) && std::isfinite(b[i]) && err <= tensor_atol + tolerance.rtol * std::fabs(b[i]))
      continue;
    if (r.mismatches++ == 0) {
      r.first_mismatch = static_cast<int64_t>(i);
      r.got_value = a[i];
      r.want_value = b[i];
    }
  }
  return r;
}

}  // namespace collage
