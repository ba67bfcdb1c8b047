// Branch-free float exp / erf / tanh for the fused native kernels: plain
// arithmetic only, so loops calling them vectorise (libm's expf/erff are calls
// and cost ~5 ns an element). exp: Cody-Waite reduction and Cephes' degree-6
// polynomial (~2 ulp); erf: the rational approximation Eigen and XLA use (|error| < 5e-7, no exp,
// so a fused GELU costs half of one built on exp); tanh from exp (|error| < 1e-6). Well inside the
// tuner's tolerance.
#pragma once

#include <bit>
#include <cstdint>

namespace collage::native {

inline float fast_exp(float x) {
  x = x > 88.3762626647949f ? 88.3762626647949f : x;
  x = x < -87.3365447505531f ? -87.3365447505531f : x;
  // Round to nearest by the 1.5 * 2^23 trick (no libm call, exact without -ffast-math).
  float fn = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = x - fn * 0.693359375f - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  auto n = static_cast<int32_t>(fn);
  return p * std::bit_cast<float>(static_cast<int32_t>((n + 127) << 23));
}

// Odd numerator and even denominator of erf(x) = x P(x^2) / Q(x^2) on [-4, 4], highest power first.
inline constexpr float kErfAlpha[7] = {-2.72614225801306e-10f, 2.77068142495902e-08f,  -2.10102402082508e-06f,
                                       -5.69250639462346e-05f, -7.34990630326855e-04f, -2.95459980854025e-03f,
                                       -1.60960333262415e-02f};
inline constexpr float kErfBeta[5] = {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                                      -7.37332916720468e-03f, -1.42647390514189e-02f};

inline float fast_erf(float x) {
  x = x > 4.0f ? 4.0f : x;  // erf(4) is 1 in float
  x = x < -4.0f ? -4.0f : x;
  const float x2 = x * x;
  const float p =
      (((((kErfAlpha[0] * x2 + kErfAlpha[1]) * x2 + kErfAlpha[2]) * x2 + kErfAlpha[3]) * x2 + kErfAlpha[4]) *
           x2 +
       kErfAlpha[5]) *
          x2 +
      kErfAlpha[6];
  const float q =
      (((kErfBeta[0] * x2 + kErfBeta[1]) * x2 + kErfBeta[2]) * x2 + kErfBeta[3]) * x2 + kErfBeta[4];
  return x * p / q;  // q <= kErfBeta[4] < 0
}

inline float fast_tanh(float x) {
  float a = x > 9.0f ? 9.0f : x;
  a = a < -9.0f ? -9.0f : a;
  float e = fast_exp(2.0f * a);
  return (e - 1.0f) / (e + 1.0f);
}

}  // namespace collage::native
