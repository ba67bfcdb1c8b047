// stream-gemm-int8's tiles for AVX2: per 8 k values and 8 columns, two vpmaddubsw multiply 7-bit
// activations (each row its own range) by 7-bit weights into 16-bit pair sums, vpaddw adds them (exact: 4 *
// 127 * 63 < 2^15), one vpmaddwd by ones widens them into int32. A micro-tile is 3 rows by one 16-column
// panel: 6 accumulators, 4 weight registers, 2 broadcasts, the ones and 2 products fit AVX2's 16 registers.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/native/fast_math_avx2.h"  // <immintrin.h> and the 8-lane GELUs
#include "backends/stream_gemm_int8/int8_tiles.h"

namespace collage::stream_gemm_int8::detail {

namespace {

using stream_gemm::EpilogueStep;

constexpr int kRows = 3;
constexpr int kLevels = 127;

// Lanes [0, count) of eight: the mask vmaskmovps reads (the sign bit of each int32).
COLLAGE_AVX2 __m256i lanes(int64_t count) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(count, 0, 8))), index);
}

// Columns [col, col + 8) of the tile (c and t's arrays start at its first column), `cols` of them
// valid: the sums of `rows` rows (row r's at sums[r]) through t's steps.
COLLAGE_AVX2 void finish8(const __m256i* sums, int rows, int64_t col, int64_t cols, float* c, int64_t ldc,
                          const TileOut& t) {
  const bool full = cols >= 8;
  const __m256i mask = lanes(cols);
  const __m256i column_corr = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.correction + col));
  const __m256 column_scale = _mm256_loadu_ps(t.scale + col);
  const __m256 bias = _mm256_loadu_ps(t.bias + col);
  for (int r = 0; r < rows; ++r) {
    const __m256i corr =
        t.row_zp ? _mm256_mullo_epi32(_mm256_set1_epi32(t.row_zp[r]), column_corr) : column_corr;
    const __m256 scale =
        t.row_scale ? _mm256_mul_ps(_mm256_set1_ps(t.row_scale[r]), column_scale) : column_scale;
    __m256 y = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sums[r], corr)), scale, bias);
    if (t.add) {
      const float* p = t.add + r * t.ld_add + col;
      y = _mm256_add_ps(y, full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask));
    }
    if (t.activation) {
      switch (*t.activation) {
        case EpilogueStep::Kind::Relu:
          y = _mm256_max_ps(y, _mm256_setzero_ps());
          break;
        case EpilogueStep::Kind::GeluErf:
          y = native::gelu_erf8(y);
          break;
        case EpilogueStep::Kind::GeluTanh:
          y = native::gelu_tanh8(y);
          break;
        default:
          break;
      }
    }
    if (t.add_after) {
      const float* p = t.add_after + r * t.ld_after + col;
      y = _mm256_add_ps(y, full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask));
    }
    if (full)
      _mm256_storeu_ps(c + r * ldc + col, y);
    else
      _mm256_maskstore_ps(c + r * ldc + col, mask, y);
  }
}

COLLAGE_AVX2 inline __m256i weights(const int8_t* w, int64_t p, int half) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(w + p * 64 + half * 32));
}

// A row's 4 k values of quad p, to every column.
COLLAGE_AVX2 inline __m256i broadcast(const uint8_t* row, int64_t p) {
  int32_t four;
  std::memcpy(&four, row + 4 * p, sizeof four);
  return _mm256_set1_epi32(four);
}

// MR rows by one panel of 16 columns, `cols` of them valid.
template <int MR>
COLLAGE_AVX2 void panel_tile(const uint8_t* a, int64_t lda, const int8_t* w, int64_t quads, int64_t col,
                             int64_t cols, float* c, int64_t ldc, const TileOut& t) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i lo[MR], hi[MR];  // columns 0-7 and 8-15
#pragma GCC unroll 4
  for (int r = 0; r < MR; ++r) lo[r] = hi[r] = _mm256_setzero_si256();
  int64_t p = 0;
  for (; p + 2 <= quads; p += 2) {
    const __m256i w0 = weights(w, p, 0), w1 = weights(w, p, 1), v0 = weights(w, p + 1, 0),
                  v1 = weights(w, p + 1, 1);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m256i x = broadcast(a + r * lda, p), y = broadcast(a + r * lda, p + 1);
      const __m256i s0 = _mm256_add_epi16(_mm256_maddubs_epi16(x, w0), _mm256_maddubs_epi16(y, v0));
      const __m256i s1 = _mm256_add_epi16(_mm256_maddubs_epi16(x, w1), _mm256_maddubs_epi16(y, v1));
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(s0, ones));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(s1, ones));
    }
  }
  if (p < quads) {
    const __m256i w0 = weights(w, p, 0), w1 = weights(w, p, 1);
#pragma GCC unroll 4
    for (int r = 0; r < MR; ++r) {
      const __m256i x = broadcast(a + r * lda, p);
      lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(_mm256_maddubs_epi16(x, w0), ones));
      hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(_mm256_maddubs_epi16(x, w1), ones));
    }
  }
  finish8(lo, MR, col, cols, c, ldc, t);
  if (cols > 8) finish8(hi, MR, col + 8, cols - 8, c, ldc, t);
}

using PanelTile = void (*)(const uint8_t*, int64_t, const int8_t*, int64_t, int64_t, int64_t, float*, int64_t,
                           const TileOut&);
constexpr PanelTile kPanelTiles[kRows + 1] = {nullptr, panel_tile<1>, panel_tile<2>, panel_tile<3>};

void tile(int64_t np, int rows, const uint8_t* a, int64_t lda, const int8_t* w, int64_t stride, int64_t quads,
          float* c, int64_t ldc, const TileOut& t) {
  for (int64_t q = 0; q < np; ++q) {
    const int64_t cols = q == np - 1 ? t.last_cols : kPanel;
    kPanelTiles[rows](a, lda, w + q * stride, quads, q * kPanel, cols, c, ldc, t);
  }
}

COLLAGE_AVX2 void range_of(const float* a, int64_t lda, int64_t k, int64_t r0, int64_t r1, float& lo,
                           float& hi) {
  __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  int nan = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a + r * lda;
    for (int64_t j = 0; j < k; j += 8) {
      // masked lanes read as 0, which the range holds
      const __m256 v = k - j >= 8 ? _mm256_loadu_ps(x + j) : _mm256_maskload_ps(x + j, lanes(k - j));
      vlo = _mm256_min_ps(vlo, v);
      vhi = _mm256_max_ps(vhi, v);
      nan |= _mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
  }
  if (nan) {
    lo = hi = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, vlo);
  _mm256_store_ps(h, vhi);
  lo = *std::min_element(l, l + 8);
  hi = *std::max_element(h, h + 8);
}

COLLAGE_AVX2 void quantize_rows(const float* a, int64_t lda, int64_t k, int64_t r0, int64_t r1, float scale,
                                int32_t zp, uint8_t* q, int64_t ldq) {
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256i vzp = _mm256_set1_epi32(zp);
  const __m128i top = _mm_set1_epi8(kLevels);
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = a + r * lda;
    uint8_t* out = q + r * ldq;
    int64_t j = 0;
    for (; j + 16 <= k; j += 16) {
      // cvtps rounds half to even (the default rounding mode), as DynamicQuantizeLinear does; the
      // saturating packs clamp to [0, 255], the minimum to the levels.
      const __m256i v0 =
          _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_div_ps(_mm256_loadu_ps(x + j), vscale)), vzp);
      const __m256i v1 =
          _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_div_ps(_mm256_loadu_ps(x + j + 8), vscale)), vzp);
      const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xD8);  // in order
      const __m128i bytes = _mm_min_epu8(
          _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_extracti128_si256(words, 1)), top);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), bytes);
    }
    for (; j < k; ++j) {
      const long v = std::lrint(x[j] / scale) + zp;  // lrint: half to even, as cvtps
      out[j] = static_cast<uint8_t>(std::clamp<long>(v, 0, kLevels));
    }
    std::memset(out + k, 0, static_cast<size_t>(ldq - k));  // times zero weights
  }
}

}  // namespace

const TileSet& avx2_tiles() {
  static const TileSet set{kRows, kLevels, true, range_of, quantize_rows, tile};
  return set;
}

}  // namespace collage::stream_gemm_int8::detail
