// The fused kernels' erf and GELU against double precision: the scalar erf, and the eight- and
// sixteen-lane erf GELUs where this CPU runs them, over a dense grid and the values where an
// approximation breaks first (0, the clamp at |x/sqrt(2)| = 4, the tails, infinities, NaN).
#include "backends/native/fast_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/native/fast_math_avx2.h"
#include "backends/native/fast_math_avx512.h"

namespace collage::native {
namespace {

std::vector<float> grid() {
  std::vector<float> xs;
  for (int i = -200000; i <= 200000; ++i) xs.push_back(static_cast<float>(i) * 6e-5f);  // [-12, 12]
  for (float x :
       {0.0f, -0.0f, 1e-30f, -1e-30f, 5.656854f, -5.656854f, 5.6568546f, -5.6568546f, 40.0f, -40.0f})
    xs.push_back(x);
  while (xs.size() % 16) xs.push_back(1.0f);
  return xs;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

// What float GELU can promise: the erf's absolute error (< 5e-7) times |x| / 2, and the result's rounding.
void expect_gelu_close(const std::vector<float>& xs, const std::vector<float>& got) {
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = gelu(xs[i]);
    ASSERT_NEAR(got[i], want, 2.5e-7 * std::fabs(xs[i]) + 2.5e-7 * std::fabs(want) + 1e-30)
        << "x = " << xs[i];
  }
}

TEST(FastMath, ErfIsWithinFiveTenMillionthsOfDoublePrecision) {
  double worst = 0;
  for (float x : grid()) {
    const double err = std::fabs(fast_erf(x) - std::erf(static_cast<double>(x)));
    worst = std::max(worst, err);
    ASSERT_LT(err, 5e-7) << "x = " << x;
  }
  EXPECT_GT(worst, 0.0);  // a float result cannot match erf everywhere: the comparison ran
  EXPECT_NEAR(fast_erf(std::numeric_limits<float>::infinity()), 1.0, 5e-7);
  EXPECT_NEAR(fast_erf(-std::numeric_limits<float>::infinity()), -1.0, 5e-7);
  EXPECT_TRUE(std::isnan(fast_erf(std::numeric_limits<float>::quiet_NaN())));
}

COLLAGE_AVX2 std::vector<float> gelu8(const std::vector<float>& xs) {
  std::vector<float> out(xs.size());
  for (size_t i = 0; i < xs.size(); i += 8) _mm256_storeu_ps(&out[i], gelu_erf8(_mm256_loadu_ps(&xs[i])));
  return out;
}

COLLAGE_AVX512F std::vector<float> gelu16(const std::vector<float>& xs) {
  std::vector<float> out(xs.size());
  for (size_t i = 0; i < xs.size(); i += 16) _mm512_storeu_ps(&out[i], gelu_erf16(_mm512_loadu_ps(&xs[i])));
  return out;
}

TEST(FastMath, EightLaneErfGeluMatchesDoublePrecision) {
  if (!avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  const std::vector<float> xs = grid();
  expect_gelu_close(xs, gelu8(xs));
  const std::vector<float> special =
      gelu8({std::numeric_limits<float>::infinity(), std::nanf(""), -0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f});
  EXPECT_EQ(special[0], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(special[1]));
  EXPECT_EQ(special[2], 0.0f);
}

TEST(FastMath, SixteenLaneErfGeluMatchesDoublePrecision) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "this CPU has no AVX-512F";
  const std::vector<float> xs = grid();
  expect_gelu_close(xs, gelu16(xs));
  std::vector<float> special(16, 1.0f);
  special[0] = std::numeric_limits<float>::infinity();
  special[1] = std::nanf("");
  const std::vector<float> got = gelu16(special);
  EXPECT_EQ(got[0], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(got[1]));
}

TEST(FastMath, ScalarErfGeluMatchesDoublePrecision) {
  const std::vector<float> xs = grid();
  std::vector<float> got(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    got[i] = 0.5f * xs[i] * (1.0f + fast_erf(xs[i] * 0.7071067811865476f));
  expect_gelu_close(xs, got);
}

}  // namespace
}  // namespace collage::native
