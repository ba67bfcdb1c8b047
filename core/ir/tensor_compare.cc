#include "core/ir/tensor_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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
  if (!got.is_dense() || !want.is_dense()) {  // sequences item by item; two empty optionals agree
    if (got.is_none() && want.is_none()) return r;
    if (!got.is_sequence() || !want.is_sequence() || got.items().size() != want.items().size()) {
      r.shape_mismatch = true;
      return r;
    }
    for (size_t i = 0; i < got.items().size(); ++i) {
      TensorComparison item = compare_tensors(got.items()[i], want.items()[i], tolerance);
      r.dtype_mismatch = r.dtype_mismatch || item.dtype_mismatch;
      r.shape_mismatch = r.shape_mismatch || item.shape_mismatch;
      r.max_abs_error = std::max(r.max_abs_error, item.max_abs_error);
      if (item.mismatches && !r.mismatches) {
        r.first_mismatch = static_cast<int64_t>(r.elements) + item.first_mismatch;
        r.got_value = item.got_value;
        r.want_value = item.want_value;
      }
      r.mismatches += item.mismatches;
      r.elements += item.elements;
    }
    return r;
  }
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

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.is_dense() != b.is_dense() || a.is_sequence() != b.is_sequence() || a.dtype() != b.dtype())
    return false;
  if (a.is_sequence()) {
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i)
      if (!bitwise_equal(a.items()[i], b.items()[i])) return false;
    return true;
  }
  return a.shape() == b.shape() && (a.bytes() == 0 || std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
}

}  // namespace collage
