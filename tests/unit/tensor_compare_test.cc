// compare_tensors(): the one element-wise comparison (kernels, placements, artifacts, `collage compare`).
#include "core/ir/tensor_compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace collage {
namespace {

TEST(CompareTensors, EqualTensorsAgree) {
  Tensor a = Tensor::from_vector<float>({2, 2}, {1, -2, 3, 0});
  TensorComparison c = compare_tensors(a, a.clone(), kKernelTolerance);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(c.elements, 4u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_EQ(c.max_abs_error, 0);
  EXPECT_EQ(c.first_mismatch, -1);
}

TEST(CompareTensors, ReportsTheMaxErrorAndTheFirstMismatch) {
  Tensor want = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  Tensor got = Tensor::from_vector<float>({4}, {1, 2.5f, 3, 5});
  TensorComparison c = compare_tensors(got, want, Tolerance{1e-3, 1e-3, 0});
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.mismatches, 2u);
  EXPECT_EQ(c.first_mismatch, 1);
  EXPECT_DOUBLE_EQ(c.got_value, 2.5);
  EXPECT_DOUBLE_EQ(c.want_value, 2);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 1);
}

TEST(CompareTensors, AtolAndRtolBoundEachElement) {
  Tensor want = Tensor::from_vector<float>({2}, {0, 100});
  // |err| <= atol + rtol * |want|: 0.01 at 0 needs atol 0.01; 0.5 at 100 needs rtol (0.5 - atol) / 100.
  Tensor got = Tensor::from_vector<float>({2}, {0.01f, 100.5f});
  EXPECT_TRUE(compare_tensors(got, want, Tolerance{0.011, 0.0051, 0}).ok());
  EXPECT_EQ(compare_tensors(got, want, Tolerance{0.009, 0.0051, 0}).first_mismatch, 0);
  EXPECT_EQ(compare_tensors(got, want, Tolerance{0.011, 0.0048, 0}).first_mismatch, 1);
}

TEST(CompareTensors, NaNAgreesOnlyWithANaNReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor want = Tensor::from_vector<float>({3}, {1, 2, 3});
  TensorComparison c =
      compare_tensors(Tensor::from_vector<float>({3}, {1, nan, 3}), want, Tolerance{1, 1, 1});
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.first_mismatch, 1);
  EXPECT_TRUE(std::isinf(c.max_abs_error));
  // NaN where the reference is NaN is the same result.
  Tensor nan_want = Tensor::from_vector<float>({2}, {nan, 1});
  EXPECT_TRUE(compare_tensors(nan_want, nan_want.clone(), kKernelTolerance).ok());
  // A number where the reference is NaN is not, whatever the tolerance.
  TensorComparison n =
      compare_tensors(Tensor::from_vector<float>({2}, {0, 1}), nan_want, Tolerance{1e9, 1e9, 1e9});
  EXPECT_FALSE(n.ok());
  EXPECT_EQ(n.first_mismatch, 0);
}

TEST(CompareTensors, EqualInfinitiesAgreeAndAnyOtherNonFinitePairDoesNot) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // A causal attention mask written by masked_fill(-inf): equal infinities are no error at all.
  Tensor want = Tensor::from_vector<float>({4}, {0.5f, -inf, -inf, inf});
  TensorComparison same = compare_tensors(want.clone(), want, kKernelTolerance);
  EXPECT_TRUE(same.ok());
  EXPECT_EQ(same.max_abs_error, 0);
  const Tolerance huge{1e30, 1e30, 1e30};
  // Each of these differs from `want` in element 1 only; none may agree, however loose the tolerance.
  for (float bad : {inf, nan, -3.4e38f, 0.0f}) {
    Tensor got = Tensor::from_vector<float>({4}, {0.5f, bad, -inf, inf});
    TensorComparison c = compare_tensors(got, want, huge);
    EXPECT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.mismatches, 1u) << bad;
    EXPECT_EQ(c.first_mismatch, 1) << bad;
  }
  // A finite reference is not matched by an infinity either.
  Tensor finite = Tensor::from_vector<float>({1}, {1});
  EXPECT_FALSE(compare_tensors(Tensor::from_vector<float>({1}, {inf}), finite, huge).ok());
}

TEST(CompareTensors, ShapeMismatchComparesNothing) {
  Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  TensorComparison c = compare_tensors(a, a.reshaped({4}), kKernelTolerance);
  EXPECT_TRUE(c.shape_mismatch);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.elements, 0u);
}

TEST(CompareTensors, DtypeMismatchFailsButStillComparesTheValues) {
  Tensor f = Tensor::from_vector<float>({2}, {1, 2});
  Tensor d = Tensor::from_vector<double>({2}, {1, 2});
  TensorComparison c = compare_tensors(f, d, kKernelTolerance);
  EXPECT_TRUE(c.dtype_mismatch);
  EXPECT_FALSE(c.shape_mismatch);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.elements, 2u);
  EXPECT_EQ(c.mismatches, 0u);  // `collage compare` reads only the counts
}

TEST(CompareTensors, PeakTermScalesTheAbsolutePartWithTheLargestReferenceValue) {
  // A long reduction's rounding shows on small elements next to large ones.
  Tensor want = Tensor::from_vector<float>({2}, {1000, 0});
  Tensor got = Tensor::from_vector<float>({2}, {1000, 0.5f});
  EXPECT_FALSE(compare_tensors(got, want, Tolerance{1e-4, 1e-3, 0}).ok());
  EXPECT_TRUE(compare_tensors(got, want, kKernelTolerance).ok());  // 1e-4 + 1e-3 * 1000 >= 0.5
  // Infinite reference values do not blow the peak up: the peak stays 1000, so 0.5 off at 0
  // agrees, 2 off does not (an infinite peak would let both through); the equal infinities agree.
  const float inf = std::numeric_limits<float>::infinity();
  Tensor with_inf = Tensor::from_vector<float>({3}, {1000, 0, inf});
  EXPECT_TRUE(
      compare_tensors(Tensor::from_vector<float>({3}, {1000, 0.5f, inf}), with_inf, kKernelTolerance).ok());
  TensorComparison c =
      compare_tensors(Tensor::from_vector<float>({3}, {1000, 2.0f, inf}), with_inf, kKernelTolerance);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.first_mismatch, 1);
}

}  // namespace
}  // namespace collage
