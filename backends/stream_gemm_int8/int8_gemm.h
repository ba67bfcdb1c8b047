// The int8 GEMM of stream-gemm-int8: C[m x n] = epilogue(dequantize(Aq[m x k] * Wq[k x n])), the
// activations quantized per tensor (u8, asymmetric, the range taken from this call's A and always
// holding 0, as ONNX Runtime's DynamicQuantizeLinear), the weights per column (s8, the shared 7-bit
// ones of core/backend_api/int8_weights.h, packed once). The products accumulate exactly in int32
// with AVX512-VNNI (vpdpbusd: 64 u8 x s8 multiply-adds per instruction, two a cycle on a core that
// runs it at full width); the zero point is taken out in int32, then each column is scaled once.
//
// Layout: Wq in 16-column panels, each k/4 "quads" of 64 bytes (per column its 4 consecutive k
// values), so one aligned load feeds one vpdpbusd; zero-padded past k and n. A micro-tile is 6 rows
// by 4 panels (24 accumulators); the partial last panel is stored through a mask.
//
// Invariants: a PackedInt8Weights is immutable after pack_int8_weights; |k| <= kMaxK, so no int32
// sum can overflow (255 * 63 * kMaxK < 2^31).
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

// `q`: [k, n] row-major int8 with |q| <= 127; `scale`: n per-column scales. k <= kMaxK.
PackedInt8Weights pack_int8_weights(const int8_t* q, const float* scale, int64_t k, int64_t n);

// Whether this CPU runs the kernel (AVX-512 F, BW and VNNI), and if not, why.
bool supported();
const char* unsupported_reason();

// As stream_gemm::gemm: A row-major fp32 with leading dim lda, C with ldc (an AddFull operand must
// not be C); `threads` OpenMP threads quantize A together into the calling thread's buffer (kept
// between calls), then split the panels. Requires supported().
void gemm(const float* a, int64_t m, int64_t lda, const PackedInt8Weights& w, float* c, int64_t ldc,
          const std::vector<stream_gemm::EpilogueStep>& epilogue, int threads);

// The quantization gemm applies to A (exposed for tests): scale and zero point of [lo, hi]
// widened to hold 0, and q = clamp(round_half_even(x / scale) + zp, 0, 255).
struct ActivationQuant {
  float scale = 1.0f;
  int32_t zero_point = 0;
};
ActivationQuant activation_quant(float lo, float hi);

}  // namespace collage::stream_gemm_int8
