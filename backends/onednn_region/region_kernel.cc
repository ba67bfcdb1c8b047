// The region kernel's chain: construction, run, layouts, post-op chains and the plain ops.
#include "backends/onednn_region/region_kernel.h"

#include <algorithm>

namespace collage::onednn::region {

RegionKernel::RegionKernel(const Graph& g, const SubGraph& sub, int threads)
    : g_(g), sub_(sub), threads_(threads) {
  for (size_t i = 0; i < sub.inputs.size(); ++i) {
    const Shape& s = g.value(sub.inputs[i]).shape;
    memory m(plain(s), cpu(), DNNL_MEMORY_NONE);
    external_inputs_.push_back(m);
    vals_[sub.inputs[i]] = Val{m, m.get_desc(), {}};
  }
  for (NodeId id : sub.node_list) {
    if (fused_.count(id)) continue;
    add_node(g.node(id));
  }
  for (ValueId v : sub.outputs) {
    const Shape& s = g.value(v).shape;
    memory user(plain(s), cpu(), DNNL_MEMORY_NONE);
    memory produced = value(v).mem;
    add_step(dnnl::reorder(produced, user), {{DNNL_ARG_FROM, produced}, {DNNL_ARG_TO, user}});
    external_outputs_.push_back(user);
    out_shapes_.push_back(s);
  }
  memory_.plan();
}

std::vector<Tensor> RegionKernel::run(KernelInputs inputs, TensorAllocator& alloc) {
  std::vector<Tensor> outs;
  for (const Shape& s : out_shapes_) outs.push_back(alloc.allocate(DType::Float32, s));
  std::lock_guard<std::mutex> lock(mutex_);  // the intermediate buffers belong to this kernel
  for (size_t i = 0; i < external_inputs_.size(); ++i)
    external_inputs_[i].set_data_handle(const_cast<void*>(inputs[i]->raw()));
  for (size_t o = 0; o < outs.size(); ++o) external_outputs_[o].set_data_handle(outs[o].raw());
  try {
    dnnl::stream stream(cpu());
    for (Step& s : steps_) {
      if (s.own)
        s.own();  // oneDNN's CPU primitives have finished when execute returns
      else
        s.prim.execute(stream, s.args);
    }
    stream.wait();
  } catch (const dnnl::error& e) {
    throw Error(ErrorKind::Internal, std::string("onednn-region: a primitive failed to run: ") + e.what());
  }
  return outs;
}

memory RegionKernel::in_layout(ValueId v, const memory::desc& want) {
  if (is_const(g_, v)) return onednn::constant_memory(*g_.value(v).constant, plain(g_.value(v).shape), want);
  Val& val = vals_.at(v);
  if (val.md == want) return val.mem;
  for (const memory& m : val.converted)
    if (m.get_desc() == want) return m;
  memory m = new_buffer(want);
  add_step(dnnl::reorder(val.mem, m), {{DNNL_ARG_FROM, val.mem}, {DNNL_ARG_TO, m}});
  vals_.at(v).converted.push_back(m);
  return m;
}

void RegionKernel::add_node(const Node& n) {
  const std::string& op = n.op_type;
  if (add_block_from(n)) return;
  if (op == "Conv" || op == "ConvTranspose") return add_conv(n);
  if (op == "BatchNormalization") return add_batch_norm(n);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool")
    return add_pool(n);
  if (onednn::binary_op(op)) return add_binary(n);
  if (op == "Concat") return add_concat(n);
  if (op == "Flatten" || op == "Reshape") return add_reshape(n);
  if (op == "Transpose") return add_transpose(n);
  if (op == "Pad") return void(vals_[n.outputs[0]] = value(n.inputs[0]));  // pads nothing (supported())
  if (op == "MatMul" || op == "Gemm") return add_fully_connected(n);
  if (op == "Softmax" || op == "LogSoftmax") return add_softmax(n);
  if (op == "LayerNormalization") return add_layer_norm(n);
  if (onednn::eltwise_supported(g_, n)) return add_eltwise(n);
  refuse(n.describe() + " has no oneDNN primitive here");
}

const Node* RegionKernel::sole_reader(ValueId v) const {
  const Value& val = g_.value(v);
  if (val.is_graph_output || val.consumers.size() != 1) return nullptr;
  NodeId c = val.consumers[0];
  if (!sub_.nodes.contains(static_cast<size_t>(c)) || fused_.count(c)) return nullptr;
  return &g_.node(c);
}

std::optional<onednn::Block> RegionKernel::block_after(ValueId x) const {
  constexpr int kBlockDepth = 8;
  const Value& val = g_.value(x);
  if (val.consumers.size() < 2) return std::nullopt;
  auto available = [&](NodeId m) { return sub_.nodes.contains(static_cast<size_t>(m)) && !fused_.count(m); };
  std::vector<NodeId> frontier, reached;
  for (NodeId c : val.consumers) {
    if (!available(c)) return std::nullopt;
    frontier.push_back(c);
  }
  for (int depth = 0; depth < kBlockDepth && !frontier.empty(); ++depth) {
    std::vector<NodeId> next;
    for (NodeId m : frontier) {
      if (std::find(reached.begin(), reached.end(), m) != reached.end()) continue;
      reached.push_back(m);
      for (ValueId o : g_.node(m).outputs)
        if (o != kNoValue)
          for (NodeId c : g_.value(o).consumers)
            if (available(c)) next.push_back(c);
    }
    frontier = std::move(next);
  }
  std::optional<onednn::Block> best;
  for (NodeId root : reached) {
    std::optional<onednn::Block> b = onednn::block_at(g_, root);
    if (!b || b->x != x || (best && best->nodes.size() >= b->nodes.size())) continue;
    std::set<NodeId> in(b->nodes.begin(), b->nodes.end());
    bool closed =
        std::all_of(val.consumers.begin(), val.consumers.end(), [&](NodeId c) { return in.count(c); });
    for (NodeId m : b->nodes) {
      closed = closed && available(m);
      if (m == root) continue;
      const Value& inner = g_.value(g_.node(m).outputs[0]);
      closed =
          closed && !inner.is_graph_output &&
          std::all_of(inner.consumers.begin(), inner.consumers.end(), [&](NodeId c) { return in.count(c); });
    }
    if (!closed) continue;
    b->nodes.erase(std::find(b->nodes.begin(), b->nodes.end(), root));
    b->nodes.push_back(root);  // the root last: its output is the block's
    best = std::move(b);
  }
  return best;
}

RegionKernel::Fusion RegionKernel::chain_after(ValueId current) {
  Fusion f{{}, current, {}};
  const Shape& shape = g_.value(current).shape;
  for (;;) {
    if (g_.value(f.out).is_graph_output) break;
    if (std::optional<onednn::Block> b = block_after(f.out)) {
      const Node& root = g_.node(b->nodes.back());
      if (g_.value(root.outputs[0]).shape != shape) break;
      for (NodeId m : b->nodes) f.nodes.push_back(&g_.node(m));
      f.steps.push_back({&root, b->e});
      f.out = root.outputs[0];
      continue;
    }
    const Node* next = sole_reader(f.out);
    if (!next || g_.value(next->outputs[0]).shape != shape) break;
    if (onednn::binary_op(next->op_type)) {
      if (!binary_broadcastable(g_, *next)) break;
      ValueId other = next->inputs[0] == f.out ? next->inputs[1] : next->inputs[0];
      if (other == f.out) break;
      bool chain_first = next->inputs[0] == f.out;
      if (!chain_first && (next->op_type == "Sub" || next->op_type == "Div")) break;
      if (!is_const(g_, other) && !vals_.count(other)) break;  // computed later: not yet available
    } else if (!onednn::eltwise_supported(g_, *next) || next->inputs.size() < 1 || next->inputs[0] != f.out) {
      break;
    }
    f.nodes.push_back(next);
    f.steps.push_back({next, std::nullopt});
    f.out = next->outputs[0];
  }
  return f;
}

dnnl::post_ops RegionKernel::post_ops_for(const Fusion& f, ValueId head_out, const memory::desc& full_layout,
                                          std::unordered_map<int, memory>& args, bool matrix) {
  dnnl::post_ops ops;
  ValueId current = head_out;
  const Shape& shape = g_.value(head_out).shape;
  for (const FusedStep& step : f.steps) {
    const Node* n = step.node;
    if (step.block) {
      ops.append_eltwise(1.0f, step.block->alg, step.block->alpha, step.block->beta);
    } else if (!onednn::binary_op(n->op_type)) {
      std::vector<onednn::Eltwise> stages = onednn::eltwise_of(g_, *n).value();
      for (const onednn::Eltwise& e : stages) ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
    } else {
      ValueId other = n->inputs[0] == current ? n->inputs[1] : n->inputs[0];
      Shape os(shape.size() - std::min(shape.size(), g_.value(other).shape.size()), 1);
      os.insert(os.end(), g_.value(other).shape.begin(), g_.value(other).shape.end());
      if (matrix) os = {1, os.back()};
      bool full = !matrix && os == shape;
      memory::desc md = full ? full_layout : plain(os);
      int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(ops.len()) | DNNL_ARG_SRC_1;
      ops.append_binary(*onednn::binary_of(n->op_type), md);
      if (is_const(g_, other))
        args[arg] = onednn::constant_memory(*g_.value(other).constant, plain(os), md);
      else
        args[arg] = full ? in_layout(other, md) : alias_plain(other, md);
    }
    current = n->outputs[0];
  }
  return ops;
}

memory RegionKernel::alias_plain(ValueId v, const memory::desc& md) {
  memory m = in_layout(v, plain(g_.value(v).shape));
  if (memory_.owns(m)) return alias(m, md);
  memory copy = new_buffer(plain(g_.value(v).shape));
  add_step(dnnl::reorder(m, copy), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, copy}});
  return alias(copy, md);
}

void RegionKernel::add_batch_norm(const Node& n) {
  using F = dnnl::normalization_flags;
  memory::desc src = layout_of(n.inputs[0]);
  // A Relu after it is the primitive's own fused ReLU (DenseNet's pre-activation BN+ReLU).
  const Node* relu = sole_reader(n.outputs[0]);
  if (relu && relu->op_type != "Relu") relu = nullptr;
  auto flags = F::use_global_stats | F::use_scale | F::use_shift;
  if (relu) flags |= F::fuse_norm_relu;
  dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference, src,
                                            n.attr_float("epsilon", 1e-5f), flags);
  dnnl::batch_normalization_forward::primitive_desc pd(d, attr_with({}), cpu());
  if (relu) fused_.insert(static_cast<NodeId>(relu - &g_.nodes[0]));
  std::unordered_map<int, memory> args;
  const int slots[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  for (size_t i = 0; i < 4; ++i) {
    const Tensor& t = *g_.value(n.inputs[i + 1]).constant;
    args[slots[i]] = onednn::constant_memory(t, plain(t.shape()));
  }
  emit(pd, n.inputs[0], relu ? relu->outputs[0] : n.outputs[0], std::move(args));
}

void RegionKernel::add_pool(const Node& n) {
  auto geo = onednn::pool_geometry(g_, n);
  if (auto* why = std::get_if<std::string>(&geo)) refuse(*why);
  const onednn::PoolGeometry& p = std::get<onednn::PoolGeometry>(geo);
  memory::desc src = layout_of(n.inputs[0]);
  const Shape& ys = g_.value(n.outputs[0]).shape;
  auto build = [&](const memory::desc& s, const dnnl::post_ops& ops) {
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, p.alg, s, any(ys), p.strides,
                                     p.kernel, p.dilates, p.pad_l, p.pad_r);
    return dnnl::pooling_v2_forward::primitive_desc(d, attr_with(ops), cpu());
  };
  auto pd = build(src, {});
  Fusion f = chain_after(n.outputs[0]);
  std::unordered_map<int, memory> args;
  if (!f.nodes.empty()) {
    std::unordered_map<int, memory> post_args;
    try {
      dnnl::post_ops ops = post_ops_for(f, n.outputs[0], pd.dst_desc(), post_args);
      pd = build(src, ops);
      args = std::move(post_args);
      mark_fused(f);
    } catch (const dnnl::error&) {
      f = Fusion{{}, n.outputs[0], {}};
    }
  }
  emit(pd, n.inputs[0], f.out, std::move(args));
}

void RegionKernel::add_eltwise(const Node& n) {
  std::vector<onednn::Eltwise> stages = *onednn::eltwise_of(g_, n);
  memory::desc src = layout_of(n.inputs[0]);
  dnnl::post_ops ops;
  for (size_t i = 1; i < stages.size(); ++i)
    ops.append_eltwise(1.0f, stages[i].alg, stages[i].alpha, stages[i].beta);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, stages[0].alg, src, stages[0].alpha,
                                stages[0].beta);
  dnnl::eltwise_forward::primitive_desc pd(d, attr_with(ops), cpu());
  emit(pd, n.inputs[0], n.outputs[0]);
}

bool RegionKernel::add_block_from(const Node& n) {
  if (n.inputs.empty() || n.inputs[0] == kNoValue) return false;
  std::optional<onednn::Block> b = block_after(n.inputs[0]);
  if (!b ||
      std::find(b->nodes.begin(), b->nodes.end(), static_cast<NodeId>(&n - &g_.nodes[0])) == b->nodes.end())
    return false;
  const Node& root = g_.node(b->nodes.back());
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, b->e.alg, layout_of(b->x), b->e.alpha,
                                b->e.beta);
  dnnl::eltwise_forward::primitive_desc pd(d, attr_with({}), cpu());
  for (NodeId m : b->nodes) fused_.insert(m);
  emit(pd, b->x, root.outputs[0]);
  return true;
}

void RegionKernel::add_binary(const Node& n) {
  const Shape& y = g_.value(n.outputs[0]).shape;
  ValueId a = n.inputs[0], b = n.inputs[1];
  dnnl::post_ops ops;
  if (g_.value(a).shape != y || is_const(g_, a)) {
    std::swap(a, b);
    // b - a = -(a - b); b / a = 1 / (a / b)
    if (n.op_type == "Sub") ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, -1.0f, 0.0f);
    if (n.op_type == "Div") ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_pow, 1.0f, -1.0f);
  }
  memory::desc src0 = layout_of(a);
  Shape bs(y.size() - std::min(y.size(), g_.value(b).shape.size()), 1);
  bs.insert(bs.end(), g_.value(b).shape.begin(), g_.value(b).shape.end());
  bool full = bs == y;
  auto build = [&](const memory::desc& s0, const memory::desc* s1_layout = nullptr) {
    memory::desc s1 = full ? s0 : s1_layout ? *s1_layout : plain(bs);
    dnnl::binary::desc d(*onednn::binary_of(n.op_type), s0, s1, s0);
    return dnnl::binary::primitive_desc(d, attr_with(ops), cpu());
  };
  // A per-channel operand of the result's rank (an SE block's [1, C, 1, 1] scale) is tried
  // in the layout its producer wrote: oneDNN's jit binary broadcasts a blocked one, where a
  // plain one made it fall back to the plain layout, reordering x there and back per block.
  const bool blocked_operand = !full && !is_const(g_, b) && g_.value(b).shape == bs;
  bool operand_as_written = false;
  std::optional<dnnl::binary::primitive_desc> pd;
  try {
    pd = build(src0);
    if (!full && !fast_impl(pd->impl_info_str())) {
      if (blocked_operand) try {
          const memory::desc written = layout_of(b);
          auto blocked = build(src0, &written);
          if (fast_impl(blocked.impl_info_str())) pd = blocked, operand_as_written = true;
        } catch (const dnnl::error&) {
        }
      if (!operand_as_written) pd = build(plain(y));
    }
  } catch (const dnnl::error&) {
    pd = build(plain(y));
    operand_as_written = false;
  }
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_SRC_0] = in_layout(a, pd->src_desc(0));
  if (is_const(g_, b))
    args[DNNL_ARG_SRC_1] = onednn::constant_memory(*g_.value(b).constant, plain(bs), pd->src_desc(1));
  else if (full || operand_as_written)
    args[DNNL_ARG_SRC_1] = in_layout(b, pd->src_desc(1));
  else
    args[DNNL_ARG_SRC_1] = alias_plain(b, pd->src_desc(1));
  memory dst = new_buffer(pd->dst_desc());
  args[DNNL_ARG_DST] = dst;
  add_primitive(*pd, std::move(args));
  define(n.outputs[0], dst);
}

void RegionKernel::add_reshape(const Node& n) {
  memory m = in_layout(n.inputs[0], plain(g_.value(n.inputs[0]).shape));
  if (!memory_.owns(m)) {  // a region input: copy it, the view needs a buffer of ours
    memory copy = new_buffer(m.get_desc());
    add_step(dnnl::reorder(m, copy), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, copy}});
    m = copy;
  }
  define(n.outputs[0], alias(m, plain(g_.value(n.outputs[0]).shape)));
}

void RegionKernel::add_transpose(const Node& n) {
  const Shape& xs = g_.value(n.inputs[0]).shape;
  std::vector<int64_t> perm = n.attr_ints("perm", {});
  if (perm.empty())
    for (size_t i = xs.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != xs.size()) refuse(n.describe() + ": perm does not match the input's rank");
  std::vector<int> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse.at(static_cast<size_t>(perm[i])) = static_cast<int>(i);
  memory m = value(n.inputs[0]).mem;
  if (!memory_.owns(m)) {  // a region input: copy it, the view needs a buffer of ours
    memory copy = new_buffer(m.get_desc());
    add_step(dnnl::reorder(m, copy), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, copy}});
    m = copy;
  }
  define(n.outputs[0], alias(m, m.get_desc().permute_axes(inverse)));
}

bool RegionKernel::row_broadcast_only(const Fusion& f, ValueId head_out) {
  ValueId current = head_out;
  size_t rank = g_.value(head_out).shape.size();
  for (const FusedStep& step : f.steps) {
    if (!step.block && onednn::binary_op(step.node->op_type)) {
      ValueId other = step.node->inputs[0] == current ? step.node->inputs[1] : step.node->inputs[0];
      const Shape& os = g_.value(other).shape;
      if (os.size() > rank) return false;
      for (size_t d = 0; d + 1 < os.size(); ++d)
        if (os[d] != 1) return false;
    }
    current = step.node->outputs[0];
  }
  return true;
}

void RegionKernel::add_fully_connected(const Node& n) {
  bool gemm = n.op_type == "Gemm";
  const Shape& as = g_.value(n.inputs[0]).shape;
  const Tensor& w = *g_.value(n.inputs[1]).constant;
  const Shape& ys = g_.value(n.outputs[0]).shape;
  float alpha = gemm ? n.attr_float("alpha", 1.0f) : 1.0f, beta = gemm ? n.attr_float("beta", 1.0f) : 1.0f;
  Tensor wt = w;
  if (alpha != 1.0f)
    for (int64_t i = 0; i < wt.size(); ++i) wt.data<float>()[i] = w.data<float>()[i] * alpha;
  bool trans_b = gemm && n.attr_int("transB", 0) != 0;
  int64_t k = as.back(), out_n = ys.back();
  Fusion f = chain_after(n.outputs[0]);
  // [.., M, K] x [K, N] as one [rows, K] x [K, N] matrix product: oneDNN would otherwise run
  // one small product per leading index (ConvNeXt's [1, 56, 56, 96] Linear as 56 of M = 56).
  memory src = in_layout(n.inputs[0], plain(as));
  bool matrix = as.size() > 2 && memory_.owns(src) && row_broadcast_only(f, n.outputs[0]);
  Shape mas = as, mys = ys;
  if (matrix) {
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < as.size(); ++d) rows *= as[d];
    mas = {rows, k};
    mys = {rows, out_n};
    src = alias(src, plain(mas));
  }
  size_t rank = mys.size();
  Shape wshape(rank - 2, 1);
  wshape.push_back(k);
  wshape.push_back(out_n);
  memory::desc w_user =
      trans_b ? memory::desc(dims_of(wshape), dt::f32, rank == 2 ? tag::ba : tag::acb) : plain(wshape);
  memory::desc w_any(dims_of(wshape), dt::f32, tag::any);
  std::optional<Tensor> bias;
  if (gemm && n.inputs.size() > 2 && n.inputs[2] != kNoValue && beta != 0.0f) {
    const Tensor& c = *g_.value(n.inputs[2]).constant;
    Shape bshape(rank - 1, 1);
    bshape.push_back(out_n);
    bias = Tensor(DType::Float32, bshape);
    std::vector<double> cv = c.to_double_vector();
    for (int64_t i = 0; i < out_n; ++i)
      bias->data<float>()[i] = static_cast<float>(beta * cv[cv.size() == 1 ? 0 : static_cast<size_t>(i)]);
  }
  if (add_streamed_row_product(n, wt, trans_b, bias)) return;
  // An erf GELU ending the chain runs as the region's own pass over the output (stream-gemm's, a third
  // of the cost of oneDNN 2.6's gelu_erf post-op: ConvNeXt-Tiny's whole region 1.7 ms faster at 1
  // thread); the steps before it stay post-ops.
  const bool own_gelu = !f.steps.empty() && f.steps.back().block &&
                        f.steps.back().block->alg == dnnl::algorithm::eltwise_gelu_erf &&
                        stream_gemm::supported();
  Fusion posts = f;
  if (own_gelu) {
    posts.steps.pop_back();
    const Node* last = posts.steps.empty() ? nullptr : posts.steps.back().node;
    posts.nodes.erase(
        last ? std::find(posts.nodes.begin(), posts.nodes.end(), last) + 1 : posts.nodes.begin(),
        posts.nodes.end());
  }
  // A constant row added first (a Linear exported as MatMul + Add) is the product's bias: oneDNN
  // 2.6's brgemm adds a bias in its kernel; the same row as a binary post-op made ConvNeXt-Tiny's
  // 3136 x 96 x 384 products 2.12 ms instead of 1.78 in the region.
  ValueId posts_head = n.outputs[0];
  if (!bias && !posts.steps.empty() && !posts.steps.front().block)
    if (const Tensor* row =
            onednn::bias_row(g_, *posts.steps.front().node, n.outputs[0], out_n, mys.size())) {
      const Node* add = posts.steps.front().node;
      Shape bshape(mys.size() - 1, 1);
      bshape.push_back(out_n);
      bias = Tensor(DType::Float32, bshape);
      std::copy_n(row->data<float>(), out_n, bias->data<float>());
      posts.steps.erase(posts.steps.begin());
      posts.nodes.erase(std::find(posts.nodes.begin(), posts.nodes.end(), add));
      posts_head = add->outputs[0];
    }
  std::unordered_map<int, memory> args;
  auto build = [&](const dnnl::post_ops& ops, const memory::desc& w) {
    auto d = bias ? dnnl::matmul::desc(plain(mas), w, plain(bias->shape()), plain(mys))
                  : dnnl::matmul::desc(plain(mas), w, plain(mys));
    return dnnl::matmul::primitive_desc(d, attr_with(ops), cpu());
  };
  dnnl::post_ops ops;
  auto pd = build(ops, w_any);
  if (!posts.nodes.empty()) {
    std::unordered_map<int, memory> post_args;
    try {
      dnnl::post_ops fused_ops = post_ops_for(posts, posts_head, plain(mys), post_args, matrix);
      pd = build(fused_ops, w_any);
      ops = fused_ops;
      args = std::move(post_args);
    } catch (const dnnl::error&) {
      if (posts_head != n.outputs[0]) bias.reset();
      pd = build(ops, w_any);
      f = posts = Fusion{{}, n.outputs[0], {}};
    }
  }
  mark_fused(f);
  if (std::optional<memory::desc> padded = onednn::padded_weights(pd.weights_desc())) try {
      pd = build(ops, *padded);
    } catch (const dnnl::error&) {
    }
  args[DNNL_ARG_SRC] = src;
  args[DNNL_ARG_WEIGHTS] = onednn::constant_memory(wt, w_user, pd.weights_desc());
  if (bias) args[DNNL_ARG_BIAS] = onednn::constant_memory(*bias, plain(bias->shape()));
  memory dst = new_buffer(pd.dst_desc());
  args[DNNL_ARG_DST] = dst;
  add_primitive(pd, std::move(args));
  if (own_gelu && !f.nodes.empty())
    add_step(dnnl::primitive(), {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}},
             [dst, count = shape_size(ys), threads = threads_] {
               stream_gemm::activate(stream_gemm::EpilogueStep::Kind::GeluErf,
                                     static_cast<float*>(dst.get_data_handle()), count, threads);
             });
  define(f.out, matrix ? alias(dst, plain(ys)) : dst);
}

bool RegionKernel::add_streamed_row_product(const Node& n, const Tensor& wt, bool trans_b,
                                            const std::optional<Tensor>& bias) {
  constexpr int64_t kMinWeightFloats = 1 << 18;  // 1 MiB: smaller weights stay in L2 between runs
  const Shape& as = g_.value(n.inputs[0]).shape;
  const Shape& ys = g_.value(n.outputs[0]).shape;
  const int64_t k = as.back(), out_n = ys.back();
  if (shape_size(as) != k || k * out_n < kMinWeightFloats || !stream_gemm::supported()) return false;
  auto packed = std::make_shared<const stream_gemm::PackedWeights>(
      stream_gemm::pack_weights(wt.data<float>(), k, out_n, trans_b ? k : out_n, trans_b));
  auto row = bias ? std::make_shared<const Tensor>(*bias) : nullptr;
  std::vector<stream_gemm::EpilogueStep> epilogue;
  if (row) epilogue.push_back({stream_gemm::EpilogueStep::Kind::AddRow, row->data<float>(), 0});
  memory src = in_layout(n.inputs[0], plain(as));
  memory dst = new_buffer(plain(ys));
  add_step(dnnl::primitive(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
           [packed, row, epilogue, src, dst, k, out_n, threads = threads_] {
             stream_gemm::gemm(static_cast<const float*>(src.get_data_handle()), 1, k, *packed,
                               static_cast<float*>(dst.get_data_handle()), out_n, epilogue, threads);
           });
  define(n.outputs[0], dst);
  return true;
}

void RegionKernel::add_softmax(const Node& n) {
  const Shape& xs = g_.value(n.inputs[0]).shape;
  auto alg = n.op_type == "LogSoftmax" ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
  dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, plain(xs), plain(xs),
                                   static_cast<int>(xs.size()) - 1);
  dnnl::softmax_v2_forward::primitive_desc pd(d, attr_with({}), cpu());
  emit(pd, n.inputs[0], n.outputs[0]);
}

void RegionKernel::add_layer_norm(const Node& n) {
  using F = dnnl::normalization_flags;
  const Shape& xs = g_.value(n.inputs[0]).shape;
  bool has_bias = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
  dnnl::layer_normalization_forward::desc d(dnnl::prop_kind::forward_inference, plain(xs),
                                            n.attr_float("epsilon", 1e-5f),
                                            has_bias ? F::use_scale | F::use_shift : F::use_scale);
  dnnl::layer_normalization_forward::primitive_desc pd(d, attr_with({}), cpu());
  std::unordered_map<int, memory> args;
  const Tensor& scale = *g_.value(n.inputs[1]).constant;
  if (scale.size() != xs.back()) refuse("LayerNormalization scale must cover the last axis");
  args[DNNL_ARG_SCALE] = onednn::constant_memory(scale, plain({scale.size()}));
  if (has_bias) {
    const Tensor& b = *g_.value(n.inputs[2]).constant;
    if (b.size() != xs.back()) refuse("LayerNormalization bias must cover the last axis");
    args[DNNL_ARG_SHIFT] = onednn::constant_memory(b, plain({b.size()}));
  }
  emit(pd, n.inputs[0], n.outputs[0], std::move(args));
}

}  // namespace collage::onednn::region
