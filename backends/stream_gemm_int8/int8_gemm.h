// The int8 GEMM of stream-gemm-int8: C[m x n] = epilogue(dequantize(Aq[m x k] * Wq[k x n])), the
// activations quantized per tensor (u8, asymmetric, the range taken from this call's A and always
// holding 0, as ONNX Runtime's DynamicQuantizeLinear), the weights per column (s8, the shared 7-bit
// ones of core/backend_api/int8_weights.h, packed once). The products accumulate exactly in int32,
// on one of two paths (int8_tiles.h): AVX512-VNNI (vpdpbusd: 64 u8 x s8 multiply-adds per
// instruction; micro-tiles of 6 rows by 4 panels) or AVX2 (vpmaddubsw, whose 16-bit pair sums
// cannot saturate with 7-bit weights and activations, two of them added in 16 bits, then vpmaddwd
// into int32; micro-tiles of 3 rows by one panel). The zero point is taken out in int32, then each column is
// scaled once.
//
// Layout: Wq in 16-column panels, each k/4 "quads" of 64 bytes (per column its 4 consecutive k
// values), so one aligned load feeds one vpdpbusd (or two vpmaddubsw); zero-padded past k and n.
//
// Invariants: a PackedInt8Weights is immutable after pack_int8_weights; |q| <= 63 and k <= kMaxK,
// so no int32 sum can overflow (255 * 63 * kMaxK < 2^31) and no AVX2 pair sum saturates.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/stream_gemm/packed_gemm.h"
#include "core/ir/tensor.h"

namespace collage::stream_gemm_int8 {

constexpr int64_t kPanel = 16;
constexpr int64_t kMaxK = 1 << 17;

struct PackedInt8Weights {
  int64_t k = 0, n = 0, quads = 0, panels = 0;  // quads = ceil(k / 4)
  std::unique_ptr<Storage> data;                // panels * quads * 64 bytes
  std::vector<float> scale;                     // per column (panels * 16, zero past n)
  std::vector<int32_t> column_sum;              // per column: the sum of its quantized weights
  const int8_t* panel(int64_t j) const {
    return reinterpret_cast<const int8_t*>(data->data()) + j * quads * 64;
  }
};

// `q`: [k, n] row-major int8 with |q| <= 63 (kWeightLevels); `scale`: n per-column scales.
// k <= kMaxK. Throws Error(Unsupported) otherwise.
PackedInt8Weights pack_int8_weights(const int8_t* q, const float* scale, int64_t k, int64_t n);

// Whether this CPU runs the kernel (AVX2 and FMA, allowed by the cap), and if not, why.
bool supported();
const char* unsupported_reason();

// The code paths this CPU and the cap allow, fastest first; gemm runs the first.
enum class Int8Path { Avx512Vnni, Avx2 };
std::vector<Int8Path> usable_paths();
const char* path_name(Int8Path path);

// As stream_gemm::gemm: A row-major fp32 with leading dim lda, C with ldc (an AddFull operand must
// not be C); `threads` OpenMP threads quantize A together into the calling thread's buffer (kept
// between calls), then split the panels. Requires supported().
void gemm(const float* a, int64_t m, int64_t lda, const PackedInt8Weights& w, float* c, int64_t ldc,
          const std::vector<stream_gemm::EpilogueStep>& epilogue, int threads);
// The same on a given path, one of usable_paths() (tests hold the paths to the same integers).
void gemm_on(Int8Path path, const float* a, int64_t m, int64_t lda, const PackedInt8Weights& w, float* c,
             int64_t ldc, const std::vector<stream_gemm::EpilogueStep>& epilogue, int threads);

// The quantization gemm applies to A (exposed for tests): scale and zero point of [lo, hi]
// widened to hold 0 over `levels` steps, and q = clamp(round_half_even(x / scale) + zp, 0, levels).
// The VNNI path takes the range of all of A and 255 levels (u8, as DynamicQuantizeLinear, so the
// same integers as ONNX Runtime on a --qdq export). The AVX2 path takes each row's own range and 127
// levels (7 bits), so that two of its pair sums add exactly in 16 bits (4 * 127 * 63 < 2^15) and one
// vpmaddwd widens four products instead of two: a third fewer multiply instructions. Per row (per
// token) wins back the halved resolution where rows' ranges differ, as transformers' tokens do.
struct ActivationQuant {
  float scale = 1.0f;
  int32_t zero_point = 0;
};
struct ActivationScheme {
  int levels = 255;
  bool per_row = false;  // else per tensor
};
ActivationScheme activation_scheme(Int8Path path);
ActivationQuant activation_quant(float lo, float hi, int levels);

}  // namespace collage::stream_gemm_int8
