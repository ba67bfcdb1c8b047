#include "backends/onednn/onednn_kernels.h"
#include "core/conv_folding.h"

#include <omp.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

namespace collage::onednn {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "onednn: " + why); }

dnnl::engine& cpu() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory::dims dims_of(const Shape& s) { return memory::dims(s.begin(), s.end()); }

tag plain_tag(size_t rank) {
  switch (rank) {
    case 1: return tag::a;
    case 2: return tag::ab;
    case 3: return tag::abc;
    case 4: return tag::abcd;
    case 5: return tag::abcde;
    case 6: return tag::abcdef;
    default: refuse("rank " + std::to_string(rank) + " tensors are not supported");
  }
}

memory::desc plain(const Shape& s) { return memory::desc(dims_of(s), dt::f32, plain_tag(s.size())); }
memory::desc any(const Shape& s) { return memory::desc(dims_of(s), dt::f32, tag::any); }

const Tensor& constant_of(const Graph& g, ValueId v) {
  if (v == kNoValue || !g.value(v).constant) refuse("expected a constant input");
  return *g.value(v).constant;
}

struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};

std::optional<Eltwise> eltwise_of(const Graph& g, const Node& n) {
  using A = dnnl::algorithm;
  const std::string& op = n.op_type;
  if (op == "Relu") return Eltwise{A::eltwise_relu};
  if (op == "LeakyRelu") return Eltwise{A::eltwise_relu, n.attr_float("alpha", 0.01f)};
  if (op == "Elu") return Eltwise{A::eltwise_elu, n.attr_float("alpha", 1.0f)};
  if (op == "Sigmoid") return Eltwise{A::eltwise_logistic};
  if (op == "Tanh") return Eltwise{A::eltwise_tanh};
  if (op == "Exp") return Eltwise{A::eltwise_exp};
  if (op == "Log") return Eltwise{A::eltwise_log};
  if (op == "Sqrt") return Eltwise{A::eltwise_sqrt};
  if (op == "Abs") return Eltwise{A::eltwise_abs};
  if (op == "Neg") return Eltwise{A::eltwise_linear, -1.0f, 0.0f};
  if (op == "HardSwish") return Eltwise{A::eltwise_hardswish};
  if (op == "Gelu") return Eltwise{n.attr_string("approximate", "none") == "tanh" ? A::eltwise_gelu_tanh : A::eltwise_gelu_erf};
  if (op == "Clip") {
    auto bound = [&](size_t i, float fallback) {
      if (i >= n.inputs.size() || n.inputs[i] == kNoValue) return fallback;
      const Value& v = g.value(n.inputs[i]);
      if (!v.constant || v.constant->size() != 1) return NAN;
      return static_cast<float>(v.constant->to_double_vector()[0]);
    };
    float lo = bound(1, -FLT_MAX), hi = bound(2, FLT_MAX);
    if (std::isnan(lo) || std::isnan(hi)) return std::nullopt;
    return Eltwise{A::eltwise_clip_v2, lo, hi};
  }
  return std::nullopt;
}

std::optional<dnnl::algorithm> binary_of(const std::string& op) {
  using A = dnnl::algorithm;
  if (op == "Add") return A::binary_add;
  if (op == "Sub") return A::binary_sub;
  if (op == "Mul") return A::binary_mul;
  if (op == "Div") return A::binary_div;
  if (op == "Max") return A::binary_max;
  if (op == "Min") return A::binary_min;
  return std::nullopt;
}

// `s` padded with leading 1s to `rank`.
Shape pad_rank(const Shape& s, size_t rank) {
  Shape out(rank - std::min(rank, s.size()), 1);
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// A memory bound to a kernel input at run time, optionally reordered into the
// primitive's preferred layout.
struct RuntimeArg {
  int arg;
  int input;
  memory user;
  std::optional<memory> internal;
  std::optional<dnnl::reorder> reorder;
};

class PrimitiveKernel : public Kernel {
 public:
  PrimitiveKernel(dnnl::primitive prim, Shape out_shape) : prim_(std::move(prim)), out_shape_(std::move(out_shape)) {}

  void bind_constant(int arg, const memory& m) { constants_[arg] = m; }

  // Input `input` of the kernel (plain layout `user_md`) feeds `arg`, converted to `want` if it differs.
  void bind_input(int arg, int input, const memory::desc& user_md, const memory::desc& want) {
    RuntimeArg r{arg, input, memory(user_md, cpu(), DNNL_MEMORY_NONE), std::nullopt, std::nullopt};
    if (want != user_md) {
      r.internal = memory(want, cpu());
      r.reorder = dnnl::reorder(r.user, *r.internal);
    }
    runtime_.push_back(std::move(r));
  }

  void bind_output(const memory::desc& produced) {
    out_user_ = memory(plain(out_shape_), cpu(), DNNL_MEMORY_NONE);
    if (produced != out_user_.get_desc()) {
      out_internal_ = memory(produced, cpu());
      out_reorder_ = dnnl::reorder(*out_internal_, out_user_);
    }
  }

  void set_scratchpad(const memory::desc& md) {
    if (md.get_size() > 0) scratchpad_ = memory(md, cpu());
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    std::lock_guard<std::mutex> lock(mutex_);  // primitives' internal buffers belong to this kernel
    dnnl::stream stream(cpu());
    std::unordered_map<int, memory> args = constants_;
    for (RuntimeArg& r : runtime_) {
      r.user.set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(r.input)]->raw()));
      if (r.reorder) {
        r.reorder->execute(stream, r.user, *r.internal);
        args[r.arg] = *r.internal;
      } else {
        args[r.arg] = r.user;
      }
    }
    out_user_.set_data_handle(y.raw());
    args[DNNL_ARG_DST] = out_internal_ ? *out_internal_ : out_user_;
    if (scratchpad_) args[DNNL_ARG_SCRATCHPAD] = *scratchpad_;
    prim_.execute(stream, args);
    if (out_reorder_) out_reorder_->execute(stream, *out_internal_, out_user_);
    stream.wait();
    return {y};
  }

 private:
  dnnl::primitive prim_;
  Shape out_shape_;
  std::unordered_map<int, memory> constants_;
  std::vector<RuntimeArg> runtime_;
  memory out_user_;
  std::optional<memory> out_internal_, scratchpad_;
  std::optional<dnnl::reorder> out_reorder_;
  std::mutex mutex_;
};

// Constant tensor copied into a oneDNN memory of `md` (plain), optionally reordered to `want`.
memory constant_memory(const Tensor& t, const memory::desc& md, const std::optional<memory::desc>& want = std::nullopt) {
  memory user(md, cpu());
  std::memcpy(user.get_data_handle(), t.raw(), t.bytes());
  if (!want || *want == md) return user;
  memory packed(*want, cpu());
  dnnl::stream s(cpu());
  dnnl::reorder(user, packed).execute(s, user, packed);
  s.wait();
  return packed;
}

int input_index(const Graph& g, const SubGraph& sub, ValueId v) {
  auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
  if (it == sub.inputs.end()) refuse("'" + g.value(v).name + "' must be a runtime input");
  return static_cast<int>(it - sub.inputs.begin());
}

// Post-ops for the nodes after the head: element-wise ops and binary ops whose
// other operand is a runtime input or a constant broadcastable to the output.
struct PostOps {
  dnnl::post_ops ops;
  std::vector<std::pair<int, memory>> constant_args;             // arg id -> memory
  std::vector<std::tuple<int, int, memory::desc>> runtime_args;  // arg id, input index, desc
};

// `first` is the first node after the head (a folded BatchNormalization counts as head).
PostOps post_ops_for(const Graph& g, const SubGraph& sub, const Shape& out_shape, size_t first = 1) {
  PostOps p;
  ValueId current = g.node(sub.node_list[first - 1]).outputs[0];
  int index = 0;
  for (size_t i = first; i < sub.node_list.size(); ++i, ++index) {
    const Node& n = g.node(sub.node_list[i]);
    if (auto e = eltwise_of(g, n)) {
      if (n.inputs[0] != current) refuse(n.op_type + " is not on the chain");
      p.ops.append_eltwise(1.0f, e->alg, e->alpha, e->beta);
    } else if (auto b = binary_of(n.op_type)) {
      bool first = n.inputs[0] == current;
      if (!first && n.inputs[1] != current) refuse("binary op not on the chain");
      if (!first && n.op_type != "Add" && n.op_type != "Mul" && n.op_type != "Max" && n.op_type != "Min")
        refuse("non-commutative binary op with the chain as second operand");
      ValueId other = first ? n.inputs[1] : n.inputs[0];
      const Value& ov = g.value(other);
      if (ov.shape.size() > out_shape.size()) refuse("binary operand of higher rank");
      Shape os = pad_rank(ov.shape, out_shape.size());
      for (size_t d = 0; d < os.size(); ++d)
        if (os[d] != 1 && os[d] != out_shape[d]) refuse("binary operand does not broadcast to the output");
      memory::desc md = plain(os);
      p.ops.append_binary(*b, md);
      int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1;
      if (ov.constant) p.constant_args.emplace_back(arg, constant_memory(*ov.constant, md));
      else p.runtime_args.emplace_back(arg, input_index(g, sub, other), md);
    } else {
      refuse(n.op_type + " cannot be a post-op");
    }
    current = n.outputs[0];
  }
  if (current != sub.outputs.at(0) || sub.outputs.size() != 1) refuse("the group must be one chain with one output");
  return p;
}

template <class PD>
std::unique_ptr<PrimitiveKernel> finish(const PD& pd, const Shape& out_shape, const PostOps& post) {
  auto k = std::make_unique<PrimitiveKernel>(dnnl::primitive(pd), out_shape);
  k->bind_output(pd.dst_desc());
  k->set_scratchpad(pd.scratchpad_desc());
  for (const auto& [arg, mem] : post.constant_args) k->bind_constant(arg, mem);
  for (const auto& [arg, input, md] : post.runtime_args) k->bind_input(arg, input, md, md);
  return k;
}

dnnl::primitive_attr attr_with(const PostOps& post) {
  dnnl::primitive_attr attr;
  attr.set_post_ops(post.ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// ---- convolution / deconvolution ------------------------------------------------------
struct ConvGeometry {
  memory::dims strides, dilates, pad_l, pad_r;
};

ConvGeometry conv_geometry(const Node& n, const Shape& x, const Shape& w, const Shape& y, bool transposed) {
  size_t s = x.size() - 2;
  ConvGeometry g;
  auto strides = n.attr_ints("strides", std::vector<int64_t>(s, 1));
  auto dils = n.attr_ints("dilations", std::vector<int64_t>(s, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x[d + 2], out = y[d + 2], span = (w[d + 2] - 1) * dils[d] + 1;
    int64_t l = pads[d], r = pads[d + s];
    if (auto_pad == "VALID") l = r = 0;
    if (!transposed && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
      int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + span - in);
      l = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      r = total - l;
    }
    if (transposed) {
      // Deconvolution: out = (in - 1) * stride + span - l - r (output_padding enlarges r).
      int64_t total = (in - 1) * strides[d] + span - out;
      if (auto_pad != "NOTSET" || n.has_attr("output_shape")) l = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      r = total - l;
    }
    g.strides.push_back(strides[d]);
    g.dilates.push_back(dils[d] - 1);  // oneDNN counts dilation from 0
    g.pad_l.push_back(l);
    g.pad_r.push_back(r);
  }
  return g;
}

std::unique_ptr<Kernel> compile_conv(const Graph& g, const SubGraph& sub, const Node& n, bool transposed) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  // ConvTranspose never folds: fold_conv only merges a BN after a Conv.
  FoldedConv folded = fold_conv(g, sub);
  Tensor w = folded.weight;
  std::optional<Tensor> folded_bias = folded.bias;
  size_t first_post = folded.nodes_used;
  const Shape& ys = g.value(n.outputs[0]).shape;
  const Shape& out = g.value(sub.outputs.at(0)).shape;
  int64_t group = n.attr_int("group", 1);
  // oneDNN grouped weights: [g, oc/g, ic/g, k...] (conv) / [g, oc/g, ic/g, k...] from ONNX's [ic, oc/g, k...] (deconv).
  Shape ws = w.shape();
  Tensor wt = w;
  if (transposed) {
    // ONNX ConvTranspose W is [C_in, M/g, k...]; oneDNN wants [g, M/g, C_in/g, k...] (or [M, C_in, k...]).
    int64_t cin = ws[0], mg = ws[1], taps = w.size() / (cin * mg);
    Tensor t(DType::Float32, {group, mg, cin / group, taps});
    for (int64_t gi = 0; gi < group; ++gi)
      for (int64_t ic = 0; ic < cin / group; ++ic)
        for (int64_t oc = 0; oc < mg; ++oc)
          for (int64_t k = 0; k < taps; ++k)
            t.data<float>()[((gi * mg + oc) * (cin / group) + ic) * taps + k] =
                w.data<float>()[((gi * (cin / group) + ic) * mg + oc) * taps + k];
    wt = t;
    ws = {group, mg, cin / group};
    ws.insert(ws.end(), w.shape().begin() + 2, w.shape().end());
  } else if (group > 1) {
    ws = {group, ws[0] / group, ws[1]};
    ws.insert(ws.end(), w.shape().begin() + 2, w.shape().end());
  }
  if (transposed && group == 1) ws.erase(ws.begin());
  ConvGeometry geo = conv_geometry(n, xs, w.shape(), ys, transposed);
  PostOps post = post_ops_for(g, sub, out, first_post);
  std::optional<memory::desc> bias_md;
  if (folded_bias) bias_md = plain(folded_bias->shape());
  auto attr = attr_with(post);
  memory::desc w_any(dims_of(ws), dt::f32, tag::any);
  auto make = [&](auto pd) -> std::unique_ptr<Kernel> {
    auto k = finish(pd, out, post);
    k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
    k->bind_constant(DNNL_ARG_WEIGHTS, constant_memory(wt, plain(ws), pd.weights_desc()));
    if (bias_md) k->bind_constant(DNNL_ARG_BIAS, constant_memory(*folded_bias, *bias_md));
    return k;
  };
  using P = dnnl::prop_kind;
  if (!transposed) {
    auto d = bias_md ? dnnl::convolution_forward::desc(P::forward_inference, dnnl::algorithm::convolution_direct, any(xs),
                                                        w_any, *bias_md, any(out), geo.strides, geo.dilates, geo.pad_l, geo.pad_r)
                     : dnnl::convolution_forward::desc(P::forward_inference, dnnl::algorithm::convolution_direct, any(xs),
                                                        w_any, any(out), geo.strides, geo.dilates, geo.pad_l, geo.pad_r);
    return make(dnnl::convolution_forward::primitive_desc(d, attr, cpu()));
  }
  auto d = bias_md ? dnnl::deconvolution_forward::desc(P::forward_inference, dnnl::algorithm::deconvolution_direct, any(xs),
                                                        w_any, *bias_md, any(out), geo.strides, geo.dilates, geo.pad_l, geo.pad_r)
                   : dnnl::deconvolution_forward::desc(P::forward_inference, dnnl::algorithm::deconvolution_direct, any(xs),
                                                        w_any, any(out), geo.strides, geo.dilates, geo.pad_l, geo.pad_r);
  return make(dnnl::deconvolution_forward::primitive_desc(d, attr, cpu()));
}

// ---- matmul / gemm ----------------------------------------------------------------
std::unique_ptr<Kernel> compile_matmul(const Graph& g, const SubGraph& sub, const Node& n) {
  bool gemm = n.op_type == "Gemm";
  if (gemm && (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.0f) != 1.0f || n.attr_float("beta", 1.0f) != 1.0f))
    refuse("Gemm with transA/alpha/beta");
  Shape as = g.value(n.inputs[0]).shape, bs = g.value(n.inputs[1]).shape;
  const Shape& out = g.value(sub.outputs.at(0)).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  if (as.size() < 2 || bs.size() < 2) refuse("1-D MatMul operands");
  size_t rank = ys.size();
  as = pad_rank(as, rank);
  Shape b_logical = pad_rank(bs, rank);
  bool trans_b = gemm && n.attr_int("transB", 0) != 0;
  if (trans_b) std::swap(b_logical[rank - 1], b_logical[rank - 2]);
  PostOps post = post_ops_for(g, sub, out);
  auto attr = attr_with(post);
  const Value& bv = g.value(n.inputs[1]);
  memory::desc b_user = plain(pad_rank(bs, rank));
  if (trans_b) b_user = memory::desc(dims_of(b_logical), dt::f32, tag::ba);  // [N, K] storage read as [K, N]
  memory::desc b_want = bv.constant ? memory::desc(dims_of(b_logical), dt::f32, tag::any) : b_user;
  std::optional<memory::desc> bias_md;
  if (gemm && n.inputs.size() > 2 && n.inputs[2] != kNoValue) bias_md = plain(pad_rank(constant_of(g, n.inputs[2]).shape(), rank));
  auto d = bias_md ? dnnl::matmul::desc(plain(as), b_want, *bias_md, plain(ys)) : dnnl::matmul::desc(plain(as), b_want, plain(ys));
  dnnl::matmul::primitive_desc pd(d, attr, cpu());
  auto k = finish(pd, out, post);
  k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(as), pd.src_desc());
  if (bv.constant) k->bind_constant(DNNL_ARG_WEIGHTS, constant_memory(*bv.constant, b_user, pd.weights_desc()));
  else k->bind_input(DNNL_ARG_WEIGHTS, input_index(g, sub, n.inputs[1]), b_user, pd.weights_desc());
  if (bias_md) k->bind_constant(DNNL_ARG_BIAS, constant_memory(constant_of(g, n.inputs[2]), *bias_md));
  return k;
}

// ---- single-op primitives ----------------------------------------------------------------
std::unique_ptr<Kernel> compile_pool(const Graph& g, const SubGraph& sub, const Node& n) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  size_t s = xs.size() - 2;
  memory::dims kernel, strides, dil, pl, pr;
  bool global = n.op_type.rfind("Global", 0) == 0;
  auto ks = global ? std::vector<int64_t>(xs.begin() + 2, xs.end()) : n.attr_ints("kernel_shape");
  auto st = n.attr_ints("strides", std::vector<int64_t>(s, 1)), dl = n.attr_ints("dilations", std::vector<int64_t>(s, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  for (size_t d = 0; d < s; ++d) {
    int64_t span = (ks[d] - 1) * dl[d] + 1, l = auto_pad == "VALID" ? 0 : pads[d];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t total = std::max<int64_t>(0, (ys[d + 2] - 1) * st[d] + span - xs[d + 2]);
      l = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
    kernel.push_back(ks[d]);
    strides.push_back(st[d]);
    dil.push_back(dl[d] - 1);
    pl.push_back(l);
    // ceil_mode and asymmetric pads: the right pad that yields exactly the graph's output size.
    pr.push_back((ys[d + 2] - 1) * st[d] + span - xs[d + 2] - l);
  }
  using A = dnnl::algorithm;
  A alg = n.op_type.find("Max") != std::string::npos ? A::pooling_max
          : n.attr_int("count_include_pad", 0) ? A::pooling_avg_include_padding : A::pooling_avg_exclude_padding;
  if (alg == A::pooling_avg_include_padding) {
    // oneDNN counts the extra ceil-mode padding too; ONNX does not: claim only exact cases.
    for (size_t d = 0; d < s; ++d)
      if (pr[d] != pads[d + s] && auto_pad == "NOTSET") refuse("count_include_pad with ceil_mode overhang");
  }
  PostOps post = post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape);
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, plain(xs), any(ys), strides, kernel, dil, pl, pr);
  dnnl::pooling_v2_forward::primitive_desc pd(d, attr_with(post), cpu());
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
  k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
  return k;
}

std::unique_ptr<Kernel> compile_softmax(const Graph& g, const SubGraph& sub, const Node& n) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  int64_t axis = n.attr_int("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  auto alg = n.op_type == "LogSoftmax" ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
  PostOps post = post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape);
  dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, plain(xs), plain(xs), static_cast<int>(axis));
  dnnl::softmax_v2_forward::primitive_desc pd(d, attr_with(post), cpu());
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
  k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
  return k;
}

std::unique_ptr<Kernel> compile_norm(const Graph& g, const SubGraph& sub, const Node& n) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  using F = dnnl::normalization_flags;
  PostOps post = post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape);
  if (n.op_type == "BatchNormalization") {
    float eps = n.attr_float("epsilon", 1e-5f);
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, plain(xs), eps,
                                              F::use_global_stats | F::use_scale | F::use_shift);
    dnnl::batch_normalization_forward::primitive_desc pd(d, attr_with(post), cpu());
    auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
    k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
    const int args[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    for (size_t i = 0; i < 4; ++i) {
      const Tensor& t = constant_of(g, n.inputs[i + 1]);
      k->bind_constant(args[i], constant_memory(t, plain(t.shape())));
    }
    return k;
  }
  // LayerNormalization over the last axis.
  if (n.attr_int("axis", -1) != -1 && n.attr_int("axis", -1) != static_cast<int64_t>(xs.size()) - 1)
    refuse("LayerNormalization over more than the last axis");
  if (n.outputs.size() > 1) refuse("LayerNormalization statistics outputs");
  bool has_bias = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
  auto flags = has_bias ? F::use_scale | F::use_shift : F::use_scale;
  dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, plain(xs), n.attr_float("epsilon", 1e-5f), flags);
  dnnl::layer_normalization_forward::primitive_desc pd(d, attr_with(post), cpu());
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
  k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
  const Tensor& scale = constant_of(g, n.inputs[1]);
  k->bind_constant(DNNL_ARG_SCALE, constant_memory(scale, plain({scale.size()})));
  if (has_bias) {
    const Tensor& b = constant_of(g, n.inputs[2]);
    k->bind_constant(DNNL_ARG_SHIFT, constant_memory(b, plain({b.size()})));
  }
  return k;
}

std::unique_ptr<Kernel> compile_eltwise(const Graph& g, const SubGraph& sub, const Node& n) {
  auto e = eltwise_of(g, n);
  const Shape& xs = g.value(n.inputs[0]).shape;
  PostOps post = post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, e->alg, plain(xs), e->alpha, e->beta);
  dnnl::eltwise_forward::primitive_desc pd(d, attr_with(post), cpu());
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
  k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
  return k;
}

std::unique_ptr<Kernel> compile_binary(const Graph& g, const SubGraph& sub, const Node& n) {
  const Shape& ys = g.value(n.outputs[0]).shape;
  ValueId a = n.inputs[0], b = n.inputs[1];
  // oneDNN broadcasts only the second source: put the full-shape operand first.
  bool commutative = n.op_type == "Add" || n.op_type == "Mul" || n.op_type == "Max" || n.op_type == "Min";
  if (g.value(a).shape != ys && commutative) std::swap(a, b);
  if (g.value(a).shape != ys) refuse("the first operand must have the output's shape");
  Shape bs = pad_rank(g.value(b).shape, ys.size());
  PostOps post = post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape);
  dnnl::binary::desc d(*binary_of(n.op_type), plain(ys), plain(bs), plain(ys));
  dnnl::binary::primitive_desc pd(d, attr_with(post), cpu());
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
  k->bind_input(DNNL_ARG_SRC_0, input_index(g, sub, a), plain(ys), pd.src_desc(0));
  if (g.value(b).constant) k->bind_constant(DNNL_ARG_SRC_1, constant_memory(*g.value(b).constant, plain(bs)));
  else k->bind_input(DNNL_ARG_SRC_1, input_index(g, sub, b), plain(bs), pd.src_desc(1));
  return k;
}

}  // namespace

bool eltwise_supported(const Graph& graph, const Node& node) { return eltwise_of(graph, node).has_value(); }

std::unique_ptr<Kernel> compile(const Graph& graph, const SubGraph& sub, const CompileOptions&) {
  const Node& head = graph.node(sub.node_list.at(0));
  for (NodeId id : sub.node_list)
    for (ValueId v : graph.node(id).inputs)
      if (v != kNoValue && graph.value(v).dtype != DType::Float32) refuse("non-float32 tensors");
  try {
    const std::string& op = head.op_type;
    if (op == "Conv") return compile_conv(graph, sub, head, false);
    if (op == "ConvTranspose") return compile_conv(graph, sub, head, true);
    if (op == "MatMul" || op == "Gemm") return compile_matmul(graph, sub, head);
    if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool")
      return compile_pool(graph, sub, head);
    if (op == "Softmax" || op == "LogSoftmax") return compile_softmax(graph, sub, head);
    if (op == "BatchNormalization" || op == "LayerNormalization") return compile_norm(graph, sub, head);
    if (binary_of(op)) return compile_binary(graph, sub, head);
    if (eltwise_of(graph, head)) return compile_eltwise(graph, sub, head);
  } catch (const dnnl::error& e) {
    refuse(std::string("primitive creation failed: ") + e.what());
  }
  refuse("no primitive for " + head.op_type);
}

std::string library_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

// OpenMP's thread count is per calling thread: callers set it on the thread that runs kernels.
void set_threads(int threads) { omp_set_num_threads(threads); }

}  // namespace collage::onednn
