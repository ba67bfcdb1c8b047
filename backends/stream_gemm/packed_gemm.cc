#include "backends/stream_gemm/packed_gemm.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "backends/native/fast_math.h"
#include "backends/native/fast_math_avx2.h"
#include "backends/native/fast_math_avx512.h"  // <immintrin.h> without GCC 12's false warnings, COLLAGE_AVX512F

namespace collage::stream_gemm {

namespace {

using native::gelu_erf8;
using native::gelu_tanh8;

constexpr int kRows = 6;  // rows of A per micro-tile: 12 accumulators + 2 weight + 1 broadcast register
// Rows of A are taken in chunks of at most this many floats (and at least 6 rows), so a chunk's
// packed rows stay in L2 (1 MiB here) beside the panel being multiplied and the one prefetched;
// every chunk streams all the panels (from L3 after the first, where the weights fit there).
constexpr int64_t kChunkFloats = 160 * 1024;
constexpr int64_t kMinSegment = 16;  // k steps between the micro-kernel's prefetch bursts

// Storage for `count` floats the caller fills: 64-byte aligned, huge pages from 2 MiB up (the
// weights are streamed, and a TLB miss per 4 KiB page, a two-level walk in a VM, stalls the
// prefetches).
std::unique_ptr<Storage> floats(int64_t count) {
  return std::make_unique<Storage>(static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float),
                                   Storage::Fill::None);
}

// A's rows [r0, r0 + MR) as [k][MR], so the micro-kernel broadcasts from one stream.
template <int MR>
void pack_rows(const float* a, int64_t lda, int64_t k, float* out) {
  for (int64_t p = 0; p < k; ++p)
    for (int r = 0; r < MR; ++r) out[p * MR + r] = a[r * lda + p];
}

// The full block, 8 k steps at a time: six rows' 8 floats transposed in registers (two zero
// rows make it 8x8), each k step stored as 8 floats whose last two the next step overwrites, so
// the vector loop stops while a later step of this block is still to come. As scalar code the
// packing took ~10% of a product's time at k = 1536 (one pass over A per panel run).
template <>
COLLAGE_AVX2 void pack_rows<kRows>(const float* a, int64_t lda, int64_t k, float* out) {
  int64_t p = 0;
  for (; p + 8 < k; p += 8) {
    const __m256 r0 = _mm256_loadu_ps(a + p), r1 = _mm256_loadu_ps(a + lda + p),
                 r2 = _mm256_loadu_ps(a + 2 * lda + p), r3 = _mm256_loadu_ps(a + 3 * lda + p),
                 r4 = _mm256_loadu_ps(a + 4 * lda + p), r5 = _mm256_loadu_ps(a + 5 * lda + p),
                 zero = _mm256_setzero_ps();
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
                 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
                 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
                 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
                 u4 = _mm256_shuffle_ps(t4, zero, 0x44), u5 = _mm256_shuffle_ps(t4, zero, 0xEE),
                 u6 = _mm256_shuffle_ps(t5, zero, 0x44), u7 = _mm256_shuffle_ps(t5, zero, 0xEE);
    // u0..u3 hold rows 0-3 of k steps {0,1,2,3 | 4,5,6,7} by lane half; u4..u7 rows 4-5.
    const __m256 steps[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                             _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                             _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                             _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
    for (int q = 0; q < 8; ++q) _mm256_storeu_ps(out + (p + q) * kRows, steps[q]);
  }
  for (; p < k; ++p)
    for (int r = 0; r < kRows; ++r) out[p * kRows + r] = a[r * lda + p];
}

// What the micro-kernel adds besides the product: initial accumulators (init, leading dim ldi;
// may be C itself), then, as it stores, a row (16 floats) and a tile (add, leading dim ld_add).
// Null pointers: nothing.
struct TileAdds {
  const float* init = nullptr;
  int64_t ldi = 0;
  const float* row = nullptr;
  const float* add = nullptr;
  int64_t ld_add = 0;
};

// acc(MR x 16) = init + A(MR x k) * panel(k x 16), stored to c (ldc) plus the row and the tile.
// While it runs, prefetches lines of `next` from line `pf_first` on, one per `pf_every` k steps
// (null: nothing).
template <int MR>
COLLAGE_AVX2 void micro_kernel(const float* ap, const float* bp, int64_t k, float* c, int64_t ldc,
                               const TileAdds& t, const char* next, int64_t pf_first, int64_t pf_every) {
  const float *init = t.init, *row = t.row, *add = t.add;
  const int64_t ldi = t.ldi, ld_add = t.ld_add;
  __m256 acc0[MR], acc1[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    acc0[r] = init ? _mm256_loadu_ps(init + r * ldi) : _mm256_setzero_ps();
    acc1[r] = init ? _mm256_loadu_ps(init + r * ldi + 8) : _mm256_setzero_ps();
  }
  const char* pf = next ? next + pf_first * 64 : nullptr;
  // Segments of at least 16 k steps, each followed by the lines due over it (one per pf_every
  // steps), so the inner loop carries no branch but its own: unrolled, the front end keeps up
  // with two FMAs a cycle. A test in every step held the kernel to ~65% of the FMA peak with all
  // in L1; segments of one line's worth (3 steps at 16 rows) cost 10-20% while streaming.
  const int64_t every = std::max<int64_t>(pf_every, 1);
  const int64_t lines = pf ? (kMinSegment + every - 1) / every : 0;
  const int64_t segment = pf ? every * lines : k;
  for (int64_t p = 0; p < k;) {
    const int64_t stop = std::min(k, p + segment);
#pragma GCC unroll 4
    for (; p < stop; ++p) {
      const __m256 b0 = _mm256_load_ps(bp + p * kPanel);
      const __m256 b1 = _mm256_load_ps(bp + p * kPanel + 8);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        const __m256 av = _mm256_broadcast_ss(ap + p * MR + r);
        acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
        acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
      }
    }
    for (int64_t l = 0; l < lines; ++l, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
  }
  const __m256 row0 = row ? _mm256_loadu_ps(row) : _mm256_setzero_ps(),
               row1 = row ? _mm256_loadu_ps(row + 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    __m256 y0 = row ? _mm256_add_ps(acc0[r], row0) : acc0[r],
           y1 = row ? _mm256_add_ps(acc1[r], row1) : acc1[r];
    if (add) {
      y0 = _mm256_add_ps(y0, _mm256_loadu_ps(add + r * ld_add));
      y1 = _mm256_add_ps(y1, _mm256_loadu_ps(add + r * ld_add + 8));
    }
    _mm256_storeu_ps(c + r * ldc, y0);
    _mm256_storeu_ps(c + r * ldc + 8, y1);
  }
}

// The AVX-512 form: MR rows by NP adjacent panels (16 columns each, one zmm register per row and
// panel; panel j + 1 starts k * 16 floats after panel j). Where the CPU runs 512-bit FMAs at full
// width (Zen 5), the AVX2 kernel reaches only half the peak; 6 x 32 keeps 12 accumulators and
// 8 loads per 12 FMAs. The adds of TileAdds cover NP * 16 columns. While it runs, prefetches
// `pf_lines` lines of `next` from line `pf_first` on, spread over its k steps.
template <int MR, int NP>
COLLAGE_AVX512F void micro_kernel512(const float* ap, const float* bp, int64_t k, float* c, int64_t ldc,
                                     const TileAdds& t, const char* next, int64_t pf_first,
                                     int64_t pf_lines) {
  const float *init = t.init, *row = t.row, *add = t.add;
  const int64_t ldi = t.ldi, ld_add = t.ld_add, stride = k * kPanel;
  __m512 acc[MR][NP];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int q = 0; q < NP; ++q)
      acc[r][q] = init ? _mm512_loadu_ps(init + r * ldi + q * kPanel) : _mm512_setzero_ps();
  // Segments of at least kMinSegment k steps, each followed by its share of the lines (see the
  // AVX2 kernel: no branch in the unrolled loop).
  const char* pf = next && pf_lines > 0 ? next + pf_first * 64 : nullptr;
  const int64_t segments = pf ? std::max<int64_t>(1, std::min(pf_lines, k / kMinSegment)) : 1;
  const int64_t segment = (k + segments - 1) / segments;
  const int64_t per_segment = pf ? (pf_lines + segments - 1) / segments : 0;
  int64_t left = pf ? pf_lines : 0;
  for (int64_t p = 0; p < k;) {
    const int64_t stop = std::min(k, p + segment);
#pragma GCC unroll 4
    for (; p < stop; ++p) {
      __m512 b[NP];
#pragma GCC unroll 2
      for (int q = 0; q < NP; ++q) b[q] = _mm512_load_ps(bp + q * stride + p * kPanel);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        const __m512 av = _mm512_set1_ps(ap[p * MR + r]);
#pragma GCC unroll 2
        for (int q = 0; q < NP; ++q) acc[r][q] = _mm512_fmadd_ps(av, b[q], acc[r][q]);
      }
    }
    for (int64_t l = 0; l < per_segment && left > 0; ++l, --left, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int q = 0; q < NP; ++q) {
      __m512 y = acc[r][q];
      if (row) y = _mm512_add_ps(y, _mm512_loadu_ps(row + q * kPanel));
      if (add) y = _mm512_add_ps(y, _mm512_loadu_ps(add + r * ld_add + q * kPanel));
      _mm512_storeu_ps(c + r * ldc + q * kPanel, y);
    }
}

using MicroKernel = void (*)(const float*, const float*, int64_t, float*, int64_t, const TileAdds&,
                             const char*, int64_t, int64_t);
constexpr MicroKernel kKernels[kRows + 1] = {nullptr,         micro_kernel<1>, micro_kernel<2>,
                                             micro_kernel<3>, micro_kernel<4>, micro_kernel<5>,
                                             micro_kernel<6>};
// Full panels per step of the AVX-512 kernel (fewer at a run's end). Three (18 accumulators)
// measured 10-20% slower on BERT-base's products, four spilled.
constexpr int kWide = 2;
template <int NP>
constexpr std::array<MicroKernel, kRows + 1> kernels512() {
  return {nullptr,
          micro_kernel512<1, NP>,
          micro_kernel512<2, NP>,
          micro_kernel512<3, NP>,
          micro_kernel512<4, NP>,
          micro_kernel512<5, NP>,
          micro_kernel512<6, NP>};
}
constexpr std::array<std::array<MicroKernel, kRows + 1>, kWide> kKernels512 = {kernels512<1>(),
                                                                               kernels512<2>()};
using Packer = void (*)(const float*, int64_t, int64_t, float*);
constexpr Packer kPackers[kRows + 1] = {nullptr,      pack_rows<1>, pack_rows<2>, pack_rows<3>,
                                        pack_rows<4>, pack_rows<5>, pack_rows<6>};

// One step on 8 floats (o: the AddRow/AddFull operand's).
COLLAGE_AVX2 inline __m256 step8(EpilogueStep::Kind kind, __m256 v, const float* o) {
  switch (kind) {
    case EpilogueStep::Kind::AddRow:
    case EpilogueStep::Kind::AddFull:
      return _mm256_add_ps(v, _mm256_loadu_ps(o));
    case EpilogueStep::Kind::Relu:
      return _mm256_max_ps(v, _mm256_setzero_ps());
    case EpilogueStep::Kind::GeluErf:
      return gelu_erf8(v);
    case EpilogueStep::Kind::GeluTanh:
      return gelu_tanh8(v);
  }
  return v;
}

// One step over `cols` floats of a row, 8 at a time (a tail of fewer through a zero-padded copy).
COLLAGE_AVX2 void apply_step(const EpilogueStep& s, float* y, const float* operand, int64_t cols) {
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8)
    _mm256_storeu_ps(y + j, step8(s.kind, _mm256_loadu_ps(y + j), operand ? operand + j : nullptr));
  if (j == cols) return;
  const size_t tail = static_cast<size_t>(cols - j) * sizeof(float);
  alignas(32) float v[8] = {}, o[8] = {};
  std::memcpy(v, y + j, tail);
  if (operand) std::memcpy(o, operand + j, tail);
  _mm256_store_ps(v, step8(s.kind, _mm256_load_ps(v), o));
  std::memcpy(y + j, v, tail);
}

// The same step sixteen lanes at a time, the kind decided once per row: where the CPU has AVX-512
// the epilogue runs this whatever the product's tiles (the GELUs' reciprocals by vrcp14ps and a
// Newton step, fast_math_avx512.h; with the eight-lane division a fused GELU cost ~1.1 ns an
// element, twice a separate GELU kernel, on ViT-B/16's MLP products).
template <EpilogueStep::Kind kKind>
COLLAGE_AVX512F inline __m512 step16(__m512 v, const float* o, __mmask16 lanes) {
  if constexpr (kKind == EpilogueStep::Kind::AddRow || kKind == EpilogueStep::Kind::AddFull)
    return _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes, o));
  else if constexpr (kKind == EpilogueStep::Kind::Relu)
    return _mm512_max_ps(v, _mm512_setzero_ps());
  else if constexpr (kKind == EpilogueStep::Kind::GeluErf)
    return native::gelu_erf16(v);
  else
    return native::gelu_tanh16(v);
}
template <EpilogueStep::Kind kKind>
COLLAGE_AVX512F void apply_row512(float* y, const float* operand, int64_t cols) {
  int64_t j = 0;
  for (; j + 16 <= cols; j += 16)
    _mm512_storeu_ps(y + j, step16<kKind>(_mm512_loadu_ps(y + j), operand ? operand + j : nullptr, 0xFFFF));
  if (j == cols) return;
  const auto lanes = static_cast<__mmask16>((1u << (cols - j)) - 1);
  _mm512_mask_storeu_ps(
      y + j, lanes,
      step16<kKind>(_mm512_maskz_loadu_ps(lanes, y + j), operand ? operand + j : nullptr, lanes));
}
COLLAGE_AVX512F void apply_step512(const EpilogueStep& s, float* y, const float* operand, int64_t cols) {
  using Kind = EpilogueStep::Kind;
  switch (s.kind) {
    case Kind::AddRow:
      return apply_row512<Kind::AddRow>(y, operand, cols);
    case Kind::AddFull:
      return apply_row512<Kind::AddFull>(y, operand, cols);
    case Kind::Relu:
      return apply_row512<Kind::Relu>(y, operand, cols);
    case Kind::GeluErf:
      return apply_row512<Kind::GeluErf>(y, operand, cols);
    case Kind::GeluTanh:
      return apply_row512<Kind::GeluTanh>(y, operand, cols);
  }
}

}  // namespace

void apply_epilogue(const EpilogueStep* first, const EpilogueStep* last, float* c, int64_t ldc, int64_t r0,
                    int64_t rows, int64_t j0, int64_t cols) {
  const bool wide = best_isa() == Isa::Avx512;
  for (const EpilogueStep* step = first; step != last; ++step)
    for (int64_t r = r0; r < r0 + rows; ++r) {
      const EpilogueStep& s = *step;
      const float* operand = s.kind == EpilogueStep::Kind::AddRow    ? s.operand + j0
                             : s.kind == EpilogueStep::Kind::AddFull ? s.operand + r * s.ld + j0
                                                                     : nullptr;
      if (wide)
        apply_step512(s, c + r * ldc + j0, operand, cols);
      else
        apply_step(s, c + r * ldc + j0, operand, cols);
    }
}

namespace {

// Panels [j_begin, j_end) of C = A * W: per panel (per pair of full panels under AVX-512), every
// row block of A against it (the panels stay in L2 after the first block), prefetching the next
// panels of this run meanwhile.
void panel_run(const float* packed_a, int64_t m, const PackedWeights& w, float* c, int64_t ldc,
               const std::vector<EpilogueStep>& epilogue, bool accumulate, int64_t j_begin, int64_t j_end,
               Isa isa) {
  const int64_t k = w.k, blocks = (m + kRows - 1) / kRows;
  const bool wide = isa == Isa::Avx512;
  alignas(64) float edge[kRows * kPanel];
  // The epilogue's leading adds, on full panels, go into the micro-kernel: an AddFull as its
  // initial accumulators (when not accumulating), then up to one AddRow and one AddFull as it
  // stores (adds commute). Applied row by row after it, a 16-float add per call cost 10-15% of a
  // strassen product's half-size products.
  using Kind = EpilogueStep::Kind;
  const EpilogueStep *first = epilogue.data(), *last = epilogue.data() + epilogue.size();
  const EpilogueStep* full_init =
      !accumulate && first != last && first->kind == Kind::AddFull ? first : nullptr;
  const EpilogueStep* rest = first + (full_init ? 1 : 0);
  const EpilogueStep *row_add = nullptr, *full_add = nullptr;
  for (; rest != last; ++rest) {
    if (rest->kind == Kind::AddRow && !row_add)
      row_add = rest;
    else if (rest->kind == Kind::AddFull && !full_add)
      full_add = rest;
    else
      break;
  }
  for (int64_t j = j_begin; j < j_end;) {
    // Panels in this step: under AVX-512 up to kWide full ones.
    const int64_t full_left = std::min(j_end, w.n / kPanel) - j;
    const int np = wide ? static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kWide, full_left))) : 1;
    const float* panel = w.panel(j);
    const int64_t next_j = j + np;
    const char* next = next_j < j_end ? reinterpret_cast<const char*>(w.panel(next_j)) : nullptr;
    const int64_t next_lines = std::min<int64_t>(wide ? kWide : 1, j_end - next_j) * k;  // a panel: k lines
    const int64_t j0 = j * kPanel, cols = std::min<int64_t>(np * kPanel, w.n - j0);
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t r0 = b * kRows;
      const int rows = static_cast<int>(std::min<int64_t>(kRows, m - r0));
      // This block's share of the next panels' lines: the AVX2 kernel takes one every `blocks` k
      // steps from pf_first, the AVX-512 one a count.
      const int64_t pf_first = b * next_lines / blocks;
      const int64_t pf_arg = wide ? (b + 1) * next_lines / blocks - pf_first : blocks;
      const MicroKernel kernel = wide ? kKernels512[np - 1][rows] : kKernels[rows];
      const float* ap = packed_a + r0 * k;
      // The next block's rows of C (read when accumulating) and of AddFull operands come from L3
      // or memory, a line or two per row: fetched while this block's k steps run.
      if (b + 1 < blocks) {
        const int64_t next_rows = std::min<int64_t>(kRows, m - r0 - kRows);
        for (int64_t r = r0 + kRows; r < r0 + kRows + next_rows; ++r)
          for (int64_t at = j0; at < j0 + cols; at += kPanel) {
            if (accumulate) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + at), _MM_HINT_T0);
            for (const EpilogueStep& s : epilogue)
              if (s.kind == EpilogueStep::Kind::AddFull)
                _mm_prefetch(reinterpret_cast<const char*>(s.operand + r * s.ld + at), _MM_HINT_T0);
          }
      }
      float* tile = c + r0 * ldc + j0;
      if (cols == np * kPanel) {
        TileAdds adds;
        if (accumulate) {
          adds.init = tile;
          adds.ldi = ldc;
        } else if (full_init) {
          adds.init = full_init->operand + r0 * full_init->ld + j0;
          adds.ldi = full_init->ld;
        }
        if (row_add) adds.row = row_add->operand + j0;
        if (full_add) {
          adds.add = full_add->operand + r0 * full_add->ld + j0;
          adds.ld_add = full_add->ld;
        }
        kernel(ap, panel, k, tile, ldc, adds, next, pf_first, pf_arg);
        if (rest != last) apply_epilogue(rest, last, c, ldc, r0, rows, j0, cols);
      } else {  // the last, partial panel: through a tile, then its valid columns, then the epilogue
        if (accumulate)
          for (int r = 0; r < rows; ++r)
            std::memcpy(edge + r * kPanel, tile + r * ldc, static_cast<size_t>(cols) * sizeof(float));
        kernel(ap, panel, k, edge, kPanel, TileAdds{accumulate ? edge : nullptr, kPanel}, next, pf_first,
               pf_arg);
        for (int r = 0; r < rows; ++r)
          std::memcpy(tile + r * ldc, edge + r * kPanel, static_cast<size_t>(cols) * sizeof(float));
        if (first != last) apply_epilogue(first, last, c, ldc, r0, rows, j0, cols);
      }
    }
    j = next_j;
  }
}

}  // namespace

bool supported() { return native::avx2_fma(); }

Isa best_isa() {
  static const Isa best = supported() && cpu_isa_allows(IsaLevel::Avx512) ? Isa::Avx512 : Isa::Avx2;
  return best;
}

std::vector<Isa> isas() {
  if (!supported()) return {};
  if (best_isa() == Isa::Avx512) return {Isa::Avx2, Isa::Avx512};
  return {Isa::Avx2};
}

void activate(EpilogueStep::Kind kind, float* y, int64_t n, int threads) {
  auto run = [kind](float* p, int64_t count) {
    if (best_isa() == Isa::Avx512)
      apply_step512({kind}, p, nullptr, count);
    else
      apply_step({kind}, p, nullptr, count);
  };
  constexpr int64_t kMinShare = 1 << 15;  // below this a second thread costs more than it saves
  const int64_t teams = std::clamp<int64_t>(n / kMinShare, 1, std::max(threads, 1));
  if (teams == 1) return run(y, n);
  const int64_t chunk = (n / teams + 15) / 16 * 16;
#pragma omp parallel for num_threads(static_cast <int>(teams))
  for (int64_t t = 0; t < teams; ++t) {
    const int64_t begin = t * chunk;
    if (begin < n) run(y + begin, std::min(chunk, n - begin));
  }
}

PackedWeights pack_weights(const float* w, int64_t k, int64_t n, int64_t ldw, bool transposed) {
  PackedWeights out;
  out.k = k;
  out.n = n;
  out.panels = (n + kPanel - 1) / kPanel;
  out.data = floats(out.panels * k * kPanel);
  for (int64_t j = 0; j < out.panels; ++j) {
    float* dst = reinterpret_cast<float*>(out.data->data()) + j * k * kPanel;
    for (int64_t p = 0; p < k; ++p)
      for (int64_t q = 0; q < kPanel; ++q) {
        const int64_t col = j * kPanel + q;
        dst[p * kPanel + q] = col < n ? (transposed ? w[col * ldw + p] : w[p * ldw + col]) : 0.0f;
      }
  }
  return out;
}

void gemm(const float* a, int64_t m, int64_t lda, const PackedWeights& w, float* c, int64_t ldc,
          const std::vector<EpilogueStep>& epilogue, int threads, bool accumulate, Isa isa) {
  if (m <= 0 || w.n <= 0) return;
  if (isa == Isa::Avx512) isa = best_isa();  // never an illegal instruction
  const int64_t k = w.k;
  const int64_t chunk = std::max<int64_t>(kRows, kChunkFloats / k / kRows * kRows);
  const int64_t rows_cap = std::min(m, chunk);
  // Kept per thread: a fresh buffer each call costs page faults (and an mmap past 128 KiB).
  static thread_local std::unique_ptr<Storage> packed_a;
  if (!packed_a || packed_a->capacity() < static_cast<size_t>(rows_cap * k) * sizeof(float))
    packed_a = floats(rows_cap * k);
  float* pa = reinterpret_cast<float*>(packed_a->data());  // this thread's: the team's threads have their own
  // Under AVX-512 the panels go to threads in pairs: a thread's run starts on an even panel.
  const bool wide = isa == Isa::Avx512;
  const int64_t group = wide ? kWide : 1;
  const int64_t steps_total = (w.panels + group - 1) / group;
  const int64_t teams = std::max<int64_t>(1, std::min<int64_t>(threads, steps_total));
  auto run_start = [&](int64_t t, int64_t nt) {
    return t == nt ? w.panels : std::min(w.panels, t * steps_total / nt * group);
  };
  // AddFull operands at the chunk's first row; copied only when there is more than one chunk (no
  // allocation on the per-request path of the small products this kernel was made for).
  std::vector<EpilogueStep> shifted;
  if (m > chunk) shifted = epilogue;
  const std::vector<EpilogueStep>& steps = m > chunk ? shifted : epilogue;
  for (int64_t q0 = 0; q0 < m; q0 += chunk) {
    const int64_t rows = std::min(chunk, m - q0), blocks = (rows + kRows - 1) / kRows;
    // Blocks [b0, b1) of this chunk's rows packed into pa.
    auto pack = [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int block = static_cast<int>(std::min<int64_t>(kRows, rows - b * kRows));
        kPackers[block](a + (q0 + b * kRows) * lda, lda, k, pa + b * kRows * k);
      }
    };
    for (size_t i = 0; i < shifted.size(); ++i)
      if (epilogue[i].kind == EpilogueStep::Kind::AddFull)
        shifted[i].operand = epilogue[i].operand + q0 * epilogue[i].ld;
    float* cq = c + q0 * ldc;
    if (teams == 1) {
      pack(0, blocks);
      panel_run(pa, rows, w, cq, ldc, steps, accumulate, 0, w.panels, isa);
      continue;
    }
    // The team packs A together (packed by one thread, it held two threads to ~1.8x of one at
    // k = 1536), then each thread takes its own contiguous run of panels.
#pragma omp parallel num_threads(static_cast <int>(teams))
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      pack(t * blocks / nt, (t + 1) * blocks / nt);
#pragma omp barrier
      panel_run(pa, rows, w, cq, ldc, steps, accumulate, run_start(t, nt), run_start(t + 1, nt), isa);
    }
  }
}

}  // namespace collage::stream_gemm
