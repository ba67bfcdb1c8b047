#include "backends/onednn_int8/int8_matmul.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_fc_chain.h"

namespace collage::onednn_int8 {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Min and max of a[0, n), each thread over a contiguous part.
void range_of(const float* a, int64_t n, float& lo, float& hi) {
  float l = lo, h = hi;
#pragma omp parallel for simd reduction(min : l) reduction(max : h) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    l = std::min(l, a[i]);
    h = std::max(h, a[i]);
  }
  lo = l, hi = h;
}

// q = clamp(round(a * inv) + zp, 0, 255); the clamp comes first, so the conversion of a
// non-negative value rounds by adding 0.5 and truncating (vectorised, no libm call).
void quantize(const float* a, int64_t n, float inv, int32_t zp, uint8_t* q) {
  const float offset = static_cast<float>(zp) + 0.5f;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float v = std::min(255.5f, std::max(0.0f, a[i] * inv + offset));
    q[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
  }
}

// Per-column weight scales fixed when the primitive is created, the activation scale a leading
// post-op factor written per run: oneDNN 2.6 then runs its brgemm kernels (AMX, VNNI), where
// runtime output scales send it to gemm:jit (about 5x slower with AMX, measured on ViT-B/16's
// 197x768x3072 product; a tenth slower with VNNI alone). Where it has no brgemm kernel (AVX2)
// the product keeps runtime scales, its faster form there.
class Int8MatmulKernel : public Kernel {
 public:
  Int8MatmulKernel(const Graph& g, const SubGraph& sub)
      : chain_(onednn::fc_chain(g, sub, "onednn-int8", true)), m_(chain_.m), k_(chain_.k), n_(chain_.n) {
    QuantizedWeights qw = quantize_weights(chain_.weights.data<float>(), k_, n_);
    w_scale_ = std::move(qw.scale);
    dnnl::matmul::primitive_desc pd;
    try {
      pd = primitive_for(true);
      fixed_scales_ = std::string(pd.impl_info_str()).rfind("brg", 0) == 0;
    } catch (const dnnl::error&) {  // no kernel for this form: the runtime scales' one below
    }
    if (!fixed_scales_) {
      chain_ = onednn::fc_chain(g, sub, "onednn-int8", false);
      pd = primitive_for(false);
    }
    chain_.weights = Tensor();  // the quantized copy is what the kernel keeps
    prim_ = dnnl::matmul(pd);
    const memory::desc src_md = pd.src_desc();
    args_ = {{DNNL_ARG_SRC, memory(src_md, onednn::cpu())},
             {DNNL_ARG_DST, memory(chain_.out_desc(), onednn::cpu(), DNNL_MEMORY_NONE)},
             {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory({{1}, dt::s32, tag::a}, onednn::cpu())}};
    if (!fixed_scales_) args_[DNNL_ARG_ATTR_OUTPUT_SCALES] = memory({{n_}, dt::f32, tag::a}, onednn::cpu());
    memory w_plain({{k_, n_}, dt::s8, tag::ab}, onednn::cpu(), qw.q.data());
    memory w_mem(pd.weights_desc(), onednn::cpu());
    dnnl::stream stream(onednn::cpu());
    dnnl::reorder(w_plain, w_mem).execute(stream, w_plain, w_mem);
    stream.wait();
    args_[DNNL_ARG_WEIGHTS] = w_mem;
    for (auto& [arg, m] : chain_.constants) args_[arg] = m;
    if (pd.scratchpad_desc().get_size() > 0)
      args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), onednn::cpu());
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, chain_.out_shape);
    std::lock_guard<std::mutex> lock(mutex_);  // the quantized-activation buffer belongs to this kernel
    const float* a = inputs[static_cast<size_t>(chain_.a_input)]->data<float>();
    const int64_t count = m_ * k_;
    // The range always holds 0, so that 0 (padding, ReLU zeros) is exact.
    float lo = 0, hi = 0;
    range_of(a, count, lo, hi);
    if (!std::isfinite(lo) || !std::isfinite(hi))
      throw Error(ErrorKind::Internal, "onednn-int8: the activations hold a non-finite value");
    const float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
    const int32_t zp = static_cast<int32_t>(std::lround(-lo / scale));
    quantize(a, count, 1.0f / scale, zp, static_cast<uint8_t*>(args_[DNNL_ARG_SRC].get_data_handle()));
    if (fixed_scales_) {
      *static_cast<float*>(chain_.factor.get_data_handle()) = scale;
    } else {
      float* scales = static_cast<float*>(args_[DNNL_ARG_ATTR_OUTPUT_SCALES].get_data_handle());
      for (int64_t j = 0; j < n_; ++j) scales[j] = scale * w_scale_[static_cast<size_t>(j)];
    }
    *static_cast<int32_t*>(args_[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC].get_data_handle()) = zp;
    args_[DNNL_ARG_DST].set_data_handle(y.raw());
    chain_.bind(inputs, args_);
    try {
      dnnl::stream stream(onednn::cpu());
      prim_.execute(stream, args_);
      stream.wait();
    } catch (const dnnl::error& e) {
      throw Error(ErrorKind::Internal, std::string("onednn-int8: the matmul failed to run: ") + e.what());
    }
    return {y};
  }

 private:
  // u8 activations with a runtime zero point; the output scales per column, fixed or runtime.
  dnnl::matmul::primitive_desc primitive_for(bool fixed_scales) const {
    dnnl::primitive_attr attr;
    if (fixed_scales)
      attr.set_output_scales(1 << 1, w_scale_);
    else
      attr.set_output_scales(1 << 1, {DNNL_RUNTIME_F32_VAL});
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    attr.set_post_ops(chain_.ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const memory::desc src_md({m_, k_}, dt::u8, tag::ab), w_any({k_, n_}, dt::s8, tag::any);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, w_any, chain_.out_desc()), attr,
                                        onednn::cpu());
  }

  onednn::FcChain chain_;
  int64_t m_ = 0, k_ = 0, n_ = 0;
  std::vector<float> w_scale_;
  bool fixed_scales_ = false;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  std::mutex mutex_;
};

}  // namespace

std::unique_ptr<Kernel> compile_int8_matmul(const Graph& g, const SubGraph& sub) {
  try {
    return std::make_unique<Int8MatmulKernel>(g, sub);
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::Unsupported, std::string("onednn-int8: primitive creation failed: ") + e.what());
  }
}

}  // namespace collage::onednn_int8
