// Branch-free float exp / erf / tanh for the fused native kernels: plain
// arithmetic only, so loops calling them vectorise (libm's expf/erff are calls
// and cost ~5 ns an element). exp: Cody-Waite reduction and Cephes' degree-6
// polynomial (~2 ulp); erf: Abramowitz & Stegun 7.1.26 (|error| < 2e-7);
// tanh from exp (|error| < 1e-6). Well inside the tuner's tolerance.
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

inline float fast_erf(float x) {
  float a = x < 0 ? -x : x;
  a = a > 6.0f ? 6.0f : a;
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  float e = 1.0f - p * t * fast_exp(-a * a);
  return x < 0 ? -e : e;
}

inline float fast_tanh(float x) {
  float a = x > 9.0f ? 9.0f : x;
  a = a < -9.0f ? -9.0f : a;
  float e = fast_exp(2.0f * a);
  return (e - 1.0f) / (e + 1.0f);
}

}  // namespace collage::native
