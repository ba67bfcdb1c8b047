// Native fused transformer kernels (core/backend_api/transformer_fusion.h finds the blocks):
//  * layer normalisation (the node or the decomposed chain, optionally after a
//    residual Add): one pass per row for the sums, one for the output, no temporaries;
//  * GELU (erf or tanh), optionally after a bias Add and a MatMul: one pass;
//  * the attention core: per batch*head, scores = scale * Q K^T with OpenBLAS sgemm
//    into a row block, mask and softmax in place (eight lanes at a time with AVX2), times V with sgemm
//    straight into the output (whose Transpose/Reshape is just the sgemm's leading dimension). OpenBLAS
//    because it is already linked (backends/blas) and its packed micro-kernels beat any loop we would keep
//    here by several times at 128x128x64; operand Transposes become sgemm transpose flags and leading dims.
#include "backends/native/transformer_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/native/fast_math.h"
#include "backends/native/fast_math_avx2.h"
#include "backends/native/fast_math_avx512.h"
#include "backends/native/kernel_util.h"
#include "backends/native/native_kernel.h"
#include "core/backend_api/transformer_fusion.h"

namespace collage::native {

namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "native: " + why); }

// Where a kernel operand comes from: a kernel input (by index) or a constant.
struct Source {
  int input = -1;
  Tensor constant;
  const Tensor& get(KernelInputs inputs) const {
    return input >= 0 ? *inputs[static_cast<size_t>(input)] : constant;
  }
};

Source source_of(const Graph& g, const SubGraph& sub, ValueId v) {
  Source s;
  if (g.value(v).constant) {
    s.constant = *g.value(v).constant;
    return s;
  }
  auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
  if (it == sub.inputs.end()) refuse("'" + g.value(v).name + "' is not an input of the group");
  s.input = static_cast<int>(it - sub.inputs.begin());
  return s;
}

// A constant broadcasting along the last axis, as `d` floats (`fill` when absent).
std::vector<float> row_of(const Graph& g, ValueId v, int64_t d, float fill) {
  std::vector<float> out(static_cast<size_t>(d), fill);
  if (v == kNoValue) return out;
  const Tensor& t = *g.value(v).constant;
  const float* p = t.data<float>();
  for (int64_t i = 0; i < d; ++i) out[static_cast<size_t>(i)] = t.size() == 1 ? p[0] : p[i];
  return out;
}

// ---- layer normalisation ----------------------------------------------------------------
class LayerNormKernel : public Kernel {
 public:
  LayerNormKernel(const Graph& g, const SubGraph& sub, const LayerNormBlock& b) : eps_(b.epsilon) {
    shape_ = g.value(b.x).shape;
    d_ = shape_.back();
    if (d_ == 0) refuse("layer normalisation over an empty axis");
    rows_ = shape_size(shape_) / d_;
    gamma_ = row_of(g, b.gamma, d_, 1.0f);
    beta_ = row_of(g, b.beta, d_, 0.0f);
    if (b.residual != kNoNode) {
      a_ = source_of(g, sub, g.node(b.residual).inputs[0]);
      r_ = source_of(g, sub, g.node(b.residual).inputs[1]);
      residual_ = true;
    } else {
      a_ = source_of(g, sub, b.x);
    }
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, shape_);
    const float* a = a_.get(inputs).data<float>();
    const float* r = residual_ ? r_.get(inputs).data<float>() : nullptr;
    float* yp = y.data<float>();
    const float* gamma = gamma_.data();
    const float* beta = beta_.data();
    const int64_t d = d_;
    for (int64_t row = 0; row < rows_; ++row) {
      const float* x = a + row * d;
      float* out = yp + row * d;
      if (r) {  // the residual sum lands in the output row and is normalised there
        const float* rr = r + row * d;
        for (int64_t i = 0; i < d; ++i) out[i] = x[i] + rr[i];
        x = out;
      }
      // One pass: sums of (x - x0) and its square (shifted by the first element,
      // which keeps the variance exact for rows far from zero), 8 lanes for ILP.
      const float shift = x[0];
      float s[8] = {}, q[8] = {};
      int64_t i = 0;
      for (; i + 8 <= d; i += 8)
        for (int k = 0; k < 8; ++k) {
          float v = x[i + k] - shift;
          s[k] += v;
          q[k] += v * v;
        }
      for (; i < d; ++i) {
        float v = x[i] - shift;
        s[0] += v;
        q[0] += v * v;
      }
      double sum = 0, sq = 0;
      for (int k = 0; k < 8; ++k) sum += s[k], sq += q[k];
      double m = sum / static_cast<double>(d);
      double var = std::max(0.0, sq / static_cast<double>(d) - m * m);
      // x - mean as (x - shift) - m: exact for rows whose mean is large next to their spread.
      const float mean = static_cast<float>(m);
      const float inv = static_cast<float>(1.0 / std::sqrt(var + eps_));
      for (int64_t j = 0; j < d; ++j) out[j] = ((x[j] - shift) - mean) * inv * gamma[j] + beta[j];
    }
    return {y};
  }

 private:
  float eps_;
  Shape shape_;
  int64_t d_ = 1, rows_ = 0;
  std::vector<float> gamma_, beta_;
  Source a_, r_;
  bool residual_ = false;
};

// ---- GELU ---------------------------------------------------------------------------------
template <bool kTanh>
float gelu_scalar(float v) {
  if (kTanh) return 0.5f * v * (1.0f + fast_tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  return 0.5f * v * (1.0f + fast_erf(v * 0.7071067811865476f));
}

}  // namespace

void gelu_span(const float* x, const float* b, int64_t bstride, float* y, int64_t n, bool tanh) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] + (b ? b[i * bstride] : 0.0f);
    y[i] = tanh ? gelu_scalar<true>(v) : gelu_scalar<false>(v);
  }
}

COLLAGE_AVX2 void gelu_span_avx2(const float* x, const float* b, int64_t bstride, float* y, int64_t n,
                                 bool tanh) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    if (b) v = _mm256_add_ps(v, bstride ? _mm256_loadu_ps(b + i) : _mm256_set1_ps(b[0]));
    _mm256_storeu_ps(y + i, tanh ? gelu_tanh8(v) : gelu_erf8(v));
  }
  gelu_span(x + i, b ? b + i * bstride : nullptr, bstride, y + i, n - i, tanh);
}

COLLAGE_AVX512F void gelu_span_avx512(const float* x, const float* b, int64_t bstride, float* y, int64_t n,
                                      bool tanh) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    if (b) v = _mm512_add_ps(v, bstride ? _mm512_maskz_loadu_ps(m, b + i) : _mm512_set1_ps(b[0]));
    _mm512_mask_storeu_ps(y + i, m, tanh ? gelu_tanh16(v) : gelu_erf16(v));
  }
}

GeluSpan best_gelu_span() {
  if (cpu_isa_allows(IsaLevel::Avx512)) return gelu_span_avx512;
  if (avx2_fma()) return gelu_span_avx2;
  return gelu_span;
}

namespace {

class GeluKernel : public Kernel {
 public:
  GeluKernel(const Graph& g, const SubGraph& sub, const GeluBlock& b, int threads)
      : threads_(std::max(threads, 1)), tanh_(b.tanh) {
    shape_ = g.value(b.x).shape;
    d_ = shape_.empty() ? 1 : shape_.back();
    if (b.matmul != kNoNode) {
      mm_node_ = g.node(b.matmul);
      mm_ = make_node_kernel(mm_node_);
      for (ValueId v : mm_node_.inputs) mm_args_.push_back(source_of(g, sub, v));
    }
    if (!mm_) x_ = source_of(g, sub, b.bias_add != kNoNode ? b.h : b.x);
    if (b.bias_add != kNoNode) {
      has_bias_ = true;
      const Shape& bs = g.value(b.bias).shape;
      full_bias_ = bs == shape_ && shape_size(bs) != d_;
      if (!full_bias_ && g.value(b.bias).constant) {
        bias_row_ = row_of(g, b.bias, d_, 0.0f);
      } else {
        bias_ = source_of(g, sub, b.bias);
        bias_size_ = shape_size(bs);
      }
    }
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor h;
    const float* x;
    if (mm_) {  // the MatMul's result is ours: GELU overwrites it in place
      std::vector<const Tensor*> args;
      for (const Source& s : mm_args_) args.push_back(&s.get(inputs));
      h = mm_->run(args, alloc)[0];
      x = h.data<float>();
    } else {
      h = alloc.allocate(DType::Float32, shape_);
      x = x_.get(inputs).data<float>();
    }
    float* y = h.data<float>();
    const int64_t n = shape_size(shape_), d = d_;
    const float* bias = nullptr;
    if (has_bias_) bias = bias_row_.empty() ? bias_.get(inputs).data<float>() : bias_row_.data();
    // Rows of d against a bias row (constant, or a runtime one of d or one values), else one span.
    const bool rows = has_bias_ && !full_bias_;
    const int64_t bstride = rows && bias_row_.empty() && bias_size_ == 1 ? 0 : 1;
    const int64_t unit = rows ? d : 16;
    const int64_t units = (n + unit - 1) / unit;
    // Shared between the threads above 2^15 elements each (below, a second thread costs more than it saves).
    const int teams = static_cast<int>(std::clamp<int64_t>(n >> 15, 1, threads_));
    const int64_t per = (units + teams - 1) / teams;
#pragma omp parallel for num_threads(teams) if (teams > 1)
    for (int t = 0; t < teams; ++t) {
      const int64_t begin = std::min(n, t * per * unit), end = std::min(n, (t + 1) * per * unit);
      if (rows) {
        for (int64_t r = begin; r < end; r += d) apply(x + r, bias, y + r, d, bstride);
      } else if (begin < end) {
        apply(x + begin, bias ? bias + begin : nullptr, y + begin, end - begin, 1);
      }
    }
    return {h};
  }

 private:
  void apply(const float* x, const float* b, float* y, int64_t n, int64_t bstride) const {
    gelu_span_(x, b, bstride, y, n, tanh_);
  }

  GeluSpan gelu_span_ = best_gelu_span();
  int threads_ = 1;
  bool tanh_;
  Shape shape_;
  int64_t d_ = 1;
  Node mm_node_;
  std::unique_ptr<Kernel> mm_;
  std::vector<Source> mm_args_;
  Source x_, bias_;
  bool has_bias_ = false, full_bias_ = false;
  int64_t bias_size_ = 0;
  std::vector<float> bias_row_;
};

// ---- attention ----------------------------------------------------------------------------
// A rank-R logical view of a stored tensor: per-dim sizes and element strides.
struct View {
  Shape shape;
  std::vector<int64_t> strides;
};

View view_of(const AttentionOperand& o, size_t rank) {
  if (o.shape.size() > rank) refuse("attention operand of higher rank than the scores");
  View v;
  v.shape.assign(rank - o.shape.size(), 1);
  v.strides.assign(rank - o.shape.size(), 0);
  for (size_t i = 0; i < o.shape.size(); ++i) {
    v.shape.push_back(o.shape[i]);
    v.strides.push_back(o.shape[i] == 1 ? 0 : o.strides[i]);
  }
  return v;
}

// How sgemm reads the last two dims of a view: transposed or not, leading dim.
struct Mat {
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int ld = 1;
};
Mat mat_of(const View& v) {
  size_t r = v.shape.size();
  int64_t rows = v.shape[r - 2], cols = v.shape[r - 1], rs = v.strides[r - 2], cs = v.strides[r - 1];
  if (cols == 1 || cs == 1)
    return {CblasNoTrans, static_cast<int>(rows == 1 ? std::max<int64_t>(cols, 1) : rs)};
  if (rows == 1 || rs == 1) return {CblasTrans, static_cast<int>(cs)};
  refuse("attention operand with neither dim contiguous");
}

class AttentionKernel : public Kernel {
 public:
  AttentionKernel(const Graph& g, const SubGraph& sub, const AttentionBlock& b) : scale_(b.scale) {
    const Shape& scores = g.value(g.node(b.qk).outputs[0]).shape;
    rank_ = scores.size();
    batch_.assign(scores.begin(), scores.end() - 2);
    sq_ = scores[rank_ - 2];
    sk_ = scores[rank_ - 1];
    q_ = view_of(b.q, rank_);
    q_offset_ = b.q.offset;
    k_ = view_of(b.k, rank_);
    k_offset_ = b.k.offset;
    v_ = view_of(b.v, rank_);
    v_offset_ = b.v.offset;
    dh_ = q_.shape[rank_ - 1];
    ctx_ = g.value(g.node(b.pv).outputs[0]).shape;
    if (ctx_.size() != rank_) refuse("attention output rank differs from the scores'");
    dv_ = ctx_[rank_ - 1];
    if (q_.shape[rank_ - 2] != sq_ || k_.shape[rank_ - 2] != dh_ || k_.shape[rank_ - 1] != sk_ ||
        v_.shape[rank_ - 2] != sk_ || ctx_[rank_ - 2] != sq_)
      refuse("attention operand shapes do not chain");
    for (const View* v : {&q_, &k_, &v_})
      for (size_t d = 0; d + 2 < rank_; ++d)
        if (v->shape[d] != 1 && v->shape[d] != batch_[d]) refuse("attention batch dims do not broadcast");
    qm_ = mat_of(q_);
    km_ = mat_of(k_);
    vm_ = mat_of(v_);
    out_shape_ = g.value(sub.outputs[0]).shape;
    const std::vector<int64_t>& cs = b.context_strides;
    out_strides_ = cs;
    if (dv_ > 1 && cs[rank_ - 1] != 1) refuse("output Transpose moves the last axis");
    ldc_ = static_cast<int>(sq_ == 1 ? std::max<int64_t>(dv_, 1) : cs[rank_ - 2]);
    q_src_ = source_of(g, sub, b.q.value);
    k_src_ = source_of(g, sub, b.k.value);
    v_src_ = source_of(g, sub, b.v.value);
    if (b.mask != kNoValue || b.mask_constant) {
      if (b.mask_constant)
        mask_src_.constant = *b.mask_constant;
      else
        mask_src_ = source_of(g, sub, b.mask);
      const Shape ms = b.mask_constant ? b.mask_constant->shape() : g.value(b.mask).shape;
      if (ms.size() > rank_) refuse("mask of higher rank than the scores");
      Shape padded(rank_ - ms.size(), 1);
      padded.insert(padded.end(), ms.begin(), ms.end());
      for (size_t d = 0; d < rank_; ++d)
        if (padded[d] != 1 && padded[d] != scores[d]) refuse("mask does not broadcast to the scores");
      mask_strides_ = broadcast_strides(ms, scores);
      has_mask_ = true;
    }
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    Tensor scratch = alloc.allocate(DType::Float32, {sq_, sk_});
    const float* q = q_src_.get(inputs).data<float>() + q_offset_;
    const float* k = k_src_.get(inputs).data<float>() + k_offset_;
    const float* v = v_src_.get(inputs).data<float>() + v_offset_;
    const float* mask = has_mask_ ? mask_src_.get(inputs).data<float>() : nullptr;
    float* s = scratch.data<float>();
    float* out = y.data<float>();
    const int64_t batches = shape_size(batch_);
    const int M = static_cast<int>(sq_), N = static_cast<int>(sk_), Dh = static_cast<int>(dh_),
              Dv = static_cast<int>(dv_);
    std::vector<int64_t> idx(batch_.size(), 0);
    const bool avx2 = avx2_fma();
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t qo = 0, ko = 0, vo = 0, oo = 0, mo = 0;
      for (size_t d = 0; d < batch_.size(); ++d) {
        qo += idx[d] * q_.strides[d];
        ko += idx[d] * k_.strides[d];
        vo += idx[d] * v_.strides[d];
        oo += idx[d] * out_strides_[d];
        if (has_mask_) mo += idx[d] * mask_strides_[d];
      }
      cblas_sgemm(CblasRowMajor, qm_.trans, km_.trans, M, N, Dh, scale_, q + qo, qm_.ld, k + ko, km_.ld, 0.0f,
                  s, N);
      for (int64_t i = 0; i < sq_; ++i) {
        float* row = s + i * sk_;
        const float* mrow = mask ? mask + mo + i * mask_strides_[rank_ - 2] : nullptr;
        const int64_t ms = mask ? mask_strides_[rank_ - 1] : 1;
        if (mrow && ms != 1) {  // a mask broadcast along the row: added here, the row sees none
          for (int64_t j = 0; j < sk_; ++j) row[j] += mrow[j * ms];
          mrow = nullptr;
        }
        if (avx2)
          softmax_row_avx2(row, mrow, sk_);
        else
          softmax_row(row, mrow, sk_);
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, vm_.trans, M, Dv, N, 1.0f, s, N, v + vo, vm_.ld, 0.0f,
                  out + oo, ldc_);
      for (size_t d = batch_.size(); d-- > 0;) {  // next batch index
        if (++idx[d] < batch_[d]) break;
        idx[d] = 0;
      }
    }
    return {y};
  }

 private:
  float scale_;
  size_t rank_ = 0;
  Shape batch_, ctx_, out_shape_;
  int64_t sq_ = 0, sk_ = 0, dh_ = 0, dv_ = 0;
  View q_, k_, v_;
  int64_t q_offset_ = 0, k_offset_ = 0, v_offset_ = 0;
  Mat qm_, km_, vm_;
  std::vector<int64_t> out_strides_, mask_strides_;
  int ldc_ = 1;
  Source q_src_, k_src_, v_src_, mask_src_;
  bool has_mask_ = false;
};

}  // namespace

void softmax_row(float* row, const float* mask, int64_t n) {
  if (mask)
    for (int64_t j = 0; j < n; ++j) row[j] += mask[j];
  // 8 independent lanes: the max and the sum are latency-bound otherwise.
  float m8[8], s8[8] = {};
  std::fill(m8, m8 + 8, row[0]);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) m8[l] = m8[l] < row[j + l] ? row[j + l] : m8[l];
  float mx = *std::max_element(m8, m8 + 8);
  for (; j < n; ++j) mx = std::max(mx, row[j]);
  for (j = 0; j < n; ++j) row[j] = fast_exp(row[j] - mx);
  for (j = 0; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) s8[l] += row[j + l];
  float sum = 0;
  for (; j < n; ++j) sum += row[j];
  for (float v : s8) sum += v;
  const float inv = 1.0f / sum;
  for (j = 0; j < n; ++j) row[j] *= inv;
}

// Eight lanes at a time: the portable passes ran at ~3 ns an element (the build targets baseline
// x86-64, where GCC has at most four SSE lanes and no FMA), half the core's time at 256 tokens.
COLLAGE_AVX2 void softmax_row_avx2(float* row, const float* mask, int64_t n) {
  int64_t j = 0;
  __m256 mx8 = _mm256_set1_ps(-INFINITY);
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_loadu_ps(row + j);
    if (mask) {
      v = _mm256_add_ps(v, _mm256_loadu_ps(mask + j));
      _mm256_storeu_ps(row + j, v);
    }
    mx8 = _mm256_max_ps(mx8, v);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, mx8);
  float mx = *std::max_element(lanes, lanes + 8);
  for (int64_t t = j; t < n; ++t) {
    if (mask) row[t] += mask[t];
    mx = std::max(mx, row[t]);
  }
  const __m256 m = _mm256_set1_ps(mx);
  __m256 sum8 = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), m));
    _mm256_storeu_ps(row + j, e);
    sum8 = _mm256_add_ps(sum8, e);
  }
  _mm256_storeu_ps(lanes, sum8);
  float sum = 0;
  for (float v : lanes) sum += v;
  for (int64_t t = j; t < n; ++t) sum += row[t] = fast_exp(row[t] - mx);
  const float inv = 1.0f / sum;
  const __m256 inv8 = _mm256_set1_ps(inv);
  for (j = 0; j + 8 <= n; j += 8) _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), inv8));
  for (; j < n; ++j) row[j] *= inv;
}

std::unique_ptr<Kernel> make_transformer_kernel(const Graph& graph, const SubGraph& sub, int threads) {
  if (auto b = layer_norm_of(graph, sub)) return std::make_unique<LayerNormKernel>(graph, sub, *b);
  if (auto b = gelu_of(graph, sub)) return std::make_unique<GeluKernel>(graph, sub, *b, threads);
  if (auto b = attention_of(graph, sub)) return std::make_unique<AttentionKernel>(graph, sub, *b);
  return nullptr;
}

}  // namespace collage::native
