#include "backends/onednn/onednn_attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

#include "backends/native/fast_math_avx2.h"
#include "backends/native/fast_math_avx512.h"
#include "backends/onednn/onednn_common.h"

namespace collage::onednn {

using dnnl::memory;
using dt = memory::data_type;

// ---- one scores row: softmax(scale * x + mask) in place ----------------------------------------
// scale * x + mask is formed twice (for the max, then for the exponentials) rather than stored in
// between: a row is in L1, and the store cost more than the recomputation.
namespace {

COLLAGE_AVX512F inline float lanes_max(__m512 v) {  // GCC 12's _mm512_reduce_* warn inside their own code
  const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(q, _mm_shuffle_ps(q, q, 1)));
}
COLLAGE_AVX512F inline float lanes_sum(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}

// Lambdas do not inherit a target attribute: these helpers carry it.
COLLAGE_AVX512F inline __m512 logits16(const float* x, const float* mask, __m512 sc, __mmask16 m, int64_t j) {
  const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), sc);
  return mask ? _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, mask + j)) : v;
}
COLLAGE_AVX2 inline __m256 logits8(const float* x, const float* mask, __m256 sc, int64_t j) {
  const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + j), sc);
  return mask ? _mm256_add_ps(v, _mm256_loadu_ps(mask + j)) : v;
}

}  // namespace

COLLAGE_AVX512F void softmax_row_avx512(float* x, int64_t n, float scale, const float* mask) {
  const __m512 sc = _mm512_set1_ps(scale);
  auto lanes = [n](int64_t j) { return static_cast<__mmask16>(n - j >= 16 ? 0xffff : (1u << (n - j)) - 1); };
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n; j += 16)
    mx = _mm512_mask_max_ps(mx, lanes(j), mx, logits16(x, mask, sc, lanes(j), j));
  const __m512 top = _mm512_set1_ps(lanes_max(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = lanes(j);
    const __m512 e = native::exp16(_mm512_sub_ps(logits16(x, mask, sc, m, j), top));
    _mm512_mask_storeu_ps(x + j, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / lanes_sum(sum));
  for (int64_t j = 0; j < n; j += 16)
    _mm512_mask_storeu_ps(x + j, lanes(j), _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes(j), x + j), inv));
}

COLLAGE_AVX2 void softmax_row_avx2(float* x, int64_t n, float scale, const float* mask) {
  const __m256 sc = _mm256_set1_ps(scale);
  auto logit = [&](int64_t t) { return x[t] * scale + (mask ? mask[t] : 0.0f); };
  const int64_t full = n & ~int64_t{7};
  __m256 mx8 = _mm256_set1_ps(-INFINITY);
  for (int64_t j = 0; j < full; j += 8) mx8 = _mm256_max_ps(mx8, logits8(x, mask, sc, j));
  float lanes[8];
  _mm256_storeu_ps(lanes, mx8);
  float mx = *std::max_element(lanes, lanes + 8);
  for (int64_t t = full; t < n; ++t) mx = std::max(mx, logit(t));
  const __m256 top = _mm256_set1_ps(mx);
  __m256 sum8 = _mm256_setzero_ps();
  for (int64_t j = 0; j < full; j += 8) {
    const __m256 e = native::exp8(_mm256_sub_ps(logits8(x, mask, sc, j), top));
    _mm256_storeu_ps(x + j, e);
    sum8 = _mm256_add_ps(sum8, e);
  }
  _mm256_storeu_ps(lanes, sum8);
  float sum = 0;
  for (float v : lanes) sum += v;
  for (int64_t t = full; t < n; ++t) sum += x[t] = std::exp(logit(t) - mx);
  const float inv = 1.0f / sum;
  const __m256 inv8 = _mm256_set1_ps(inv);
  for (int64_t j = 0; j < full; j += 8) _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), inv8));
  for (int64_t t = full; t < n; ++t) x[t] *= inv;
}

void softmax_row_portable(float* x, int64_t n, float scale, const float* mask) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j] = x[j] * scale + (mask ? mask[j] : 0.0f));
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += x[j] = std::exp(x[j] - mx);
  for (int64_t j = 0; j < n; ++j) x[j] /= sum;
}

namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "onednn: " + why); }

using SoftmaxRow = void (*)(float*, int64_t, float, const float*);
SoftmaxRow best_softmax_row() {
  if (cpu_isa_allows(IsaLevel::Avx512)) return softmax_row_avx512;
  if (native::avx2_fma()) return softmax_row_avx2;
  return softmax_row_portable;
}

// ---- the kernel ---------------------------------------------------------------------------------
// An operand padded with leading 1s to `rank`, at its strides. oneDNN's gemm-based matmul takes any
// strides but zero ones, so a dim of size 1 gets the stride a dense layout would give it.
memory::desc strided(const Shape& shape, const std::vector<int64_t>& strides, size_t rank) {
  if (shape.size() > rank) refuse("attention operand of higher rank than the scores");
  memory::dims dims(rank - shape.size(), 1), st(rank - shape.size(), 1);
  dims.insert(dims.end(), shape.begin(), shape.end());
  st.insert(st.end(), strides.begin(), strides.end());
  for (size_t i = rank; i-- > 0;)
    if (dims[i] == 1 || st[i] == 0) st[i] = i + 1 < rank ? st[i + 1] * dims[i + 1] : 1;
  return memory::desc(dims, dt::f32, st);
}

// A tensor the kernel reads: a runtime input or a constant it keeps, at an element offset.
struct Source {
  int input = -1;
  std::optional<Tensor> constant;
  int64_t offset = 0;
  const float* data(KernelInputs inputs) const {
    return (constant ? *constant : *inputs[static_cast<size_t>(input)]).data<float>() + offset;
  }
};

Source source_of(const Graph& g, const SubGraph& sub, ValueId v, int64_t offset) {
  Source s;
  s.offset = offset;
  auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
  if (it != sub.inputs.end())
    s.input = static_cast<int>(it - sub.inputs.begin());
  else if (g.value(v).constant)
    s.constant = *g.value(v).constant;
  else
    refuse("attention operand '" + g.value(v).name + "' is neither an input nor a constant");
  return s;
}

// A product operand read in place through its strides. (Copying Q, K and V to dense layouts, which
// oneDNN 2.6's brgemm matmul takes where its gemm takes the strided views, cost more than the ~15%
// brgemm gains on ViT's 197x64x197 heads.)
struct Operand {
  Source src;
  memory mem;
};

Operand operand(const Graph& g, const SubGraph& sub, const AttentionOperand& o, size_t rank) {
  return {source_of(g, sub, o.value, o.offset),
          memory(strided(o.shape, o.strides, rank), cpu(), DNNL_MEMORY_NONE)};
}

// scores = Q K^T over all heads by one matmul, softmax(scale * scores + mask) by rows in parallel,
// context = P V by a second matmul written through the strides of the Transpose after the block.
// (One head at a time per thread, scores kept in L2, ran slower: oneDNN 2.6's gemm on one
// 197x64x197 head is far below its batched rate.)
class AttentionKernel : public Kernel {
 public:
  AttentionKernel(const Graph& g, const SubGraph& sub, const AttentionBlock& b)
      : out_shape_(g.value(sub.outputs.at(0)).shape), scale_(b.scale), softmax_row_(best_softmax_row()) {
    const Shape& scores = g.value(g.node(b.qk).outputs[0]).shape;
    const size_t rank = scores.size();
    sq_ = scores[rank - 2];
    sk_ = scores[rank - 1];
    heads_ = shape_size(scores) / std::max<int64_t>(sq_ * sk_, 1);
    ctx_ = g.value(g.node(b.pv).outputs[0]).shape;
    if (ctx_.size() != rank) refuse("attention output rank differs from the scores'");
    out_strides_ = b.context_strides;
    if (b.mask != kNoValue || b.mask_constant) {
      const Shape m = b.mask_constant ? b.mask_constant->shape() : g.value(b.mask).shape;
      if (m.size() > rank) refuse("mask of higher rank than the scores");
      Shape padded(rank - m.size(), 1);
      padded.insert(padded.end(), m.begin(), m.end());
      for (size_t d = 0; d < rank; ++d)
        if (padded[d] != 1 && padded[d] != scores[d]) refuse("mask does not broadcast to the scores");
      if (padded[rank - 1] != sk_) refuse("mask broadcast along the scores' rows");
      std::vector<int64_t> ms = row_major_strides(padded);
      for (size_t d = 0; d < rank; ++d)
        if (padded[d] == 1) ms[d] = 0;
      mask_row_stride_ = ms[rank - 2];
      // Each head's offset into the mask.
      Shape batch(scores.begin(), scores.end() - 2);
      std::vector<int64_t> idx(batch.size(), 0);
      for (int64_t h = 0; h < heads_; ++h) {
        int64_t off = 0;
        for (size_t d = 0; d < batch.size(); ++d) off += idx[d] * ms[d];
        mask_offsets_.push_back(off);
        for (size_t d = batch.size(); d-- > 0;) {
          if (++idx[d] < batch[d]) break;
          idx[d] = 0;
        }
      }
      if (b.mask_constant) {
        mask_.emplace();
        mask_->constant = *b.mask_constant;
      } else {
        mask_ = source_of(g, sub, b.mask, 0);
      }
    }
    q_ = operand(g, sub, b.q, rank);
    k_ = operand(g, sub, b.k, rank);
    v_ = operand(g, sub, b.v, rank);
    const memory::desc s_md = plain(scores), ctx_md = strided(ctx_, out_strides_, rank);
    dnnl::matmul::primitive_desc qk_pd(dnnl::matmul::desc(q_.mem.get_desc(), k_.mem.get_desc(), s_md), cpu());
    dnnl::matmul::primitive_desc pv_pd(dnnl::matmul::desc(s_md, v_.mem.get_desc(), ctx_md), cpu());
    if (qk_pd.src_desc() != q_.mem.get_desc() || qk_pd.weights_desc() != k_.mem.get_desc() ||
        pv_pd.weights_desc() != v_.mem.get_desc())
      refuse("matmul wants its operands reordered");
    qk_ = dnnl::matmul(qk_pd);
    pv_ = dnnl::matmul(pv_pd);
    // Kept between runs: a scratch tensor from the run's allocator would be freed, not recycled,
    // and a fresh block costs page faults every run.
    scores_ = memory(s_md, cpu());
    ctx_mem_ = memory(ctx_md, cpu(), DNNL_MEMORY_NONE);
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    std::lock_guard<std::mutex> lock(
        mutex_);  // the scores buffer and the memories' handles are this kernel's
    dnnl::stream stream(cpu());
    for (Operand* o : {&q_, &k_, &v_}) o->mem.set_data_handle(const_cast<float*>(o->src.data(inputs)));
    qk_.execute(stream, {{DNNL_ARG_SRC, q_.mem}, {DNNL_ARG_WEIGHTS, k_.mem}, {DNNL_ARG_DST, scores_}});
    stream.wait();
    auto* s = static_cast<float*>(scores_.get_data_handle());
    const float* mask = mask_ ? mask_->data(inputs) : nullptr;
    const int64_t rows = heads_ * sq_;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* m = nullptr;
      if (mask) m = mask + mask_offsets_[static_cast<size_t>(r / sq_)] + (r % sq_) * mask_row_stride_;
      softmax_row_(s + r * sk_, sk_, scale_, m);
    }
    ctx_mem_.set_data_handle(y.raw());
    pv_.execute(stream, {{DNNL_ARG_SRC, scores_}, {DNNL_ARG_WEIGHTS, v_.mem}, {DNNL_ARG_DST, ctx_mem_}});
    stream.wait();
    return {y};
  }

 private:
  Shape out_shape_, ctx_;
  std::vector<int64_t> out_strides_;
  float scale_;
  SoftmaxRow softmax_row_;
  int64_t sq_ = 0, sk_ = 0, heads_ = 0, mask_row_stride_ = 0;
  std::vector<int64_t> mask_offsets_;
  dnnl::matmul qk_, pv_;
  Operand q_, k_, v_;
  std::optional<Source> mask_;
  memory scores_, ctx_mem_;
  std::mutex mutex_;
};

}  // namespace

std::unique_ptr<Kernel> compile_attention(const Graph& g, const SubGraph& sub, const AttentionBlock& b) {
  try {
    return std::make_unique<AttentionKernel>(g, sub, b);
  } catch (const dnnl::error& e) {
    refuse(std::string("attention primitive creation failed: ") + e.what());
  }
}

}  // namespace collage::onednn
