// stream-gemm-int8's tiles for AVX512-VNNI: vpdpbusd, 64 u8 x s8 multiply-adds per instruction,
// a micro-tile of 6 rows by 4 panels (int8_tiles.h says what a tile set does).
#include <array>
#include <cstring>
#include <limits>

#include "backends/native/fast_math_avx512.h"  // <immintrin.h>, without GCC 12's false warnings
#include "backends/stream_gemm_int8/int8_tiles.h"

#define COLLAGE_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni,avx2,fma")))

namespace collage::stream_gemm_int8::detail {

namespace {

using stream_gemm::EpilogueStep;

__mmask16 tail_mask(int64_t count) {
  return count >= kPanel ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
}

constexpr int kRows =
    6;  // rows per micro-tile: with 4 panels 24 accumulators, 4 weight and 1 broadcast register

// One tile's sums, [row][panel][16 columns], as the kernels leave them.
using TileSums = int32_t[kRows][kWide][kPanel];

// C's rows [0, rows) and panels [0, np) from the sums, stored through the mask of the last panel.
COLLAGE_VNNI void finish_tile(const TileSums& sums, int rows, int np, float* c, int64_t ldc,
                              const TileOut& t) {
  for (int q = 0; q < np; ++q) {
    const __mmask16 mask = q == np - 1 ? tail_mask(t.last_cols) : static_cast<__mmask16>(0xFFFF);
    const __m512i corr = _mm512_loadu_si512(t.correction + q * kPanel);
    const __m512 scale = _mm512_loadu_ps(t.scale + q * kPanel);
    const __m512 bias = _mm512_loadu_ps(t.bias + q * kPanel);
    for (int r = 0; r < rows; ++r) {
      const __m512i sum = _mm512_load_si512(sums[r][q]);
      __m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sum, corr)), scale, bias);
      if (t.add) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mask, t.add + r * t.ld_add + q * kPanel));
      if (t.activation) {
        switch (*t.activation) {
          case EpilogueStep::Kind::Relu:
            y = _mm512_max_ps(y, _mm512_setzero_ps());
            break;
          case EpilogueStep::Kind::GeluErf:
            y = native::gelu_erf16(y);
            break;
          case EpilogueStep::Kind::GeluTanh:
            y = native::gelu_tanh16(y);
            break;
          default:
            break;
        }
      }
      if (t.add_after)
        y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(mask, t.add_after + r * t.ld_after + q * kPanel));
      _mm512_mask_storeu_ps(c + r * ldc + q * kPanel, mask, y);
    }
  }
}

// C(MR x NP*16) from Aq rows (leading dim lda) and NP panels (panel q + 1 starts `stride` bytes
// after panel q), `quads` k quads.
template <int MR, int NP>
COLLAGE_VNNI void micro_kernel(const uint8_t* a, int64_t lda, const int8_t* w, int64_t stride, int64_t quads,
                               float* c, int64_t ldc, const TileOut& t) {
  __m512i acc[MR][NP];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) acc[r][q] = _mm512_setzero_si512();
  for (int64_t p = 0; p < quads; ++p) {
    __m512i b[NP];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) b[q] = _mm512_load_si512(w + q * stride + p * 64);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      int32_t four;  // this row's 4 k values, broadcast to every column
      std::memcpy(&four, a + r * lda + 4 * p, sizeof four);
      const __m512i av = _mm512_set1_epi32(four);
#pragma GCC unroll 4
      for (int q = 0; q < NP; ++q) acc[r][q] = _mm512_dpbusd_epi32(acc[r][q], av, b[q]);
    }
  }
  alignas(64) TileSums sums;
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) _mm512_store_si512(sums[r][q], acc[r][q]);
  finish_tile(sums, MR, NP, c, ldc, t);
}

// The full tile, 6 x 4 panels, its loop in assembly: GCC keeps 24 vpdpbusd accumulators in
// registers only with the loop unrolled, and then spills (measured 560 GOPS a core, 55% of the
// peak). Here: zmm0-23 accumulate, zmm24-27 hold a quad of the four panels, zmm28 the broadcast.
COLLAGE_VNNI void full_tile(const uint8_t* a, int64_t lda, const int8_t* w, int64_t stride, int64_t quads,
                            float* c, int64_t ldc, const TileOut& t) {
  alignas(64) TileSums acc;
  const uint8_t* a3 = a + 3 * lda;
  const int8_t* w2 = w + 2 * stride;
  asm volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vmovdqa64 %%zmm0, %%zmm1\n\t"
      "vmovdqa64 %%zmm0, %%zmm2\n\t"
      "vmovdqa64 %%zmm0, %%zmm3\n\t"
      "vmovdqa64 %%zmm0, %%zmm4\n\t"
      "vmovdqa64 %%zmm0, %%zmm5\n\t"
      "vmovdqa64 %%zmm0, %%zmm6\n\t"
      "vmovdqa64 %%zmm0, %%zmm7\n\t"
      "vmovdqa64 %%zmm0, %%zmm8\n\t"
      "vmovdqa64 %%zmm0, %%zmm9\n\t"
      "vmovdqa64 %%zmm0, %%zmm10\n\t"
      "vmovdqa64 %%zmm0, %%zmm11\n\t"
      "vmovdqa64 %%zmm0, %%zmm12\n\t"
      "vmovdqa64 %%zmm0, %%zmm13\n\t"
      "vmovdqa64 %%zmm0, %%zmm14\n\t"
      "vmovdqa64 %%zmm0, %%zmm15\n\t"
      "vmovdqa64 %%zmm0, %%zmm16\n\t"
      "vmovdqa64 %%zmm0, %%zmm17\n\t"
      "vmovdqa64 %%zmm0, %%zmm18\n\t"
      "vmovdqa64 %%zmm0, %%zmm19\n\t"
      "vmovdqa64 %%zmm0, %%zmm20\n\t"
      "vmovdqa64 %%zmm0, %%zmm21\n\t"
      "vmovdqa64 %%zmm0, %%zmm22\n\t"
      "vmovdqa64 %%zmm0, %%zmm23\n\t"
      "test %[quads], %[quads]\n\t"
      "jle 2f\n\t"
      "1:\n\t"
      "vmovdqa64 (%[w]), %%zmm24\n\t"
      "vmovdqa64 (%[w], %[stride]), %%zmm25\n\t"
      "vmovdqa64 (%[w2]), %%zmm26\n\t"
      "vmovdqa64 (%[w2], %[stride]), %%zmm27\n\t"
#define COLLAGE_ROW(addr, r0, r1, r2, r3) \
  "vpbroadcastd " addr                    \
  ", %%zmm28\n\t"                         \
  "vpdpbusd %%zmm24, %%zmm28, %%zmm" #r0  \
  "\n\t"                                  \
  "vpdpbusd %%zmm25, %%zmm28, %%zmm" #r1  \
  "\n\t"                                  \
  "vpdpbusd %%zmm26, %%zmm28, %%zmm" #r2  \
  "\n\t"                                  \
  "vpdpbusd %%zmm27, %%zmm28, %%zmm" #r3 "\n\t"
      COLLAGE_ROW("(%[a])", 0, 1, 2, 3) COLLAGE_ROW("(%[a], %[lda])", 4, 5, 6, 7)
          COLLAGE_ROW("(%[a], %[lda], 2)", 8, 9, 10, 11) COLLAGE_ROW("(%[a3])", 12, 13, 14, 15)
              COLLAGE_ROW("(%[a3], %[lda])", 16, 17, 18, 19) COLLAGE_ROW("(%[a3], %[lda], 2)", 20, 21, 22, 23)
#undef COLLAGE_ROW
                  "add $64, %[w]\n\t"
                  "add $64, %[w2]\n\t"
                  "add $4, %[a]\n\t"
                  "add $4, %[a3]\n\t"
                  "dec %[quads]\n\t"
                  "jnz 1b\n\t"
                  "2:\n\t"
                  "vmovdqa64 %%zmm0, 0(%[acc])\n\t"
                  "vmovdqa64 %%zmm1, 64(%[acc])\n\t"
                  "vmovdqa64 %%zmm2, 128(%[acc])\n\t"
                  "vmovdqa64 %%zmm3, 192(%[acc])\n\t"
                  "vmovdqa64 %%zmm4, 256(%[acc])\n\t"
                  "vmovdqa64 %%zmm5, 320(%[acc])\n\t"
                  "vmovdqa64 %%zmm6, 384(%[acc])\n\t"
                  "vmovdqa64 %%zmm7, 448(%[acc])\n\t"
                  "vmovdqa64 %%zmm8, 512(%[acc])\n\t"
                  "vmovdqa64 %%zmm9, 576(%[acc])\n\t"
                  "vmovdqa64 %%zmm10, 640(%[acc])\n\t"
                  "vmovdqa64 %%zmm11, 704(%[acc])\n\t"
                  "vmovdqa64 %%zmm12, 768(%[acc])\n\t"
                  "vmovdqa64 %%zmm13, 832(%[acc])\n\t"
                  "vmovdqa64 %%zmm14, 896(%[acc])\n\t"
                  "vmovdqa64 %%zmm15, 960(%[acc])\n\t"
                  "vmovdqa64 %%zmm16, 1024(%[acc])\n\t"
                  "vmovdqa64 %%zmm17, 1088(%[acc])\n\t"
                  "vmovdqa64 %%zmm18, 1152(%[acc])\n\t"
                  "vmovdqa64 %%zmm19, 1216(%[acc])\n\t"
                  "vmovdqa64 %%zmm20, 1280(%[acc])\n\t"
                  "vmovdqa64 %%zmm21, 1344(%[acc])\n\t"
                  "vmovdqa64 %%zmm22, 1408(%[acc])\n\t"
                  "vmovdqa64 %%zmm23, 1472(%[acc])\n\t"
      : [a] "+r"(a), [a3] "+r"(a3), [w] "+r"(w), [w2] "+r"(w2), [quads] "+r"(quads)
      : [lda] "r"(lda), [stride] "r"(stride), [acc] "r"(&acc[0][0][0])
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",
        "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "cc", "memory");
  finish_tile(acc, kRows, kWide, c, ldc, t);
}

using MicroKernel = void (*)(const uint8_t*, int64_t, const int8_t*, int64_t, int64_t, float*, int64_t,
                             const TileOut&);
template <int NP>
constexpr std::array<MicroKernel, kRows + 1> kernels_of() {
  return {nullptr,
          micro_kernel<1, NP>,
          micro_kernel<2, NP>,
          micro_kernel<3, NP>,
          micro_kernel<4, NP>,
          micro_kernel<5, NP>,
          micro_kernel<6, NP>};
}
constexpr std::array<MicroKernel, kRows + 1> kKernels[kWide] = {kernels_of<1>(), kernels_of<2>(),
                                                                kernels_of<3>(), kernels_of<4>()};
MicroKernel kernel_for(int64_t np, int rows) {
  return np == kWide && rows == kRows ? full_tile : kKernels[np - 1][rows];
}

// Min and max of rows [r0, r1) of A (k columns), folded into lo and hi; NaN for both if a value is NaN
// (vminps would drop it).
COLLAGE_VNNI void range_of(const float* a, int64_t lda, int64_t k, int64_t r0, int64_t r1, float& lo,
                           float& hi) {
  __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  __mmask16 nan = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a + r * lda;
    for (int64_t j = 0; j < k; j += kPanel) {
      const __mmask16 mask = tail_mask(k - j);
      const __m512 v = _mm512_maskz_loadu_ps(mask, x + j);  // masked lanes read as 0, which the range holds
      vlo = _mm512_min_ps(vlo, v);
      vhi = _mm512_max_ps(vhi, v);
      nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
  }
  lo = nan ? std::numeric_limits<float>::quiet_NaN() : _mm512_reduce_min_ps(vlo);
  hi = nan ? std::numeric_limits<float>::quiet_NaN() : _mm512_reduce_max_ps(vhi);
}

// Rows [r0, r1) of A quantized into q (leading dim ldq, zero past k). x / scale, not x * (1 / scale):
// the quotient rounds as ONNX Runtime's does, so both give the same integers.
COLLAGE_VNNI void quantize_rows(const float* a, int64_t lda, int64_t k, int64_t r0, int64_t r1, float scale,
                                int32_t zp, uint8_t* q, int64_t ldq) {
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512i vzp = _mm512_set1_epi32(zp), zero = _mm512_setzero_si512(), top = _mm512_set1_epi32(255);
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a + r * lda;
    uint8_t* out = q + r * ldq;
    for (int64_t j = 0; j < k; j += kPanel) {
      const __mmask16 mask = tail_mask(k - j);
      // cvtps rounds half to even (the default rounding mode), as DynamicQuantizeLinear does.
      __m512i v = _mm512_cvtps_epi32(_mm512_div_ps(_mm512_maskz_loadu_ps(mask, x + j), vscale));
      v = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(v, vzp), zero), top);
      _mm512_mask_cvtepi32_storeu_epi8(out + j, mask, v);
    }
    std::memset(out + k, 0, static_cast<size_t>(ldq - k));  // times zero weights
  }
}

void tile(int64_t np, int rows, const uint8_t* a, int64_t lda, const int8_t* w, int64_t stride, int64_t quads,
          float* c, int64_t ldc, const TileOut& t) {
  kernel_for(np, rows)(a, lda, w, stride, quads, c, ldc, t);
}

}  // namespace

const TileSet& vnni_tiles() {
  static const TileSet set{kRows, 255, false, range_of, quantize_rows, tile};
  return set;
}

}  // namespace collage::stream_gemm_int8::detail
