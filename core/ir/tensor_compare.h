// The one element-wise tensor comparison: the tuner's check of each kernel, the
// end-to-end check of a placement, the artifact reload check and `collage compare`
// all use it, each with its own Tolerance.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/ir/tensor.h"

namespace collage {

// An element agrees when |got - want| <= atol + rtol * |want| + peak_rtol * max|want|,
// the maximum over the finite elements of `want`. The peak term is there because a long
// reduction's summation order shows far above a fixed atol (ResNet-50's 3x3x512 convs
// differ by ~3e-4 between any two libraries). Non-finite values agree only with the same
// value: +inf with +inf, -inf with -inf (PyTorch's masked_fill(-inf) masks), NaN with NaN;
// any other pairing with a non-finite value is a mismatch, whatever the tolerance.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
  double peak_rtol = 0;
};

// The tuner's rule for each candidate kernel against the native reference (docs/cli.md, "collage tune").
inline constexpr Tolerance kKernelTolerance{1e-4, 1e-3, 1e-3};

struct TensorComparison {
  bool shape_mismatch = false;  // no element is compared
  bool dtype_mismatch = false;  // elements are still compared (as doubles) when the shapes agree
  size_t elements = 0;          // compared
  size_t mismatches = 0;        // elements outside the tolerance
  double max_abs_error = 0;     // infinity when some difference is NaN
  int64_t first_mismatch = -1;  // flat index, -1 when none
  double got_value = 0;         // at first_mismatch
  double want_value = 0;
  bool ok() const { return !shape_mismatch && !dtype_mismatch && mismatches == 0; }
};

TensorComparison compare_tensors(const Tensor& got, const Tensor& want, const Tolerance& tolerance);
// Same form, dtype, shapes and bytes (a sequence item by item).
bool bitwise_equal(const Tensor& a, const Tensor& b);

}  // namespace collage
