// fast_math.h's exp, erf and tanh as eight-lane GELUs with AVX2+FMA: the same formulas, so the same
// accuracy (up to the erf denominator's reciprocal, ~1e-7 relative). Written out because GCC leaves the
// scalar ones unvectorised (or at SSE width) in the kernels that need them. Every function carries
// COLLAGE_AVX2: call them only from COLLAGE_AVX2 functions, and those only where avx2_fma() is true.
#pragma once

// Under the guard fast_math_avx512.h explains: whichever of the two is included first decides.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "backends/native/fast_math.h"
#include "core/backend_api/cpu_isa.h"

#define COLLAGE_AVX2 __attribute__((target("avx2,fma")))

namespace collage::native {

// The CPU has them and ONEDNN_MAX_CPU_ISA allows them (core/backend_api/cpu_isa.h).
inline bool avx2_fma() { return cpu_isa_allows(IsaLevel::Avx2); }

COLLAGE_AVX2 inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3365447505531f)), _mm256_set1_ps(88.3762626647949f));
  const __m256 fn = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
  const __m256i n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fn), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(n));
}

COLLAGE_AVX2 inline __m256 gelu_erf8(__m256 v) {
  const __m256 x = _mm256_min_ps(
      _mm256_max_ps(_mm256_mul_ps(v, _mm256_set1_ps(0.7071067811865476f)), _mm256_set1_ps(-4.0f)),
      _mm256_set1_ps(4.0f));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_fmadd_ps(x2, _mm256_set1_ps(kErfAlpha[0]), _mm256_set1_ps(kErfAlpha[1]));
  for (int i = 2; i < 7; ++i) p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(kErfAlpha[i]));
  __m256 q = _mm256_fmadd_ps(x2, _mm256_set1_ps(kErfBeta[0]), _mm256_set1_ps(kErfBeta[1]));
  for (int i = 2; i < 5; ++i) q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(kErfBeta[i]));
  // vrcpps (12 bits) and a Newton step (~23 bits): cheaper than a division; q < 0, never zero.
  const __m256 r = _mm256_rcp_ps(q);
  const __m256 erf =
      _mm256_mul_ps(_mm256_mul_ps(x, p), _mm256_mul_ps(r, _mm256_fnmadd_ps(q, r, _mm256_set1_ps(2.0f))));
  const __m256 half = _mm256_mul_ps(_mm256_set1_ps(0.5f), v);
  return _mm256_fmadd_ps(half, erf, half);
}

COLLAGE_AVX2 inline __m256 gelu_tanh8(__m256 v) {
  const __m256 u =
      _mm256_mul_ps(_mm256_set1_ps(0.7978845608028654f),
                    _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), v), _mm256_mul_ps(v, v), v));
  const __m256 c = _mm256_min_ps(_mm256_max_ps(u, _mm256_set1_ps(-9.0f)), _mm256_set1_ps(9.0f));
  const __m256 e = exp8(_mm256_add_ps(c, c));
  const __m256 th =
      _mm256_div_ps(_mm256_sub_ps(e, _mm256_set1_ps(1.0f)), _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(_mm256_set1_ps(1.0f), th));
}

}  // namespace collage::native
