#include "backends/onednn/onednn_kernels.h"

#include <omp.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <variant>

#include "backends/onednn/onednn_attention.h"
#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_fusion.h"
#include "backends/onednn/onednn_resize.h"
#include "backends/onednn/onednn_rnn.h"
#include "core/backend_api/conv_folding.h"
#include "core/backend_api/transformer_fusion.h"
#include "core/ir/conv_geometry.h"

namespace collage::onednn {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {
[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "onednn: " + why); }
}  // namespace

dnnl::engine& cpu() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// Scalars are [1] to oneDNN, which has no rank-0 memory.
memory::dims dims_of(const Shape& s) {
  return s.empty() ? memory::dims{1} : memory::dims(s.begin(), s.end());
}

tag plain_tag(size_t rank) {
  switch (rank) {
    case 1:
      return tag::a;
    case 2:
      return tag::ab;
    case 3:
      return tag::abc;
    case 4:
      return tag::abcd;
    case 5:
      return tag::abcde;
    case 6:
      return tag::abcdef;
    default:
      refuse("rank " + std::to_string(rank) + " tensors are not supported");
  }
}

memory::desc plain(const Shape& s) {
  return memory::desc(dims_of(s), dt::f32, plain_tag(std::max<size_t>(1, s.size())));
}
memory::desc any(const Shape& s) { return memory::desc(dims_of(s), dt::f32, tag::any); }

std::optional<memory::desc> padded_weights(const memory::desc& chosen) {
  const memory::dims dims = chosen.dims();
  if (dims.size() < 2 || chosen.data_type() != dt::f32) return std::nullopt;
  const memory::dim n = dims.back(), k = dims[dims.size() - 2];
  if (chosen != memory::desc(dims, dt::f32, plain_tag(dims.size())) || (n * 4) % 1024 != 0)
    return std::nullopt;
  memory::dims strides(dims.size(), 1);
  strides[dims.size() - 2] = n + 16;
  for (size_t i = dims.size() - 2; i-- > 0;)
    strides[i] = strides[i + 1] * (i + 1 == dims.size() - 2 ? k : dims[i + 1]);
  return memory::desc(dims, dt::f32, strides);
}

namespace {

const Tensor& constant_of(const Graph& g, ValueId v) {
  if (v == kNoValue || !g.value(v).constant) refuse("expected a constant input");
  return *g.value(v).constant;
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
  PrimitiveKernel(dnnl::primitive prim, Shape out_shape)
      : prim_(std::move(prim)), out_shape_(std::move(out_shape)) {}

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

  // `as` views the output with the rank the primitive was created for.
  void bind_output(const memory::desc& produced, const Shape& as) {
    out_user_ = memory(plain(as), cpu(), DNNL_MEMORY_NONE);
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

}  // namespace

Tensor conv_weights(const Tensor& w, int64_t group, bool transposed, Shape& dims) {
  // oneDNN grouped weights: [g, oc/g, ic/g, k...] (conv) / [g, oc/g, ic/g, k...] from ONNX's [ic, oc/g, k...]
  // (deconv).
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
  dims = ws;
  return wt;
}

bool winograd_pays(const Shape& w, const Shape& y, const ConvGeometry& geo) {
  if (w.size() != 4 || y.size() != 4 || w[2] != 3 || w[3] != 3) return false;
  if (geo.strides != memory::dims{1, 1} || geo.dilates != memory::dims{0, 0}) return false;
  return y[2] * y[3] >= 100 || w[0] >= 32;
}

ConvGeometry conv_geometry(const Node& n, const Shape& x, const Shape& w, const Shape& y, bool transposed) {
  size_t s = x.size() - 2;
  ConvGeometry g;
  auto strides = n.attr_ints("strides", std::vector<int64_t>(s, 1));
  auto dils = n.attr_ints("dilations", std::vector<int64_t>(s, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (strides.size() != s || dils.size() != s || pads.size() != 2 * s || w.size() != x.size() ||
      y.size() != x.size())
    refuse("convolution attribute sizes do not match the input rank");
  bool same = is_same_auto_pad(auto_pad, n.name), upper = auto_pad == "SAME_UPPER";
  auto out_pad = n.attr_ints("output_padding", std::vector<int64_t>(s, 0));
  if (transposed && out_pad.size() != s) refuse("output_padding size does not match the input rank");
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x[d + 2], out = y[d + 2], span = window_span(w[d + 2], dils[d]);
    int64_t l = pads[d], r = pads[d + s];
    if (auto_pad == "VALID") l = r = 0;
    if (!transposed && same) std::tie(l, r) = same_padding(upper, in, strides[d], span);
    if (transposed) {
      if (same || n.has_attr("output_shape"))
        l = transposed_padding(upper, (in - 1) * strides[d] + out_pad[d] + span, out).first;
      // Deconvolution: out = (in - 1) * stride + span - l - r (output_padding enlarges r).
      r = (in - 1) * strides[d] + span - out - l;
    }
    g.strides.push_back(strides[d]);
    g.dilates.push_back(dils[d] - 1);  // oneDNN counts dilation from 0
    g.pad_l.push_back(l);
    g.pad_r.push_back(r);
  }
  return g;
}

// The oneDNN pooling that computes `n` exactly, or the reason there is none.
std::variant<PoolGeometry, std::string> pool_geometry(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.outputs.empty() || n.outputs[0] == kNoValue) return "malformed pooling node";
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  if (xs.size() < 3 || xs.size() > 5 || ys.size() != xs.size()) return "pooling needs 1-3 spatial dims";
  size_t s = xs.size() - 2;
  bool global = n.op_type.rfind("Global", 0) == 0;
  auto ks = global ? std::vector<int64_t>(xs.begin() + 2, xs.end()) : n.attr_ints("kernel_shape");
  auto st = n.attr_ints("strides", std::vector<int64_t>(s, 1)),
       dl = n.attr_ints("dilations", std::vector<int64_t>(s, 1));
  auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  if (ks.size() != s || st.size() != s || dl.size() != s || pads.size() != 2 * s)
    return "pooling attribute sizes";
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  bool same = is_same_auto_pad(auto_pad, n.name);
  using A = dnnl::algorithm;
  PoolGeometry geo;
  bool max = n.op_type.find("Max") != std::string::npos,
       include = !max && n.attr_int("count_include_pad", 0) != 0;
  geo.alg = max ? A::pooling_max : include ? A::pooling_avg_include_padding : A::pooling_avg_exclude_padding;
  for (size_t d = 0; d < s; ++d) {
    if (ks[d] < 1 || st[d] < 1 || dl[d] < 1) return "non-positive kernel, stride or dilation";
    int64_t span = window_span(ks[d], dl[d]), l = auto_pad == "VALID" ? 0 : pads[d],
            r = auto_pad == "VALID" ? 0 : pads[d + s];
    if (same) std::tie(l, r) = same_padding(auto_pad == "SAME_UPPER", xs[d + 2], st[d], span);
    // The right pad yielding exactly the graph's output size: larger than `r` in
    // ceil mode, negative when floor mode leaves input rows unread.
    int64_t pr = (ys[d + 2] - 1) * st[d] + span - xs[d + 2] - l;
    // A last window lying wholly in the padding has no ONNX meaning oneDNN shares.
    if ((ys[d + 2] - 1) * st[d] - l >= xs[d + 2] || l >= span)
      return "a pooling window lies wholly in the padding";
    // oneDNN divides by the full kernel over any overhang; ONNX only counts the declared pads.
    if (include && pr > r) return "count_include_pad with a ceil-mode overhang";
    geo.kernel.push_back(ks[d]);
    geo.strides.push_back(st[d]);
    geo.dilates.push_back(dl[d] - 1);
    geo.pad_l.push_back(l);
    geo.pad_r.push_back(pr);
  }
  return geo;
}

namespace {

int input_index(const Graph& g, const SubGraph& sub, ValueId v) {
  auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
  if (it == sub.inputs.end()) refuse("'" + g.value(v).name + "' must be a runtime input");
  return static_cast<int>(it - sub.inputs.begin());
}

// Post-ops for the units after the head: eltwise stages, and binary ops whose
// other operand is a runtime input or a constant broadcastable to the output.
struct PostOps {
  dnnl::post_ops ops;
  std::vector<std::pair<int, memory>> constant_args;  // arg id -> memory
  // arg id, input index, plain layout of the input, layout the primitive reads
  std::vector<std::tuple<int, int, memory::desc, memory::desc>> runtime_args;
  bool full_operand = false;  // some binary operand has the result's full shape
};

void append(PostOps& p, const std::vector<Eltwise>& stages) {
  for (const Eltwise& e : stages) p.ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
}

// `units[first...]` applied to the head's result `current`; `pending` stages come first
// (the rest of a multi-stage eltwise head, or the sign/reciprocal of a swapped binary head).
// `full_layout`: the layout for operands of the result's full shape (the head's
// blocked destination layout; plain when absent).
PostOps post_ops_for(const Graph& g, const SubGraph& sub, const Shape& out_shape,
                     const std::vector<Unit>& units, size_t first, ValueId current,
                     const std::vector<Eltwise>& pending = {}, size_t min_rank = 0,
                     const std::optional<memory::desc>& full_layout = std::nullopt) {
  PostOps p;
  size_t rank = std::max(min_rank, out_shape.size());
  append(p, pending);
  for (size_t i = first; i < units.size(); ++i) {
    const Unit& u = units[i];
    // Post-ops write the head's destination: the chain may not grow by broadcasting.
    if (g.value(current).shape != out_shape) refuse("the chain is broadcast to a larger shape");
    if (!u.binary) {
      if (u.in != current) refuse("element-wise op is not on the chain");
      append(p, u.stages);
      current = u.out;
      continue;
    }
    const Node& n = *u.binary;
    bool chain_first = n.inputs[0] == current;
    if (chain_first == (n.inputs[1] == current))
      refuse(n.op_type + " must combine the chain with another value");
    ValueId other = chain_first ? n.inputs[1] : n.inputs[0];
    const Value& ov = g.value(other);
    if (ov.producer != kNoNode && sub.nodes.contains(static_cast<size_t>(ov.producer)))
      refuse(n.op_type + " operand computed inside the group");
    if (ov.shape.size() > out_shape.size() || g.value(n.outputs[0]).shape != out_shape)
      refuse("binary operand does not broadcast to the output");
    Shape os = pad_rank(ov.shape, rank), full_shape = pad_rank(out_shape, rank);
    for (size_t d = 0; d < os.size(); ++d)
      if (os[d] != 1 && os[d] != full_shape[d]) refuse("binary operand does not broadcast to the output");
    dnnl::algorithm alg = *binary_of(n.op_type);
    // other - chain = -(chain - other); other / chain = other * chain^-1.
    if (!chain_first && n.op_type == "Div") {
      p.ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_pow, 1.0f, -1.0f);
      alg = dnnl::algorithm::binary_mul;
    }
    memory::desc user = plain(os);
    bool full = os == full_shape;
    p.full_operand = p.full_operand || full;
    memory::desc md = full && full_layout ? *full_layout : user;
    int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(p.ops.len()) | DNNL_ARG_SRC_1;
    p.ops.append_binary(alg, md);
    if (!chain_first && n.op_type == "Sub")
      p.ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, -1.0f, 0.0f);
    if (ov.constant)
      p.constant_args.emplace_back(arg, constant_memory(*ov.constant, user, md));
    else
      p.runtime_args.emplace_back(arg, input_index(g, sub, other), user, md);
    current = n.outputs[0];
  }
  if (sub.outputs.size() != 1 || current != sub.outputs[0] || g.value(current).shape != out_shape)
    refuse("the group must be one chain with one output");
  return p;
}

// Post-ops for a primitive head node_list[0 .. first) producing `head_out`.
PostOps post_ops_after(const Graph& g, const SubGraph& sub, size_t first,
                       const std::optional<memory::desc>& full_layout = std::nullopt) {
  ValueId head_out = g.node(sub.node_list.at(first - 1)).outputs.at(0);
  return post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape, units_of(g, sub, first), 0, head_out, {}, 0,
                      full_layout);
}

template <class PD>
std::unique_ptr<PrimitiveKernel> finish(const PD& pd, const Shape& out_shape, const PostOps& post,
                                        size_t min_rank = 0) {
  auto k = std::make_unique<PrimitiveKernel>(dnnl::primitive(pd), out_shape);
  k->bind_output(pd.dst_desc(), pad_rank(out_shape, std::max(min_rank, out_shape.size())));
  k->set_scratchpad(pd.scratchpad_desc());
  for (const auto& [arg, mem] : post.constant_args) k->bind_constant(arg, mem);
  for (const auto& [arg, input, user, want] : post.runtime_args) k->bind_input(arg, input, user, want);
  return k;
}

dnnl::primitive_attr attr_with(const PostOps& post) {
  dnnl::primitive_attr attr;
  attr.set_post_ops(post.ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// ---- convolution / deconvolution ------------------------------------------------------
std::unique_ptr<Kernel> compile_conv(const Graph& g, const SubGraph& sub, const Node& n, bool transposed) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  // A following BatchNormalization folds into the weights (no pattern offers one after ConvTranspose).
  FoldedConv folded = fold_conv(g, sub);
  Tensor w = folded.weight;
  std::optional<Tensor> folded_bias = folded.bias;
  size_t first_post = folded.nodes_used;
  const Shape& ys = g.value(n.outputs[0]).shape;
  const Shape& out = g.value(sub.outputs.at(0)).shape;
  int64_t group = n.attr_int("group", 1);
  if (group < 1 || w.shape().size() != xs.size() || xs[1] % group != 0 || w.shape()[0] % group != 0)
    refuse("group does not divide the channels");
  Shape ws;
  Tensor wt = conv_weights(w, group, transposed, ws);
  ConvGeometry geo = conv_geometry(n, xs, w.shape(), ys, transposed);
  std::optional<memory::desc> bias_md;
  if (folded_bias) bias_md = plain(folded_bias->shape());
  memory::desc w_any(dims_of(ws), dt::f32, tag::any);
  bool winograd = !transposed && group == 1 && winograd_pays(w.shape(), ys, geo);
  auto build = [&](auto prim, const PostOps& post, const memory::desc& src, const memory::desc& dst) {
    using Prim = decltype(prim);
    auto alg = transposed ? dnnl::algorithm::deconvolution_direct
               : winograd ? dnnl::algorithm::convolution_winograd
                          : dnnl::algorithm::convolution_direct;
    return conv_primitive<Prim>(alg, src, w_any, bias_md, dst, geo, attr_with(post));
  };
  auto make = [&](auto prim) -> std::unique_ptr<Kernel> {
    PostOps post = post_ops_after(g, sub, first_post);
    auto first = [&] {
      try {
        return build(prim, post, any(xs), any(out));
      } catch (const dnnl::error&) {
        if (!winograd) throw;
        winograd = false;  // no Winograd kernel for this ISA or these post-ops
        return build(prim, post, any(xs), any(out));
      }
    };
    auto pd = first();
    if (post.full_operand) {
      // A full-shape operand in plain layout drives oneDNN 2.6 to its slow gemm
      // convolution (~9x): read it in the layout the convolution picks on its own.
      auto alone = build(prim, PostOps{}, any(xs), any(out));
      PostOps blocked = post_ops_after(g, sub, first_post, alone.dst_desc());
      try {
        pd = build(prim, blocked, alone.src_desc(), alone.dst_desc());
        post = std::move(blocked);
      } catch (const dnnl::error&) {
        // keep the plain-operand primitive
      }
    }
    auto k = finish(pd, out, post);
    k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
    k->bind_constant(DNNL_ARG_WEIGHTS, constant_memory(wt, plain(ws), pd.weights_desc()));
    if (bias_md) k->bind_constant(DNNL_ARG_BIAS, constant_memory(*folded_bias, *bias_md));
    return k;
  };
  if (transposed) return make(dnnl::deconvolution_forward());
  return make(dnnl::convolution_forward());
}

// ---- matmul / gemm ----------------------------------------------------------------
Tensor scaled(const Tensor& t, float factor) {
  Tensor out(DType::Float32, t.shape());
  for (int64_t i = 0; i < t.size(); ++i) out.data<float>()[i] = t.data<float>()[i] * factor;
  return out;
}

// MatMul (batch dims broadcast, either operand constant) and Gemm; Gemm's alpha
// and beta are folded into a constant operand and C at compile time.
std::unique_ptr<Kernel> compile_matmul(const Graph& g, const SubGraph& sub, const Node& n) {
  bool gemm = n.op_type == "Gemm";
  const Shape& as = g.value(n.inputs[0]).shape;
  const Shape& bs = g.value(n.inputs[1]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  size_t rank = ys.size();
  if (as.size() < 2 || bs.size() < 2 || as.size() > rank || bs.size() > rank) refuse("1-D MatMul operands");
  if (gemm && rank != 2) refuse("Gemm operands must be 2-D");
  float alpha = gemm ? n.attr_float("alpha", 1.0f) : 1.0f, beta = gemm ? n.attr_float("beta", 1.0f) : 1.0f;
  // Stored layout, rank-padded; a transposed Gemm operand is read through swapped strides.
  auto layout = [&](const Shape& stored, bool trans) {
    Shape s = pad_rank(stored, rank);
    return trans ? memory::desc({s[1], s[0]}, dt::f32, tag::ba) : plain(s);
  };
  memory::desc a_user = layout(as, gemm && n.attr_int("transA", 0) != 0);
  memory::desc b_user = layout(bs, gemm && n.attr_int("transB", 0) != 0);
  const Value& av = g.value(n.inputs[0]);
  const Value& bv = g.value(n.inputs[1]);
  std::optional<Tensor> a_const, b_const;
  if (av.constant) a_const = *av.constant;
  if (bv.constant) b_const = *bv.constant;
  if (alpha != 1.0f) {
    if (b_const)
      b_const = scaled(*b_const, alpha);
    else if (a_const)
      a_const = scaled(*a_const, alpha);
    else
      refuse("Gemm alpha with two runtime operands");
  }
  std::optional<Tensor> bias;
  if (gemm && n.inputs.size() > 2 && n.inputs[2] != kNoValue && beta != 0.0f)
    bias = scaled(constant_of(g, n.inputs[2]), beta);
  std::optional<memory::desc> bias_md;
  if (bias) bias_md = plain(pad_rank(bias->shape(), rank));
  memory::desc a_want = a_const ? memory::desc(a_user.dims(), dt::f32, tag::any) : a_user;
  memory::desc b_want = b_const ? memory::desc(b_user.dims(), dt::f32, tag::any) : b_user;
  // A constant row added first (a Linear exported as MatMul + Add) is the product's bias: oneDNN
  // 2.6's brgemm adds a bias in its kernel, the same row as a binary post-op costs a pass of its own
  // (ConvNeXt-Tiny's 3136 x 96 x 384 product: 1.17 ms, 1.53 ms with the row as a post-op).
  std::vector<Unit> units = units_of(g, sub, 1);
  ValueId head_out = n.outputs[0];
  size_t first = 0;
  if (!bias && !units.empty() && units[0].binary)
    if (const Tensor* row = bias_row(g, *units[0].binary, head_out, ys.back(), rank)) {
      bias = *row;
      bias_md = plain(pad_rank(row->shape(), rank));
      first = 1;
      head_out = units[0].binary->outputs[0];
    }
  PostOps post = post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape, units, first, head_out);
  auto build = [&](const memory::desc& b) {
    auto d = bias_md ? dnnl::matmul::desc(a_want, b, *bias_md, plain(ys))
                     : dnnl::matmul::desc(a_want, b, plain(ys));
    return dnnl::matmul::primitive_desc(d, attr_with(post), cpu());
  };
  dnnl::matmul::primitive_desc pd = build(b_want);
  if (b_const)
    if (std::optional<memory::desc> padded = padded_weights(pd.weights_desc())) try {
        pd = build(*padded);
      } catch (const dnnl::error&) {
      }
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
  if (a_const)
    k->bind_constant(DNNL_ARG_SRC, constant_memory(*a_const, a_user, pd.src_desc()));
  else
    k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), a_user, pd.src_desc());
  if (b_const)
    k->bind_constant(DNNL_ARG_WEIGHTS, constant_memory(*b_const, b_user, pd.weights_desc()));
  else
    k->bind_input(DNNL_ARG_WEIGHTS, input_index(g, sub, n.inputs[1]), b_user, pd.weights_desc());
  if (bias) k->bind_constant(DNNL_ARG_BIAS, constant_memory(*bias, *bias_md));
  return k;
}

// ---- single-op primitives ----------------------------------------------------------------
std::unique_ptr<Kernel> compile_pool(const Graph& g, const SubGraph& sub, const Node& n) {
  auto geo = pool_geometry(g, n);
  if (auto* why = std::get_if<std::string>(&geo)) refuse(*why);
  const PoolGeometry& p = std::get<PoolGeometry>(geo);
  const Shape& xs = g.value(n.inputs[0]).shape;
  PostOps post = post_ops_after(g, sub, 1);
  dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, p.alg, plain(xs),
                                   any(g.value(n.outputs[0]).shape), p.strides, p.kernel, p.dilates, p.pad_l,
                                   p.pad_r);
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
  PostOps post = post_ops_after(g, sub, 1);
  dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, plain(xs), plain(xs),
                                   static_cast<int>(axis));
  dnnl::softmax_v2_forward::primitive_desc pd(d, attr_with(post), cpu());
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
  k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
  return k;
}

std::unique_ptr<Kernel> compile_norm(const Graph& g, const SubGraph& sub, const Node& n) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  using F = dnnl::normalization_flags;
  PostOps post = post_ops_after(g, sub, 1);
  if (n.op_type == "BatchNormalization") {
    float eps = n.attr_float("epsilon", 1e-5f);
    dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, plain(xs), eps,
                                              F::use_global_stats | F::use_scale | F::use_shift);
    dnnl::batch_normalization_forward::primitive_desc pd(d, attr_with(post), cpu());
    auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post);
    k->bind_input(DNNL_ARG_SRC, input_index(g, sub, n.inputs[0]), plain(xs), pd.src_desc());
    const int args[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    if (xs.size() < 2 || n.inputs.size() < 5)
      refuse("BatchNormalization needs rank >= 2 and four parameters");
    for (size_t i = 0; i < 4; ++i) {
      const Tensor& t = constant_of(g, n.inputs[i + 1]);
      if (t.size() != xs[1]) refuse("BatchNormalization parameters must have C elements");
      k->bind_constant(args[i], constant_memory(t, plain(t.shape())));
    }
    return k;
  }
  refuse("LayerNormalization takes the layer-norm path");
}

// Layer normalisation over the last axis (the node or the decomposed chain, its
// epsilon read from the Add constant), with gamma/beta as scale/shift. oneDNN 2.6
// layer norm takes no binary op before it, so a residual Add runs as a binary
// primitive first (into a buffer the kernel owns).
class LayerNormKernel : public Kernel {
 public:
  LayerNormKernel(const Graph& g, const SubGraph& sub, const LayerNormBlock& b) {
    shape_ = g.value(b.x).shape;
    if (shape_.empty()) refuse("layer normalisation of a scalar");
    const int64_t d = shape_.back();
    memory::desc md = plain(shape_);
    using F = dnnl::normalization_flags;
    auto flags = F::use_scale | F::use_shift;
    dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, md, b.epsilon, flags);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::layer_normalization_forward::primitive_desc pd(desc, attr, cpu());
    if (pd.src_desc() != md || pd.dst_desc() != md) refuse("layer norm picked a non-plain layout");
    ln_ = dnnl::layer_normalization_forward(pd);
    if (pd.scratchpad_desc().get_size() > 0) scratchpad_ = memory(pd.scratchpad_desc(), cpu());
    auto row = [&](ValueId v, float fill) {
      Tensor t(DType::Float32, {d});
      for (int64_t i = 0; i < d; ++i) {
        const Tensor* c = v == kNoValue ? nullptr : &*g.value(v).constant;
        t.data<float>()[i] = !c ? fill : c->size() == 1 ? c->data<float>()[0] : c->data<float>()[i];
      }
      return constant_memory(t, plain({d}));
    };
    scale_ = row(b.gamma, 1.0f);
    shift_ = row(b.beta, 0.0f);
    src_ = memory(md, cpu(), DNNL_MEMORY_NONE);
    dst_ = memory(md, cpu(), DNNL_MEMORY_NONE);
    if (b.residual != kNoNode) {
      const Node& add = g.node(b.residual);
      dnnl::binary::desc bd(dnnl::algorithm::binary_add, md, md, md);
      add_ = dnnl::binary(dnnl::binary::primitive_desc(bd, cpu()));
      for (int i = 0; i < 2; ++i) {
        ValueId v = add.inputs[static_cast<size_t>(i)];
        if (g.value(v).constant) {
          operands_[i] = constant_memory(*g.value(v).constant, md);
        } else {
          operands_[i] = memory(md, cpu(), DNNL_MEMORY_NONE);
          operand_inputs_[i] = input_index(g, sub, v);
        }
      }
      sum_ = memory(md, cpu());
    } else {
      x_input_ = input_index(g, sub, b.x);
    }
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, shape_);
    std::lock_guard<std::mutex> lock(mutex_);
    dnnl::stream stream(cpu());
    memory src = src_;
    if (add_) {
      for (int i = 0; i < 2; ++i)
        if (operand_inputs_[i] >= 0)
          operands_[i].set_data_handle(
              const_cast<void*>(inputs[static_cast<size_t>(operand_inputs_[i])]->raw()));
      add_->execute(stream,
                    {{DNNL_ARG_SRC_0, operands_[0]}, {DNNL_ARG_SRC_1, operands_[1]}, {DNNL_ARG_DST, sum_}});
      src = sum_;
    } else {
      src_.set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(x_input_)]->raw()));
    }
    dst_.set_data_handle(y.raw());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst_}, {DNNL_ARG_SCALE, scale_}, {DNNL_ARG_SHIFT, shift_}};
    if (scratchpad_) args[DNNL_ARG_SCRATCHPAD] = *scratchpad_;
    ln_.execute(stream, args);
    stream.wait();
    return {y};
  }

 private:
  Shape shape_;
  dnnl::layer_normalization_forward ln_;
  std::optional<dnnl::binary> add_;
  memory src_, dst_, scale_, shift_, sum_, operands_[2];
  int operand_inputs_[2] = {-1, -1};
  int x_input_ = -1;
  std::optional<memory> scratchpad_;
  std::mutex mutex_;
};

// A chain starting with an element-wise unit (an op or a block): its first stage is
// the primitive, the rest post-ops.
std::unique_ptr<Kernel> compile_eltwise(const Graph& g, const SubGraph& sub) {
  std::vector<Unit> units = units_of(g, sub, 0);
  const Unit& head = units.at(0);
  // At least 2-D: oneDNN 2.6's reference eltwise drops binary post-ops on 1-D tensors.
  const Shape xs = pad_rank(g.value(head.in).shape, std::max<size_t>(2, g.value(head.in).shape.size()));
  std::vector<Eltwise> rest(head.stages.begin() + 1, head.stages.end());
  PostOps post = post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape, units, 1, head.out, rest, 2);
  const Eltwise& e = head.stages.at(0);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, e.alg, plain(xs), e.alpha, e.beta);
  dnnl::eltwise_forward::primitive_desc pd(d, attr_with(post), cpu());
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post, 2);
  k->bind_input(DNNL_ARG_SRC, input_index(g, sub, head.in), plain(xs), pd.src_desc());
  return k;
}

// oneDNN 2.6 broadcasts src0 only on a slow reference path: the full-shape
// operand goes first, a swapped Sub/Div is corrected by a post-op.
std::unique_ptr<Kernel> compile_binary(const Graph& g, const SubGraph& sub, const Node& n) {
  const Shape& y = g.value(n.outputs[0]).shape;
  ValueId a = n.inputs[0], b = n.inputs[1];
  std::vector<Eltwise> pending;
  if (g.value(a).shape != y) {
    std::swap(a, b);
    if (n.op_type == "Sub")
      pending.push_back({dnnl::algorithm::eltwise_linear, -1.0f, 0.0f});  // b - a = -(a - b)
    if (n.op_type == "Div")
      pending.push_back({dnnl::algorithm::eltwise_pow, 1.0f, -1.0f});  // b / a = 1 / (a / b)
  }
  if (g.value(a).shape != y) refuse("neither operand has the result's shape");
  const Shape ys = pad_rank(y, std::max<size_t>(2, y.size()));
  Shape bs = pad_rank(g.value(b).shape, ys.size());
  if (bs.size() != ys.size()) refuse("binary operand of higher rank than its result");
  std::vector<Unit> units = units_of(g, sub, 0);
  PostOps post = post_ops_for(g, sub, g.value(sub.outputs.at(0)).shape, units, 1, n.outputs[0], pending, 2);
  dnnl::binary::desc d(*binary_of(n.op_type), plain(ys), plain(bs), plain(ys));
  dnnl::binary::primitive_desc pd(d, attr_with(post), cpu());
  auto k = finish(pd, g.value(sub.outputs.at(0)).shape, post, 2);
  k->bind_input(DNNL_ARG_SRC_0, input_index(g, sub, a), plain(ys), pd.src_desc(0));
  if (g.value(b).constant)
    k->bind_constant(DNNL_ARG_SRC_1, constant_memory(*g.value(b).constant, plain(bs)));
  else
    k->bind_input(DNNL_ARG_SRC_1, input_index(g, sub, b), plain(bs), pd.src_desc(1));
  return k;
}

}  // namespace

bool eltwise_supported(const Graph& graph, const Node& node) { return eltwise_of(graph, node).has_value(); }
bool block_root(const Graph& graph, const Node& node) {
  if (node.outputs.empty() || node.outputs[0] == kNoValue) return false;
  NodeId id = graph.value(node.outputs[0]).producer;
  return id != kNoNode && block_at(graph, id).has_value();
}
bool binary_op(const std::string& op_type) { return binary_of(op_type).has_value(); }
bool pool_supported(const Graph& graph, const Node& node) {
  return std::holds_alternative<PoolGeometry>(pool_geometry(graph, node));
}

std::unique_ptr<Kernel> compile(const Graph& graph, const SubGraph& sub, const CompileOptions&) {
  const Node& head = graph.node(sub.node_list.at(0));
  if (auto ln = layer_norm_of(graph, sub)) {  // its ReduceMean axes may be an int64 input
    try {
      return std::make_unique<LayerNormKernel>(graph, sub, *ln);
    } catch (const dnnl::error& e) {
      refuse(std::string("primitive creation failed: ") + e.what());
    }
  }
  if (auto b = attention_of(graph, sub))
    return compile_attention(graph, sub, *b);  // its Slices' inputs are int64
  if (head.op_type == "Resize") {              // its sizes input is int64
    try {
      return compile_resize(graph, sub, head);
    } catch (const dnnl::error& e) {
      refuse(std::string("primitive creation failed: ") + e.what());
    }
  }
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
    if (op == "LSTM") return compile_lstm(graph, sub, head);
    if (op == "BatchNormalization" || op == "LayerNormalization") return compile_norm(graph, sub, head);
    // A block (swish, GELU) may start with a Mul or Div: look at units, not the first node.
    std::vector<Unit> units = units_of(graph, sub, 0);
    if (units.at(0).binary) return compile_binary(graph, sub, head);
    return compile_eltwise(graph, sub);
  } catch (const dnnl::error& e) {
    refuse(std::string("primitive creation failed: ") + e.what());
  }
}

std::string library_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string backend_version() { return library_version() + "+r2"; }

// OpenMP's thread count is per calling thread: callers set it on the thread that runs kernels.
void set_threads(int threads) { omp_set_num_threads(threads); }

}  // namespace collage::onednn
