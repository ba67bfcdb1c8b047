// fast_math_avx2.h's exp and GELUs sixteen lanes at a time with AVX-512F: the same formulas and
// coefficients (fast_math.h's), at twice the width where a core runs 512-bit vectors at full width, and
// cheaper per lane: 2^n by vscalefps, and the reciprocals by vrcp14ps and one Newton step instead of a
// division (a division per vector held a fused GELU to ~24 cycles a vector on Zen 5). The results differ from
// the eight-lane ones in the last bits only (relative error of the reciprocal ~1e-7 after the step).
// Every function carries COLLAGE_AVX512F: call them only from functions compiled for AVX-512F, and
// those only where the CPU has it.
#pragma once

// GCC 12 warns inside its own AVX-512 intrinsics (_mm512_undefined_* initialise themselves from
// themselves); the state at the header's lines is what counts.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include "backends/native/fast_math.h"

#define COLLAGE_AVX512F __attribute__((target("avx512f,avx2,fma")))

namespace collage::native {

COLLAGE_AVX512F inline __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3365447505531f)), _mm512_set1_ps(88.3762626647949f));
  const __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, fn);  // p * 2^fn
}

// 1 / d for d >= 1 (no zero, no infinity): vrcp14ps, then one Newton step.
COLLAGE_AVX512F inline __m512 reciprocal16(__m512 d) {
  const __m512 r = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
}

// erf by the rational approximation fast_math.h names, the reciprocal of its denominator by
// vrcp14ps and a Newton step; half the cost of an exp-based erf.
COLLAGE_AVX512F inline __m512 gelu_erf16(__m512 v) {
  const __m512 x = _mm512_min_ps(
      _mm512_max_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.7071067811865476f)), _mm512_set1_ps(-4.0f)),
      _mm512_set1_ps(4.0f));
  const __m512 x2 = _mm512_mul_ps(x, x);
  __m512 p = _mm512_fmadd_ps(x2, _mm512_set1_ps(kErfAlpha[0]), _mm512_set1_ps(kErfAlpha[1]));
  for (int i = 2; i < 7; ++i) p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(kErfAlpha[i]));
  __m512 q = _mm512_fmadd_ps(x2, _mm512_set1_ps(kErfBeta[0]), _mm512_set1_ps(kErfBeta[1]));
  for (int i = 2; i < 5; ++i) q = _mm512_fmadd_ps(x2, q, _mm512_set1_ps(kErfBeta[i]));
  const __m512 r = _mm512_rcp14_ps(q);  // q <= kErfBeta[4] < 0: never zero
  const __m512 erf =
      _mm512_mul_ps(_mm512_mul_ps(x, p), _mm512_mul_ps(r, _mm512_fnmadd_ps(q, r, _mm512_set1_ps(2.0f))));
  const __m512 half = _mm512_mul_ps(_mm512_set1_ps(0.5f), v);
  return _mm512_fmadd_ps(half, erf, half);
}

COLLAGE_AVX512F inline __m512 gelu_tanh16(__m512 v) {
  const __m512 u =
      _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f),
                    _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), v), _mm512_mul_ps(v, v), v));
  const __m512 c = _mm512_min_ps(_mm512_max_ps(u, _mm512_set1_ps(-9.0f)), _mm512_set1_ps(9.0f));
  const __m512 e = exp16(_mm512_add_ps(c, c));
  // (e - 1) / (e + 1) = 1 - 2 / (e + 1), with e + 1 >= 1.
  const __m512 th = _mm512_fnmadd_ps(
      _mm512_set1_ps(2.0f), reciprocal16(_mm512_add_ps(e, _mm512_set1_ps(1.0f))), _mm512_set1_ps(1.0f));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), _mm512_add_ps(_mm512_set1_ps(1.0f), th));
}

}  // namespace collage::native
