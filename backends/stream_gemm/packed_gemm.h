// A GEMM for weight-streaming products: C[m x n] = A[m x k] * W[k x n] with W a constant
// packed once into 16-column panels (each k x 16 floats, contiguous, zero-padded past n),
// so the whole of W is one sequential stream. Made first for small m (a transformer at a short
// sequence, a decoder step), where every request reads the weights from DRAM: while one
// panel is multiplied (from L2, once per 6-row block of A), the next panel is prefetched,
// spread evenly over the row blocks, so the stream overlaps the FMAs instead of stalling
// them. AVX2 + FMA micro-kernel (6 x 16 tile, 12 accumulators), or AVX-512 (6 x 32) where the
// CPU has it; `supported()` says whether it has AVX2 and FMA. Any m: rows are taken in chunks whose packed
// copy fits in L2, and each chunk streams every panel (for large m the panels come from L3, and the product
// is compute-bound).
//
// Invariants: a PackedWeights is immutable after pack_weights; panels are 64-byte aligned,
// so one k step of a panel is one cache line.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/ir/tensor.h"

namespace collage::stream_gemm {

constexpr int64_t kPanel = 16;  // columns per panel: two AVX2 registers

struct PackedWeights {
  int64_t k = 0, n = 0, panels = 0;
  std::unique_ptr<Storage> data;  // panels * k * kPanel floats (on huge pages where granted)
  const float* panel(int64_t j) const {
    return reinterpret_cast<const float*>(data->data()) + j * k * kPanel;
  }
};

// W given row-major [k x n] with leading dim ldw, or (transposed) as [n x k] rows (Gemm transB).
PackedWeights pack_weights(const float* w, int64_t k, int64_t n, int64_t ldw, bool transposed);

// One element-wise step applied to the output while it is hot, in order.
struct EpilogueStep {
  enum class Kind { AddRow, AddFull, Relu, GeluErf, GeluTanh } kind = Kind::Relu;
  const float* operand = nullptr;  // AddRow: n floats; AddFull: m x n floats, leading dim ld
  int64_t ld = 0;
};

bool supported();  // AVX2 and FMA on this CPU

// The micro-kernel's instruction set: AVX2 (6 x 16 tiles) or AVX-512 (6 x 32 over two panels;
// the same packed weights). Where a CPU runs 512-bit FMAs at full width the AVX2 kernel reaches
// half its peak.
enum class Isa { Avx2, Avx512 };
std::vector<Isa> isas();  // those this CPU runs, narrowest first (empty: unsupported())
Isa best_isa();           // the widest of them (AVX2 where unsupported(): nothing runs)

// Epilogue steps [first, last) over rows [r0, r0 + rows) and columns [j0, j0 + cols) of C, in
// place (call it while that part of C is hot in cache).
void apply_epilogue(const EpilogueStep* first, const EpilogueStep* last, float* c, int64_t ldc, int64_t r0,
                    int64_t rows, int64_t j0, int64_t cols);
// An activation step (Relu, GeluErf or GeluTanh) over n floats in place, as the epilogue applies it;
// on up to `threads` OpenMP threads where n is large enough to share.
void activate(EpilogueStep::Kind kind, float* y, int64_t n, int threads = 1);

// C = epilogue(A * W), or with `accumulate` C = epilogue(C + A * W); A row-major with leading dim
// lda, C with ldc (an AddFull operand must not be C itself: accumulate instead). Per chunk of
// rows, `threads` OpenMP threads pack A's rows together into the calling thread's buffer (at most
// max(160K, 6k) floats, kept between calls), then split the panels (each thread streams its own
// contiguous run). An `isa` this CPU lacks runs as AVX2.
void gemm(const float* a, int64_t m, int64_t lda, const PackedWeights& w, float* c, int64_t ldc,
          const std::vector<EpilogueStep>& epilogue, int threads, bool accumulate = false,
          Isa isa = best_isa());

}  // namespace collage::stream_gemm
