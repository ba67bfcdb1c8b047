// Convolutions inside a region: BatchNormalization folded, post-op chains, the layout rule
// (keep the producer's layout where as fast), Winograd where it pays, and the 1x1 -> 3x3
// depthwise pair as one primitive with oneDNN's depthwise post-op.
#include <algorithm>

#include "backends/onednn_region/region_kernel.h"
#include "core/backend_api/conv_folding.h"

namespace collage::onednn::region {

void RegionKernel::add_conv(const Node& n) {
  bool transposed = n.op_type == "ConvTranspose";
  // Not after a deconvolution: oneDNN 2.6 adds a deconvolution's bias in a slow extra
  // pass (DCGAN's region 3.5 -> 7.2 ms), so its BatchNormalization stays a primitive.
  const Node* bn = transposed ? nullptr : batch_norm_after(g_, n, sub_.nodes);
  IndexSet nodes(g_.nodes.size());
  nodes.add(static_cast<size_t>(&n - &g_.nodes[0]));
  if (bn) nodes.add(static_cast<size_t>(bn - &g_.nodes[0]));
  FoldedConv folded = fold_conv(g_, make_subgraph(g_, nodes));
  ValueId head_out = bn ? bn->outputs[0] : n.outputs[0];
  if (bn) fused_.insert(static_cast<NodeId>(bn - &g_.nodes[0]));
  Shape ws;
  Tensor wt = onednn::conv_weights(folded.weight, n.attr_int("group", 1), transposed, ws);
  onednn::ConvGeometry geo = onednn::conv_geometry(n, g_.value(n.inputs[0]).shape, folded.weight.shape(),
                                                   g_.value(n.outputs[0]).shape, transposed);
  if (transposed)
    add_conv_as(dnnl::deconvolution_forward(), n, head_out, wt, ws, geo, folded.bias);
  else
    add_conv_as(dnnl::convolution_forward(), n, head_out, wt, ws, geo, folded.bias);
}

template <class Prim>
void RegionKernel::add_conv_as(Prim, const Node& n, ValueId head_out, const Tensor& wt, const Shape& ws,
                               const onednn::ConvGeometry& geo, const std::optional<Tensor>& bias) {
  const Shape& xs = g_.value(n.inputs[0]).shape;
  const Shape& ys = g_.value(n.outputs[0]).shape;
  std::optional<memory::desc> bias_md;
  if (bias) bias_md = plain(bias->shape());
  memory::desc w_any(dims_of(ws), dt::f32, tag::any);
  bool winograd = !std::is_same_v<Prim, dnnl::deconvolution_forward> && n.attr_int("group", 1) == 1 &&
                  onednn::winograd_pays(ws, ys, geo);
  auto build = [&](const memory::desc& src, const memory::desc& dst, const dnnl::post_ops& ops) {
    auto alg = std::is_same_v<Prim, dnnl::deconvolution_forward> ? dnnl::algorithm::deconvolution_direct
               : winograd                                        ? dnnl::algorithm::convolution_winograd
                                                                 : dnnl::algorithm::convolution_direct;
    return onednn::conv_primitive<Prim>(alg, src, w_any, bias_md, dst, geo, attr_with(ops));
  };
  // The layout the convolution picks on its own; the producer's layout if that is as fast.
  std::optional<typename Prim::primitive_desc> first;
  if (winograd) {
    try {
      first = build(any(xs), any(ys), {});
    } catch (const dnnl::error&) {
      winograd = false;
    }
  }
  if (!first) first = build(any(xs), any(ys), {});
  auto pd = *first;
  memory::desc have = layout_of(n.inputs[0]);
  if (pd.src_desc() != have) {
    try {
      auto forced = build(have, any(ys), {});
      // Kept when as fast a kernel family on the same ISA: an 8-channel-blocked input
      // would turn an AVX-512 convolution into an AVX2 one (ResNeXt after its 4-channel
      // groups: 3x slower), while jit_1x1 on the producer's nChw16c beats brgconv_1x1
      // on nhwc plus two reorders.
      if ((fast_impl(forced.impl_info_str()) &&
           isa_of(forced.impl_info_str()) == isa_of(pd.impl_info_str())) ||
          !fast_impl(pd.impl_info_str()))
        pd = forced;
    } catch (const dnnl::error&) {
    }
  }
  // Read by a channels-last Permute (ConvNeXt's depthwise conv): written as nhwc, the
  // Permute is a plain view and the LayerNorm and Linear after it read it as they are.
  if (const Node* t = sole_reader(head_out); t && t->op_type == "Transpose" && ys.size() == 4 &&
                                             t->attr_ints("perm") == std::vector<int64_t>{0, 2, 3, 1}) {
    memory::desc nhwc(dims_of(ys), dt::f32, tag::acdb);
    if (pd.dst_desc() != nhwc) {
      try {
        auto channels_last = build(pd.src_desc(), nhwc, {});
        if (fast_impl(channels_last.impl_info_str())) pd = channels_last;
      } catch (const dnnl::error&) {
      }
    }
  }
  Fusion f = chain_after(head_out);
  std::unordered_map<int, memory> args;
  dnnl::post_ops ops;
  if (!f.nodes.empty()) {
    std::unordered_map<int, memory> post_args;
    dnnl::post_ops fused_ops = post_ops_for(f, head_out, pd.dst_desc(), post_args);
    try {
      pd = build(pd.src_desc(), pd.dst_desc(), fused_ops);
      args = std::move(post_args);
      ops = fused_ops;
      mark_fused(f);
    } catch (const dnnl::error&) {
      f = Fusion{{}, head_out, {}};
    }
  }
  std::optional<memory> dst;
  if constexpr (std::is_same_v<Prim, dnnl::convolution_forward>) {
    if (!f.has_binary())
      if (std::optional<FusedDepthwise> dw = fuse_depthwise(n, ws, geo, f.out, pd, ops, build)) {
        dst = new_buffer(dw->pd.dst_desc());
        args[DNNL_ARG_SRC] = in_layout(n.inputs[0], dw->pd.src_desc());
        args[DNNL_ARG_WEIGHTS] = onednn::constant_memory(wt, plain(ws), dw->pd.weights_desc());
        if (bias_md) args[DNNL_ARG_BIAS] = onednn::constant_memory(*bias, *bias_md);
        for (auto& [arg, m] : dw->args) args[arg] = m;
        args[DNNL_ARG_DST] = *dst;
        add_primitive(dw->pd, std::move(args));
        define(dw->out, *dst);
        return;
      }
  }
  if (auto slot = f.has_binary() ? std::nullopt : concat_slot(f.out, pd.dst_desc())) {
    try {
      auto in_place = build(pd.src_desc(), slot->second, ops);
      if (fast_impl(in_place.impl_info_str())) {
        pd = in_place;
        dst = alias(slot->first, slot->second);
        in_place_.insert(f.out);
      }
    } catch (const dnnl::error&) {
    }
  }
  if (!dst) dst = new_buffer(pd.dst_desc());
  args[DNNL_ARG_SRC] = in_layout(n.inputs[0], pd.src_desc());
  args[DNNL_ARG_WEIGHTS] = onednn::constant_memory(wt, plain(ws), pd.weights_desc());
  if (bias_md) args[DNNL_ARG_BIAS] = onednn::constant_memory(*bias, *bias_md);
  args[DNNL_ARG_DST] = *dst;
  add_primitive(pd, std::move(args));
  define(f.out, *dst);
}

template <class Build>
std::optional<RegionKernel::FusedDepthwise> RegionKernel::fuse_depthwise(
    const Node& head, const Shape& head_ws, const onednn::ConvGeometry& geo, ValueId v,
    const dnnl::convolution_forward::primitive_desc& pd, const dnnl::post_ops& head_ops, Build& build) {
  auto all_of = [](const memory::dims& d, memory::dim x) {
    return std::all_of(d.begin(), d.end(), [x](memory::dim e) { return e == x; });
  };
  if (head_ws.size() != 4 || head_ws[2] != 1 || head_ws[3] != 1 || head.attr_int("group", 1) != 1 ||
      !all_of(geo.strides, 1) || !all_of(geo.pad_l, 0) || !all_of(geo.pad_r, 0))
    return std::nullopt;
  const Node* dw = sole_reader(v);
  const Shape& xs = g_.value(v).shape;
  if (!dw || dw->op_type != "Conv" || dw->inputs[0] != v || xs.size() != 4 || xs[0] != 1 ||
      dw->attr_int("group", 1) != xs[1])
    return std::nullopt;
  const Node* bn = batch_norm_after(g_, *dw, sub_.nodes);
  IndexSet nodes(g_.nodes.size());
  nodes.add(static_cast<size_t>(dw - &g_.nodes[0]));
  if (bn) nodes.add(static_cast<size_t>(bn - &g_.nodes[0]));
  std::optional<FoldedConv> folded;
  try {
    folded = fold_conv(g_, make_subgraph(g_, nodes));
  } catch (const Error&) {
    return std::nullopt;  // weights computed in the graph
  }
  if (folded->weight.shape() != Shape{xs[1], 1, 3, 3}) return std::nullopt;
  const Shape& ys = g_.value(dw->outputs[0]).shape;
  const onednn::ConvGeometry dg = onednn::conv_geometry(*dw, xs, folded->weight.shape(), ys, false);
  const memory::dim stride = dg.strides[0];
  if (!all_of(dg.strides, stride) || (stride != 1 && stride != 2) || !all_of(dg.dilates, 0) ||
      !all_of(dg.pad_l, 1) ||
      ys != Shape{1, xs[1], (xs[2] + stride - 1) / stride, (xs[3] + stride - 1) / stride})
    return std::nullopt;
  // The depthwise's activation chain (eltwise only: its binaries would need operands here).
  ValueId dw_out = bn ? bn->outputs[0] : dw->outputs[0];
  Fusion after = chain_after(dw_out);
  if (after.has_binary()) return std::nullopt;
  std::optional<dnnl::convolution_forward::primitive_desc> fused;
  try {
    dnnl::post_ops ops;  // a copy: post_ops handles share what they point to
    for (int i = 0; i < head_ops.len(); ++i) {
      if (head_ops.kind(i) != dnnl::primitive::kind::eltwise) return std::nullopt;
      float scale = 1, alpha = 0, beta = 0;
      dnnl::algorithm alg;
      head_ops.get_params_eltwise(i, scale, alg, alpha, beta);
      ops.append_eltwise(scale, alg, alpha, beta);
    }
    ops.append_dw(dt::f32, dt::f32, dt::f32, 3, stride, 1, 0, {});
    for (const FusedStep& step : after.steps) {
      if (step.block)
        ops.append_eltwise(1.0f, step.block->alg, step.block->alpha, step.block->beta);
      else  // a copy: a range over the temporary optional's value would dangle
        for (const onednn::Eltwise& e :
             std::vector<onednn::Eltwise>(onednn::eltwise_of(g_, *step.node).value()))
          ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
    }
    fused = build(pd.src_desc(), pd.dst_desc(), ops);
    // oneDNN 2.6's AVX-512 1x1 kernel computes garbage with a depthwise post-op on
    // channels-last tensors (tests/unit: a 112-px EfficientNet pair); blocked is right.
    auto miscomputes = [](const dnnl::convolution_forward::primitive_desc& p) {
      return std::string(p.impl_info_str()).rfind("jit_1x1:avx512", 0) == 0 &&
             p.dst_desc().data.format_desc.blocking.inner_nblks == 0;
    };
    if (miscomputes(*fused)) fused = build(any(g_.value(head.inputs[0]).shape), any(xs), ops);
    if (miscomputes(*fused)) return std::nullopt;
  } catch (const dnnl::error&) {
    return std::nullopt;  // a post-op oneDNN does not take after a depthwise one, or no kernel
  }
  if (!fast_impl(fused->impl_info_str()) || fused->dst_desc().dims() != dims_of(ys)) return std::nullopt;
  Shape dws;
  Tensor dwt = onednn::conv_weights(folded->weight, xs[1], false, dws);
  Tensor bias = folded->bias ? *folded->bias : Tensor(DType::Float32, {xs[1]});  // zero-filled
  FusedDepthwise r{*fused, {}, after.nodes.empty() ? dw_out : after.out};
  const int w_arg = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS,
            b_arg = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS;
  r.args[w_arg] = onednn::constant_memory(dwt, plain(dws), fused->query_md(dnnl::query::exec_arg_md, w_arg));
  r.args[b_arg] =
      onednn::constant_memory(bias, plain(bias.shape()), fused->query_md(dnnl::query::exec_arg_md, b_arg));
  fused_.insert(static_cast<NodeId>(dw - &g_.nodes[0]));
  if (bn) fused_.insert(static_cast<NodeId>(bn - &g_.nodes[0]));
  mark_fused(after);
  return r;
}

}  // namespace collage::onednn::region
