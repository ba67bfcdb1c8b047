#include "backends/stream_gemm/packed_gemm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "backends/native/fast_math.h"
#include "backends/native/fast_math_avx2.h"

namespace collage::stream_gemm {

namespace {

using native::exp8;
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

// acc(MR x 16) = A(MR x k) * panel(k x 16) (+ c's tile when accumulating), stored to c (ldc).
// While it runs, prefetches lines of `next` from line `pf_first` on, one per `pf_every` k steps
// (null: nothing).
template <int MR>
COLLAGE_AVX2 void micro_kernel(const float* ap, const float* bp, int64_t k, float* c, int64_t ldc,
                               const char* next, int64_t pf_first, int64_t pf_every, bool accumulate) {
  __m256 acc0[MR], acc1[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    acc0[r] = accumulate ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc1[r] = accumulate ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
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
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc0[r]);
    _mm256_storeu_ps(c + r * ldc + 8, acc1[r]);
  }
}

using MicroKernel = void (*)(const float*, const float*, int64_t, float*, int64_t, const char*, int64_t,
                             int64_t, bool);
constexpr MicroKernel kKernels[kRows + 1] = {nullptr,         micro_kernel<1>, micro_kernel<2>,
                                             micro_kernel<3>, micro_kernel<4>, micro_kernel<5>,
                                             micro_kernel<6>};
using Packer = void (*)(const float*, int64_t, int64_t, float*);
constexpr Packer kPackers[kRows + 1] = {nullptr,      pack_rows<1>, pack_rows<2>, pack_rows<3>,
                                        pack_rows<4>, pack_rows<5>, pack_rows<6>};

// One step over `cols` floats of a row (cols a multiple of 8, or the scalar tail via fast_math).
COLLAGE_AVX2 void apply_step(const EpilogueStep& s, float* y, const float* operand, int64_t cols) {
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 v = _mm256_loadu_ps(y + j);
    switch (s.kind) {
      case EpilogueStep::Kind::AddRow:
      case EpilogueStep::Kind::AddFull:
        v = _mm256_add_ps(v, _mm256_loadu_ps(operand + j));
        break;
      case EpilogueStep::Kind::Relu:
        v = _mm256_max_ps(v, _mm256_setzero_ps());
        break;
      case EpilogueStep::Kind::GeluErf:
        v = gelu_erf8(v);
        break;
      case EpilogueStep::Kind::GeluTanh:
        v = gelu_tanh8(v);
        break;
    }
    _mm256_storeu_ps(y + j, v);
  }
  for (; j < cols; ++j) {
    const float v = y[j];
    switch (s.kind) {
      case EpilogueStep::Kind::AddRow:
      case EpilogueStep::Kind::AddFull:
        y[j] = v + operand[j];
        break;
      case EpilogueStep::Kind::Relu:
        y[j] = v > 0.0f ? v : 0.0f;
        break;
      case EpilogueStep::Kind::GeluErf:
        y[j] = 0.5f * v * (1.0f + native::fast_erf(v * 0.7071067811865476f));
        break;
      case EpilogueStep::Kind::GeluTanh:
        y[j] = 0.5f * v * (1.0f + native::fast_tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
        break;
    }
  }
}

// The epilogue over rows [r0, r0 + rows) and columns [j0, j0 + cols) of C, in place, while hot.
void apply_epilogue(const std::vector<EpilogueStep>& steps, float* c, int64_t ldc, int64_t r0, int64_t rows,
                    int64_t j0, int64_t cols) {
  for (const EpilogueStep& s : steps)
    for (int64_t r = r0; r < r0 + rows; ++r) {
      const float* operand = s.kind == EpilogueStep::Kind::AddRow    ? s.operand + j0
                             : s.kind == EpilogueStep::Kind::AddFull ? s.operand + r * s.ld + j0
                                                                     : nullptr;
      apply_step(s, c + r * ldc + j0, operand, cols);
    }
}

// Panels [j_begin, j_end) of C = A * W: per panel, every row block of A against it (the panel
// stays in L2 after the first), prefetching the next panel of this run meanwhile.
void panel_run(const float* packed_a, int64_t m, const PackedWeights& w, float* c, int64_t ldc,
               const std::vector<EpilogueStep>& epilogue, bool accumulate, int64_t j_begin, int64_t j_end) {
  const int64_t k = w.k, blocks = (m + kRows - 1) / kRows;
  alignas(64) float edge[kRows * kPanel];
  for (int64_t j = j_begin; j < j_end; ++j) {
    const float* panel = w.panel(j);
    const char* next = j + 1 < j_end ? reinterpret_cast<const char*>(w.panel(j + 1)) : nullptr;
    const int64_t j0 = j * kPanel, cols = std::min(kPanel, w.n - j0);
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t r0 = b * kRows;
      const int rows = static_cast<int>(std::min<int64_t>(kRows, m - r0));
      // This block's share of the next panel's k lines, one every `blocks` k steps.
      const int64_t pf_first = b * k / blocks;
      const float* ap = packed_a + r0 * k;
      // The next block's rows of C (read when accumulating) and of AddFull operands come from L3
      // or memory, one line per row: fetched while this block's k steps run.
      if (b + 1 < blocks) {
        const int64_t next_rows = std::min<int64_t>(kRows, m - r0 - kRows);
        for (int64_t r = r0 + kRows; r < r0 + kRows + next_rows; ++r) {
          if (accumulate) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + j0), _MM_HINT_T0);
          for (const EpilogueStep& s : epilogue)
            if (s.kind == EpilogueStep::Kind::AddFull)
              _mm_prefetch(reinterpret_cast<const char*>(s.operand + r * s.ld + j0), _MM_HINT_T0);
        }
      }
      if (cols == kPanel) {
        kKernels[rows](ap, panel, k, c + r0 * ldc + j0, ldc, next, pf_first, blocks, accumulate);
      } else {  // the last, partial panel: through a tile, then its valid columns
        if (accumulate)
          for (int r = 0; r < rows; ++r)
            std::memcpy(edge + r * kPanel, c + (r0 + r) * ldc + j0,
                        static_cast<size_t>(cols) * sizeof(float));
        kKernels[rows](ap, panel, k, edge, kPanel, next, pf_first, blocks, accumulate);
        for (int r = 0; r < rows; ++r)
          std::memcpy(c + (r0 + r) * ldc + j0, edge + r * kPanel, static_cast<size_t>(cols) * sizeof(float));
      }
      if (!epilogue.empty()) apply_epilogue(epilogue, c, ldc, r0, rows, j0, cols);
    }
  }
}

}  // namespace

bool supported() { return native::avx2_fma(); }

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
          const std::vector<EpilogueStep>& epilogue, int threads, bool accumulate) {
  if (m <= 0 || w.n <= 0) return;
  const int64_t k = w.k;
  const int64_t chunk = std::max<int64_t>(kRows, kChunkFloats / k / kRows * kRows);
  const int64_t rows_cap = std::min(m, chunk);
  // Kept per thread: a fresh buffer each call costs page faults (and an mmap past 128 KiB).
  static thread_local std::unique_ptr<Storage> packed_a;
  if (!packed_a || packed_a->capacity() < static_cast<size_t>(rows_cap * k) * sizeof(float))
    packed_a = floats(rows_cap * k);
  float* pa = reinterpret_cast<float*>(packed_a->data());  // this thread's: the team's threads have their own
  const int64_t teams = std::max<int64_t>(1, std::min<int64_t>(threads, w.panels));
  // AddFull operands at the chunk's first row; copied only when there is more than one chunk (no
  // allocation on the per-request path of the small products this kernel was made for).
  std::vector<EpilogueStep> shifted;
  if (m > chunk) shifted = epilogue;
  const std::vector<EpilogueStep>& steps = m > chunk ? shifted : epilogue;
  for (int64_t q0 = 0; q0 < m; q0 += chunk) {
    const int64_t rows = std::min(chunk, m - q0);
    for (int64_t r0 = 0; r0 < rows; r0 += kRows) {
      const int block = static_cast<int>(std::min<int64_t>(kRows, rows - r0));
      kPackers[block](a + (q0 + r0) * lda, lda, k, pa + r0 * k);
    }
    for (size_t i = 0; i < shifted.size(); ++i)
      if (epilogue[i].kind == EpilogueStep::Kind::AddFull)
        shifted[i].operand = epilogue[i].operand + q0 * epilogue[i].ld;
    float* cq = c + q0 * ldc;
    if (teams == 1) {
      panel_run(pa, rows, w, cq, ldc, steps, accumulate, 0, w.panels);
      continue;
    }
#pragma omp parallel for num_threads(static_cast <int>(teams)) schedule(static, 1)
    for (int64_t t = 0; t < teams; ++t)
      panel_run(pa, rows, w, cq, ldc, steps, accumulate, t * w.panels / teams, (t + 1) * w.panels / teams);
  }
}

}  // namespace collage::stream_gemm
