#include "backends/stream_gemm_int8/int8_gemm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "backends/stream_gemm_int8/int8_tiles.h"
#include "core/backend_api/cpu_isa.h"
#include "core/backend_api/int8_weights.h"
#include "core/ir/error.h"

namespace collage::stream_gemm_int8 {

namespace {

using detail::kWide;
using detail::TileOut;
using detail::TileSet;
using stream_gemm::EpilogueStep;

// Below this many multiply-adds one thread does the whole product: a team's fork and barriers
// cost more than they save.
constexpr int64_t kTeamWork = int64_t{1} << 20;

void team_barrier() {
#pragma omp barrier
}

const TileSet& tiles_of(Int8Path path) {
  return path == Int8Path::Avx512Vnni ? detail::vnni_tiles() : detail::avx2_tiles();
}

// The instruction-set cap is read once per process, so the usable paths are too.
const std::vector<Int8Path>& cached_usable_paths() {
  static const std::vector<Int8Path> paths = usable_paths();
  return paths;
}

}  // namespace

std::vector<Int8Path> usable_paths() {
  std::vector<Int8Path> paths;
  if (cpu_isa_allows(IsaLevel::Avx512Vnni)) paths.push_back(Int8Path::Avx512Vnni);
  if (cpu_isa_allows(IsaLevel::Avx2)) paths.push_back(Int8Path::Avx2);
  return paths;
}

const char* path_name(Int8Path path) { return path == Int8Path::Avx512Vnni ? "avx512-vnni" : "avx2"; }

bool supported() { return cpu_isa_allows(IsaLevel::Avx2); }

const char* unsupported_reason() {
  if (supported()) return "";
  return cpu_isa_capped(IsaLevel::Avx2)
             ? "ONEDNN_MAX_CPU_ISA caps the instruction set below AVX2, which the int8 kernel needs"
             : "this CPU lacks AVX2 and FMA, which the int8 kernel needs";
}

ActivationScheme activation_scheme(Int8Path path) { return {tiles_of(path).levels, tiles_of(path).per_row}; }

ActivationQuant activation_quant(float lo, float hi, int levels) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  ActivationQuant q;
  q.scale = hi > lo ? (hi - lo) / static_cast<float>(levels) : 1.0f;
  q.zero_point = static_cast<int32_t>(std::clamp<long>(std::lround(-lo / q.scale), 0, levels));
  return q;
}

PackedInt8Weights pack_int8_weights(const int8_t* q, const float* scale, int64_t k, int64_t n) {
  if (k <= 0 || n <= 0 || k > kMaxK)
    throw Error(ErrorKind::Unsupported, "stream-gemm-int8: the inner dimension must be in [1, " +
                                            std::to_string(kMaxK) + "], not " + std::to_string(k));
  PackedInt8Weights out;
  out.k = k;
  out.n = n;
  out.quads = (k + 3) / 4;
  out.panels = (n + kPanel - 1) / kPanel;
  out.data = std::make_unique<Storage>(static_cast<size_t>(out.panels * out.quads * 64), Storage::Fill::Zero);
  out.scale.assign(static_cast<size_t>(out.panels * kPanel), 0.0f);
  out.column_sum.assign(static_cast<size_t>(out.panels * kPanel), 0);
  auto* data = reinterpret_cast<int8_t*>(out.data->data());
  for (int64_t col = 0; col < n; ++col) {
    const int64_t j = col / kPanel, lane = col % kPanel;
    int8_t* panel = data + j * out.quads * 64;
    int32_t sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const int8_t v = q[p * n + col];
      if (v > kWeightLevels || v < -kWeightLevels)
        throw Error(ErrorKind::Unsupported,
                    "stream-gemm-int8: a weight of " + std::to_string(v) +
                        " is outside the 7-bit range [-63, 63] the kernel sums exactly");
      panel[(p / 4) * 64 + lane * 4 + p % 4] = v;
      sum += v;
    }
    out.column_sum[static_cast<size_t>(col)] = sum;
    out.scale[static_cast<size_t>(col)] = scale[col];
  }
  return out;
}

void gemm(const float* a, int64_t m, int64_t lda, const PackedInt8Weights& w, float* c, int64_t ldc,
          const std::vector<EpilogueStep>& epilogue, int threads) {
  const std::vector<Int8Path>& paths = cached_usable_paths();
  if (paths.empty())
    throw Error(ErrorKind::Unsupported, std::string("stream-gemm-int8: ") + unsupported_reason());
  gemm_on(paths.front(), a, m, lda, w, c, ldc, epilogue, threads);
}

void gemm_on(Int8Path path, const float* a, int64_t m, int64_t lda, const PackedInt8Weights& w, float* c,
             int64_t ldc, const std::vector<EpilogueStep>& epilogue, int threads) {
  const std::vector<Int8Path>& paths = cached_usable_paths();
  if (std::find(paths.begin(), paths.end(), path) == paths.end())
    throw Error(
        ErrorKind::Unsupported,
        std::string("stream-gemm-int8: this CPU or the cap does not allow the ") + path_name(path) + " path");
  if (m <= 0 || w.n <= 0) return;
  const TileSet& set = tiles_of(path);
  const int64_t rows = set.rows;
  const int64_t k = w.k, n = w.n, ldq = w.quads * 4, padded = w.panels * kPanel;
  // Kept per thread: a fresh buffer each call costs page faults (and an mmap past 128 KiB).
  static thread_local std::unique_ptr<Storage> quantized;
  static thread_local std::vector<float> scale, bias;
  static thread_local std::vector<int32_t> correction;
  static thread_local std::vector<float> row_scale;  // per-row quantization: each row's scale and zero point
  static thread_local std::vector<int32_t> row_zp;
  if (!quantized || quantized->capacity() < static_cast<size_t>(m * ldq))
    quantized = std::make_unique<Storage>(static_cast<size_t>(m * ldq), Storage::Fill::None);
  scale.resize(static_cast<size_t>(padded));
  bias.resize(static_cast<size_t>(padded));
  correction.resize(static_cast<size_t>(padded));
  if (set.per_row) {
    row_scale.resize(static_cast<size_t>(m));
    row_zp.resize(static_cast<size_t>(m));
  }
  // The calling thread's buffers by pointer: inside the team, the names would be each thread's own.
  uint8_t* qa = reinterpret_cast<uint8_t*>(quantized->data());
  float *scale_of = scale.data(), *bias_of = bias.data();
  int32_t* correction_of = correction.data();
  float* row_scale_of = row_scale.data();
  int32_t* row_zp_of = row_zp.data();

  // Into the tile's store: the leading adds (bias rows, at most one residual), an activation after
  // them, a residual after that. What follows runs over each tile after it.
  using Kind = EpilogueStep::Kind;
  const EpilogueStep *rest = epilogue.data(), *last = epilogue.data() + epilogue.size();
  const EpilogueStep *residual = nullptr, *residual_after = nullptr;
  std::optional<Kind> activation;
  for (; rest != last; ++rest) {
    if (rest->kind == Kind::AddFull && !residual)
      residual = rest;
    else if (rest->kind != Kind::AddRow)  // bias rows are summed into the per-column bias
      break;
  }
  const EpilogueStep* leading_end = rest;
  if (rest != last &&
      (rest->kind == Kind::Relu || rest->kind == Kind::GeluErf || rest->kind == Kind::GeluTanh))
    activation = (rest++)->kind;
  if (activation && rest != last && rest->kind == Kind::AddFull) residual_after = rest++;

  const int64_t groups = (w.panels + kWide - 1) / kWide, blocks = (m + rows - 1) / rows;
  const int64_t teams = m * k * n < kTeamWork ? 1 : std::max<int64_t>(1, std::min<int64_t>(threads, groups));
  std::vector<float> lows(static_cast<size_t>(teams)), highs(static_cast<size_t>(teams));
  std::vector<char> bad(static_cast<size_t>(teams));
  bool finite = true;

  // Groups [g0, g1) of panels against every row block, given the team's quantization (null: each
  // row's own, which the tiles apply).
  auto multiply = [&](int64_t g0, int64_t g1, const ActivationQuant* aq) {
    const int64_t c0 = std::min(padded, g0 * kWide * kPanel), c1 = std::min(padded, g1 * kWide * kPanel);
    for (int64_t j = c0; j < c1; ++j) {
      const size_t i = static_cast<size_t>(j);
      scale_of[i] = aq ? aq->scale * w.scale[i] : w.scale[i];
      correction_of[i] = aq ? aq->zero_point * w.column_sum[i] : w.column_sum[i];
      float b = 0;
      if (j < n)
        for (const EpilogueStep* step = epilogue.data(); step != leading_end; ++step)
          if (step->kind == Kind::AddRow) b += step->operand[j];
      bias_of[i] = b;
    }
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t p0 = g * kWide, np = std::min<int64_t>(kWide, w.panels - p0);
      const int64_t j0 = p0 * kPanel, cols = std::min(np * kPanel, n - j0);
      TileOut out;
      out.correction = correction_of + j0;
      out.scale = scale_of + j0;
      out.bias = bias_of + j0;
      out.last_cols = static_cast<int>(cols - (np - 1) * kPanel);
      out.activation = activation;
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t r0 = b * rows;
        const int rows_here = static_cast<int>(std::min<int64_t>(rows, m - r0));
        if (!aq) {
          out.row_scale = row_scale_of + r0;
          out.row_zp = row_zp_of + r0;
        }
        if (residual) {
          out.add = residual->operand + r0 * residual->ld + j0;
          out.ld_add = residual->ld;
        }
        if (residual_after) {
          out.add_after = residual_after->operand + r0 * residual_after->ld + j0;
          out.ld_after = residual_after->ld;
        }
        set.tile(np, rows_here, qa + r0 * ldq, ldq, w.panel(p0), w.quads * 64, w.quads, c + r0 * ldc + j0,
                 ldc, out);
        if (rest != last) stream_gemm::apply_epilogue(rest, last, c, ldc, r0, rows_here, j0, cols);
      }
    }
  };
  // The team's work by thread t of nt: rows for the range and the quantization, panel groups for
  // the product.
  auto work = [&](int64_t t, int64_t nt, auto barrier) {
    const ActivationScheme scheme = activation_scheme(path);
    if (scheme.per_row) {
      for (int64_t r = t * m / nt; r < (t + 1) * m / nt; ++r) {
        float lo = 0, hi = 0;
        set.range(a, lda, k, r, r + 1, lo, hi);
        if (!std::isfinite(lo) || !std::isfinite(hi)) {
          bad[static_cast<size_t>(t)] = 1;
          break;
        }
        const ActivationQuant aq = activation_quant(lo, hi, scheme.levels);
        row_scale_of[r] = aq.scale;
        row_zp_of[r] = aq.zero_point;
        set.quantize(a, lda, k, r, r + 1, aq.scale, aq.zero_point, qa, ldq);
      }
      barrier();
      if (std::find(bad.begin(), bad.end(), 1) != bad.end()) {
        if (t == 0) finite = false;
        return;
      }
      multiply(t * groups / nt, (t + 1) * groups / nt, nullptr);
      return;
    }
    float lo = 0, hi = 0;
    set.range(a, lda, k, t * m / nt, (t + 1) * m / nt, lo, hi);
    lows[static_cast<size_t>(t)] = lo;
    highs[static_cast<size_t>(t)] = hi;
    barrier();
    for (int64_t i = 0; i < nt; ++i) {  // min_element would step over a NaN
      const float l = lows[static_cast<size_t>(i)], h = highs[static_cast<size_t>(i)];
      if (!std::isfinite(l) || !std::isfinite(h)) {
        if (t == 0) finite = false;
        return;
      }
      lo = std::min(lo, l);
      hi = std::max(hi, h);
    }
    const ActivationQuant aq = activation_quant(lo, hi, scheme.levels);
    set.quantize(a, lda, k, t * m / nt, (t + 1) * m / nt, aq.scale, aq.zero_point, qa, ldq);
    barrier();
    multiply(t * groups / nt, (t + 1) * groups / nt, &aq);
  };
  if (teams == 1) {
    work(0, 1, [] {});
  } else {
#pragma omp parallel num_threads(static_cast <int>(teams))
    work(omp_get_thread_num(), omp_get_num_threads(), team_barrier);
  }
  if (!finite)
    throw Error(ErrorKind::InvalidInput,
                "stream-gemm-int8: the activations hold a non-finite value, which int8 cannot represent");
}

}  // namespace collage::stream_gemm_int8
