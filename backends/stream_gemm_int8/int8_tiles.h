// The instruction-set parts of stream-gemm-int8's product, which int8_gemm.cc drives: the range and
// quantization of the activations and the micro-tiles that multiply them with the packed weights
// and store the epilogue's leading steps. The sums are exact on both (VNNI's vpdpbusd; AVX2's
// vpmaddubsw, exact because |w| <= 63 and activations <= 127, then vpmaddwd); the paths differ in the
// activations' levels (int8_gemm.h). Call a set only where its CPU test allows it.
#pragma once

#include <cstdint>
#include <optional>

#include "backends/stream_gemm/packed_gemm.h"
#include "backends/stream_gemm_int8/int8_gemm.h"

namespace collage::stream_gemm_int8::detail {

constexpr int kWide = 4;  // panels per group: the driver's unit of work, at most one tile wide

// What a tile's int32 sums become, per column: y = (sum - correction) * scale + bias, plus a
// residual (add), then an activation, then another residual (add_after); null: none.
struct TileOut {
  const int32_t* correction = nullptr;  // zero point * the column's weight sum
  const float* scale = nullptr;         // activation scale * the column's weight scale
  const float* bias = nullptr;
  const float* add = nullptr;
  int64_t ld_add = 0;
  std::optional<stream_gemm::EpilogueStep::Kind> activation;  // Relu, GeluErf or GeluTanh
  const float* add_after = nullptr;
  int64_t ld_after = 0;
  int last_cols = static_cast<int>(kPanel);  // the valid columns of the tile's last panel, 1..16
  // Per-row quantization (TileSet::per_row): the tile's rows' activation scales and zero points;
  // then `scale` holds the weights' scales alone and `correction` the column sums. Null: per tensor.
  const float* row_scale = nullptr;
  const int32_t* row_zp = nullptr;
};

struct TileSet {
  int rows;      // rows per micro-tile
  int levels;    // the activations' quantized range is [0, levels]
  bool per_row;  // each row its own range (the tiles take TileOut's row arrays); else one per call
  // Min and max of rows [r0, r1) of A (k columns) folded into lo and hi; both NaN if a value is NaN.
  void (*range)(const float* a, int64_t lda, int64_t k, int64_t r0, int64_t r1, float& lo, float& hi);
  // Rows [r0, r1) of A quantized into q (leading dim ldq, zero past k): clamp(round_half_even(x /
  // scale) + zp, 0, levels). The quotient, not x * (1 / scale), rounds as ONNX Runtime's does.
  void (*quantize)(const float* a, int64_t lda, int64_t k, int64_t r0, int64_t r1, float scale, int32_t zp,
                   uint8_t* q, int64_t ldq);
  // C's `rows` (1..rows) x np panels (1..kWide) from Aq (leading dim lda) and the panels (panel
  // q + 1 starts `stride` bytes after panel q), `quads` k quads; then t's steps as it stores.
  void (*tile)(int64_t np, int rows, const uint8_t* a, int64_t lda, const int8_t* w, int64_t stride,
               int64_t quads, float* c, int64_t ldc, const TileOut& t);
};

const TileSet& vnni_tiles();
const TileSet& avx2_tiles();

}  // namespace collage::stream_gemm_int8::detail
