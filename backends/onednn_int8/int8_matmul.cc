#include "backends/onednn_int8/int8_matmul.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <unordered_map>

#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_fusion.h"

namespace collage::onednn_int8 {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

[[noreturn]] void refuse(const std::string& why) {
  throw Error(ErrorKind::Unsupported, "onednn-int8: " + why);
}

int input_index(const Graph& g, const SubGraph& sub, ValueId v) {
  auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
  if (it == sub.inputs.end()) refuse("'" + g.value(v).name + "' must be a runtime input");
  return static_cast<int>(it - sub.inputs.begin());
}

// Row-major [K, N] weights of the head, alpha folded in.
Tensor head_weights(const Graph& g, const Node& n, int64_t& k, int64_t& cols) {
  const Value& b = g.value(n.inputs.at(1));
  if (!b.constant || b.shape.size() != 2) refuse("the weights must be a constant 2-D tensor");
  const bool trans = n.op_type == "Gemm" && n.attr_int("transB", 0) != 0;
  const float alpha = n.op_type == "Gemm" ? n.attr_float("alpha", 1.0f) : 1.0f;
  k = trans ? b.shape[1] : b.shape[0];
  cols = trans ? b.shape[0] : b.shape[1];
  Tensor w(DType::Float32, {k, cols});
  const float* src = b.constant->data<float>();
  float* dst = w.data<float>();
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * cols + c] = alpha * (trans ? src[c * k + r] : src[r * cols + c]);
  return w;
}

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

class Int8MatmulKernel : public Kernel {
 public:
  Int8MatmulKernel(const Graph& g, const SubGraph& sub) {
    const Node& n = g.node(sub.node_list.at(0));
    if (n.op_type != "MatMul" && n.op_type != "Gemm") refuse("the head must be a MatMul or Gemm");
    if (n.op_type == "Gemm" && n.attr_int("transA", 0) != 0) refuse("Gemm with transA");
    const Value& a = g.value(n.inputs.at(0));
    if (a.constant || a.shape.size() < 2) refuse("the activations must be a runtime tensor of rank >= 2");
    Tensor w = head_weights(g, n, k_, n_);
    if (a.shape.back() != k_) refuse("the operands' inner dimensions differ");
    m_ = shape_size(a.shape) / k_;
    a_input_ = input_index(g, sub, n.inputs[0]);
    out_shape_ = g.value(sub.outputs.at(0)).shape;
    if (shape_size(out_shape_) != m_ * n_) refuse("the group must keep the product's shape");

    QuantizedWeights qw = quantize_weights(w.data<float>(), k_, n_);
    w_scale_ = std::move(qw.scale);

    dnnl::post_ops ops;
    std::vector<std::pair<int, memory>> constants;
    const memory::desc row({1, n_}, dt::f32, tag::ab), full({m_, n_}, dt::f32, tag::ab);
    auto constant_row = [&](const Tensor& t, float factor) {
      memory m(row, onednn::cpu());
      float* p = static_cast<float*>(m.get_data_handle());
      const float* s = t.data<float>();
      for (int64_t j = 0; j < n_; ++j) p[j] = factor * s[t.size() == 1 ? 0 : j];
      return m;
    };
    if (n.op_type == "Gemm" && n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
      const Value& c = g.value(n.inputs[2]);
      if (!c.constant || (c.constant->size() != n_ && c.constant->size() != 1))
        refuse("Gemm's C must be [N] or a scalar");
      constants.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len()) | DNNL_ARG_SRC_1,
                             constant_row(*c.constant, n.attr_float("beta", 1.0f)));
      ops.append_binary(dnnl::algorithm::binary_add, row);
    }
    ValueId current = n.outputs.at(0);
    for (const onednn::Unit& u : onednn::units_of(g, sub, 1)) {
      if (!u.binary) {
        if (u.in != current) refuse("an element-wise op off the chain");
        for (const onednn::Eltwise& e : u.stages) ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
        current = u.out;
        continue;
      }
      const Node& b = *u.binary;
      if (b.inputs.size() != 2 || (b.inputs[0] == current) == (b.inputs[1] == current))
        refuse(b.op_type + " must combine the chain with another value");
      if (b.inputs[0] != current && (b.op_type == "Sub" || b.op_type == "Div"))
        refuse(b.op_type + " with the chain as its second operand");
      ValueId other = b.inputs[0] == current ? b.inputs[1] : b.inputs[0];
      const Value& ov = g.value(other);
      const int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len()) | DNNL_ARG_SRC_1;
      const dnnl::algorithm alg = *onednn::binary_of(b.op_type);
      if (ov.constant && (ov.constant->size() == n_ || ov.constant->size() == 1) &&
          (ov.shape.empty() || ov.shape.back() == ov.constant->size())) {
        constants.emplace_back(arg, constant_row(*ov.constant, 1.0f));
        ops.append_binary(alg, row);
      } else if (!ov.constant && ov.shape == out_shape_) {
        runtime_.push_back({arg, input_index(g, sub, other), memory(full, onednn::cpu(), DNNL_MEMORY_NONE)});
        ops.append_binary(alg, full);
      } else {
        refuse(b.op_type + " operand is neither a per-column constant nor of the output's shape");
      }
      if (g.value(b.outputs.at(0)).shape != out_shape_) refuse("the chain is broadcast to a larger shape");
      current = b.outputs[0];
    }
    if (sub.outputs.size() != 1 || current != sub.outputs[0])
      refuse("the group must be one chain with one output");

    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, {DNNL_RUNTIME_F32_VAL});
    attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
    attr.set_post_ops(ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const memory::desc src_md({m_, k_}, dt::u8, tag::ab), w_any({k_, n_}, dt::s8, tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_any, full), attr, onednn::cpu());
    prim_ = dnnl::matmul(pd);
    args_ = {{DNNL_ARG_SRC, memory(src_md, onednn::cpu())},
             {DNNL_ARG_DST, memory(full, onednn::cpu(), DNNL_MEMORY_NONE)},
             {DNNL_ARG_ATTR_OUTPUT_SCALES, memory({{n_}, dt::f32, tag::a}, onednn::cpu())},
             {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, memory({{1}, dt::s32, tag::a}, onednn::cpu())}};
    memory w_plain({{k_, n_}, dt::s8, tag::ab}, onednn::cpu(), qw.q.data());
    memory w_mem(pd.weights_desc(), onednn::cpu());
    dnnl::stream stream(onednn::cpu());
    dnnl::reorder(w_plain, w_mem).execute(stream, w_plain, w_mem);
    stream.wait();
    args_[DNNL_ARG_WEIGHTS] = w_mem;
    for (auto& [arg, m] : constants) args_[arg] = m;
    if (pd.scratchpad_desc().get_size() > 0)
      args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), onednn::cpu());
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    std::lock_guard<std::mutex> lock(mutex_);  // the quantized-activation buffer belongs to this kernel
    const float* a = inputs[static_cast<size_t>(a_input_)]->data<float>();
    const int64_t count = m_ * k_;
    // The range always holds 0, so that 0 (padding, ReLU zeros) is exact.
    float lo = 0, hi = 0;
    range_of(a, count, lo, hi);
    if (!std::isfinite(lo) || !std::isfinite(hi))
      throw Error(ErrorKind::Internal, "onednn-int8: the activations hold a non-finite value");
    const float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
    const int32_t zp = static_cast<int32_t>(std::lround(-lo / scale));
    quantize(a, count, 1.0f / scale, zp, static_cast<uint8_t*>(args_[DNNL_ARG_SRC].get_data_handle()));
    float* scales = static_cast<float*>(args_[DNNL_ARG_ATTR_OUTPUT_SCALES].get_data_handle());
    for (int64_t j = 0; j < n_; ++j) scales[j] = scale * w_scale_[static_cast<size_t>(j)];
    *static_cast<int32_t*>(args_[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC].get_data_handle()) = zp;
    args_[DNNL_ARG_DST].set_data_handle(y.raw());
    for (Runtime& r : runtime_) {
      r.mem.set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(r.input)]->raw()));
      args_[r.arg] = r.mem;
    }
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
  struct Runtime {
    int arg;
    int input;
    memory mem;
  };
  int64_t m_ = 0, k_ = 0, n_ = 0;
  int a_input_ = 0;
  Shape out_shape_;
  std::vector<float> w_scale_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  std::vector<Runtime> runtime_;
  std::mutex mutex_;
};

}  // namespace

QuantizedWeights quantize_weights(const float* w, int64_t k, int64_t n) {
  QuantizedWeights r;
  r.scale.assign(static_cast<size_t>(n), 0.0f);
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j)
      r.scale[static_cast<size_t>(j)] = std::max(r.scale[static_cast<size_t>(j)], std::fabs(w[i * n + j]));
  for (float& s : r.scale) s = s > 0 && std::isfinite(s) ? s / kWeightLevels : 1.0f;
  r.q.resize(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float v = std::nearbyint(w[i * n + j] / r.scale[static_cast<size_t>(j)]);
      r.q[static_cast<size_t>(i * n + j)] =
          static_cast<int8_t>(std::min<float>(kWeightLevels, std::max<float>(-kWeightLevels, v)));
    }
  return r;
}

std::unique_ptr<Kernel> compile_int8_matmul(const Graph& g, const SubGraph& sub) {
  for (NodeId id : sub.node_list)
    for (ValueId v : g.node(id).inputs)
      if (v != kNoValue && g.value(v).dtype != DType::Float32) refuse("non-float32 tensors");
  try {
    return std::make_unique<Int8MatmulKernel>(g, sub);
  } catch (const dnnl::error& e) {
    refuse(std::string("primitive creation failed: ") + e.what());
  }
}

}  // namespace collage::onednn_int8
