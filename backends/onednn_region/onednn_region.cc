#include "backends/onednn_region/onednn_region.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_fusion.h"
#include "backends/onednn/onednn_kernels.h"
#include "backends/onednn_region/region_memory.h"
#include "core/backend_api/conv_folding.h"

namespace collage {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using onednn::any;
using onednn::cpu;
using onednn::dims_of;
using onednn::plain;

[[noreturn]] void refuse(const std::string& why) {
  throw Error(ErrorKind::Unsupported, "onednn-region: " + why);
}

size_t rank_of(const Graph& g, ValueId v) { return g.value(v).shape.size(); }
bool is_const(const Graph& g, ValueId v) { return v != kNoValue && g.value(v).constant.has_value(); }
bool single_output(const Node& n) {
  return n.outputs.size() == 1 || (n.outputs.size() > 1 && n.outputs[1] == kNoValue);
}

// A binary op oneDNN computes with one operand of the result's shape and the other
// broadcast to it (or of the same shape).
bool binary_broadcastable(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || n.inputs[0] == kNoValue || n.inputs[1] == kNoValue) return false;
  const Shape& y = g.value(n.outputs[0]).shape;
  ValueId full = g.value(n.inputs[0]).shape == y ? n.inputs[0] : n.inputs[1];
  ValueId other = full == n.inputs[0] ? n.inputs[1] : n.inputs[0];
  if (g.value(full).shape != y || is_const(g, full) || y.empty() || y.size() > 5) return false;
  const Shape& o = g.value(other).shape;
  if (o.size() > y.size()) return false;
  for (size_t d = 0; d < o.size(); ++d) {
    int64_t od = o[o.size() - 1 - d], yd = y[y.size() - 1 - d];
    if (od != 1 && od != yd) return false;
  }
  return true;
}

// Whether `n` is an inner node of a multi-node eltwise block (onednn::block_at) whose root is
// at most three readers further on.
bool inside_eltwise_block(const Graph& g, const Node& n) {
  NodeId id = static_cast<NodeId>(&n - &g.nodes[0]);
  std::vector<NodeId> frontier = {id};
  for (int depth = 0; depth < 4 && !frontier.empty(); ++depth) {
    std::vector<NodeId> next;
    for (NodeId m : frontier) {
      if (auto b = onednn::block_at(g, m); b && std::count(b->nodes.begin(), b->nodes.end(), id)) return true;
      for (ValueId o : g.node(m).outputs)
        if (o != kNoValue) next.insert(next.end(), g.value(o).consumers.begin(), g.value(o).consumers.end());
    }
    frontier = std::move(next);
  }
  return false;
}

bool pads_nothing(const Graph& g, const Node& n) {
  if (n.attr_string("mode", "constant") != "constant" || n.inputs.size() < 2 || !is_const(g, n.inputs[1]))
    return false;
  for (double p : g.value(n.inputs[1]).constant->to_double_vector())
    if (p != 0) return false;
  return true;
}

// What a region may hold: float32 tensors of rank 1-5; weights constant.
bool supported(const Graph& g, const Node& n) {
  if (!n.domain.empty() || n.inputs.empty() || n.inputs[0] == kNoValue || n.outputs.empty() ||
      !single_output(n))
    return false;
  if (g.value(n.outputs[0]).dtype != DType::Float32) return false;
  // A Pad that pads nothing (torchvision's DenseNet transitions export AvgPool2d with one).
  if (n.op_type == "Pad") return g.value(n.inputs[0]).dtype == DType::Float32 && pads_nothing(g, n);
  for (ValueId v : n.inputs)
    if (v != kNoValue && g.value(v).dtype != DType::Float32) return false;
  // Either operand may be the constant one (torchvision's `layer_scale * x`): add_binary swaps.
  if (onednn::binary_op(n.op_type)) return binary_broadcastable(g, n);
  if (is_const(g, n.inputs[0]) && n.op_type != "Concat") return false;
  size_t r = rank_of(g, n.inputs[0]);
  if (r < 1 || r > 5 || rank_of(g, n.outputs[0]) < 1) return false;
  const std::string& op = n.op_type;
  if (op == "Conv" || op == "ConvTranspose")
    return r >= 3 && is_const(g, n.inputs[1]) && input_absent_or_constant(g, n, 2) &&
           n.attr_int("group", 1) >= 1 && g.value(n.inputs[0]).shape[1] % n.attr_int("group", 1) == 0;
  if (op == "BatchNormalization") {
    if (r < 2 || n.inputs.size() < 5 || n.attr_int("training_mode", 0) != 0) return false;
    for (size_t i = 1; i < 5; ++i)
      if (!is_const(g, n.inputs[i]) || g.value(n.inputs[i]).constant->size() != g.value(n.inputs[0]).shape[1])
        return false;
    return true;
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool")
    return r >= 3 && n.attr_int("storage_order", 0) == 0 && onednn::pool_supported(g, n);
  if (op == "Concat") {
    for (ValueId v : n.inputs)
      if (v == kNoValue || is_const(g, v) || rank_of(g, v) != r) return false;
    return true;
  }
  if (op == "Flatten") return true;
  if (op == "Reshape") return is_const(g, n.inputs.at(1));
  // A view of the same memory with its axes permuted (a channels-last Permute costs nothing
  // when the producer wrote that layout).
  if (op == "Transpose") return true;
  // Only as part of the erf GELU, which runs as one eltwise (block_after).
  if (op == "Erf") return inside_eltwise_block(g, n);
  // Fully connected: activations [.., K] times constant [K, N] (MatMul) or Gemm with constant B and C.
  if (op == "MatMul") return r >= 2 && is_const(g, n.inputs.at(1)) && rank_of(g, n.inputs[1]) == 2;
  if (op == "Gemm") {
    if (r != 2 || !is_const(g, n.inputs.at(1)) || n.attr_int("transA", 0) != 0 ||
        !input_absent_or_constant(g, n, 2))
      return false;
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
      int64_t out_n = g.value(n.outputs[0]).shape.back(), c = g.value(n.inputs[2]).constant->size();
      if (c != out_n && c != 1) return false;
    }
    return true;
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    int64_t axis = n.attr_int("axis", n.opset >= 13 ? -1 : 1);
    return n.opset >= 13 ? (axis == -1 || axis == static_cast<int64_t>(r) - 1)
                         : (r == 2 && (axis == 1 || axis == -1));
  }
  if (op == "LayerNormalization") {
    int64_t axis = n.attr_int("axis", -1);
    return (axis == -1 || axis == static_cast<int64_t>(r) - 1) && is_const(g, n.inputs.at(1)) &&
           input_absent_or_constant(g, n, 2);
  }
  return onednn::eltwise_supported(g, n);
}

// oneDNN's reference kernels and its gemm-based (im2col) convolutions are far
// slower than a reorder into the layout a JIT/brgemm kernel wants.
bool fast_impl(const std::string& impl) {
  return impl.rfind("ref", 0) != 0 && impl.find("gemm") == std::string::npos;
}

// "jit_1x1:avx512_core" -> "avx512_core".
std::string isa_of(const std::string& impl) {
  size_t colon = impl.rfind(':');
  return colon == std::string::npos ? std::string() : impl.substr(colon + 1);
}

class RegionKernel : public Kernel {
 public:
  RegionKernel(const Graph& g, const SubGraph& sub) : g_(g), sub_(sub) {
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

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    std::vector<Tensor> outs;
    for (const Shape& s : out_shapes_) outs.push_back(alloc.allocate(DType::Float32, s));
    std::lock_guard<std::mutex> lock(mutex_);  // the intermediate buffers belong to this kernel
    for (size_t i = 0; i < external_inputs_.size(); ++i)
      external_inputs_[i].set_data_handle(const_cast<void*>(inputs[i]->raw()));
    for (size_t o = 0; o < outs.size(); ++o) external_outputs_[o].set_data_handle(outs[o].raw());
    try {
      dnnl::stream stream(cpu());
      for (Step& s : steps_) s.prim.execute(stream, s.args);
      stream.wait();
    } catch (const dnnl::error& e) {
      throw Error(ErrorKind::Internal, std::string("onednn-region: a primitive failed to run: ") + e.what());
    }
    return outs;
  }

 private:
  struct Val {
    memory mem;
    memory::desc md;
    std::vector<memory> converted;  // the same value in other layouts, made on demand
  };
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, memory> args;
  };

  const Val& value(ValueId v) {
    auto it = vals_.find(v);
    if (it == vals_.end()) refuse("'" + g_.value(v).name + "' is read before it is computed");
    return it->second;
  }

  // `v` in layout `want`: the value itself, or a copy reordered once (and cached).
  memory in_layout(ValueId v, const memory::desc& want) {
    if (is_const(g_, v))
      return onednn::constant_memory(*g_.value(v).constant, plain(g_.value(v).shape), want);
    Val& val = vals_.at(v);
    if (val.md == want) return val.mem;
    for (const memory& m : val.converted)
      if (m.get_desc() == want) return m;
    memory m = new_buffer(want);
    add_step(dnnl::reorder(val.mem, m), {{DNNL_ARG_FROM, val.mem}, {DNNL_ARG_TO, m}});
    vals_.at(v).converted.push_back(m);
    return m;
  }
  memory::desc layout_of(ValueId v) { return value(v).md; }

  memory new_buffer(const memory::desc& md) { return memory_.buffer(md, static_cast<int>(steps_.size())); }
  // A second view of an internal buffer (a reshape, a slice of a Concat's destination).
  memory alias(const memory& of, const memory::desc& md) { return memory_.alias(of, md); }
  void define(ValueId v, const memory& m) { vals_[v] = Val{m, m.get_desc(), {}}; }

  void add_step(dnnl::primitive prim, std::unordered_map<int, memory> args) {
    for (const auto& [arg, m] : args) memory_.touch(m, static_cast<int>(steps_.size()));
    steps_.push_back({std::move(prim), std::move(args)});
  }

  template <class PD>
  void add_primitive(const PD& pd, std::unordered_map<int, memory> args) {
    size_t pad = pd.scratchpad_desc().get_size();
    if (pad > 0) {
      if (!scratchpad_ || scratchpad_->get_desc().get_size() < pad) {
        memory::desc md({static_cast<memory::dim>(pad)}, dt::u8, tag::a);
        scratchpad_ = memory(md, cpu());
        for (Step& s : steps_)
          if (s.args.count(DNNL_ARG_SCRATCHPAD)) s.args[DNNL_ARG_SCRATCHPAD] = *scratchpad_;
      }
      args[DNNL_ARG_SCRATCHPAD] = *scratchpad_;
    }
    if constexpr (std::is_same_v<PD, dnnl::concat::primitive_desc>)
      add_step(dnnl::concat(pd), std::move(args));
    else
      add_step(dnnl::primitive(pd), std::move(args));
  }

  // The common tail of a one-input primitive: its input in the layout it reads, a new
  // buffer for its output, the step, and `out` defined as that buffer.
  template <class PD>
  void emit(const PD& pd, ValueId in, ValueId out, std::unordered_map<int, memory> args = {}) {
    args[DNNL_ARG_SRC] = in_layout(in, pd.src_desc());
    memory dst = new_buffer(pd.dst_desc());
    args[DNNL_ARG_DST] = dst;
    add_primitive(pd, std::move(args));
    define(out, dst);
  }

  static dnnl::primitive_attr attr_with(const dnnl::post_ops& ops) {
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }

  // ---- nodes ------------------------------------------------------------------------
  void add_node(const Node& n) {
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

  // The only reader of `v` inside the region, if `v` is needed nowhere else.
  const Node* sole_reader(ValueId v) const {
    const Value& val = g_.value(v);
    if (val.is_graph_output || val.consumers.size() != 1) return nullptr;
    NodeId c = val.consumers[0];
    if (!sub_.nodes.contains(static_cast<size_t>(c)) || fused_.count(c)) return nullptr;
    return &g_.node(c);
  }

  // A multi-node eltwise block reading `x` (SiLU as x*Sigmoid(x), the tanh GELU): every reader
  // of x is one of its nodes and every inner value is read only inside it, all of them in the
  // region and not yet fused. Found from its root, at most kBlockDepth readers away from x;
  // the root is the last of the returned nodes.
  std::optional<onednn::Block> block_after(ValueId x) const {
    constexpr int kBlockDepth = 8;
    const Value& val = g_.value(x);
    if (val.consumers.size() < 2) return std::nullopt;
    auto available = [&](NodeId m) {
      return sub_.nodes.contains(static_cast<size_t>(m)) && !fused_.count(m);
    };
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
        closed = closed && !inner.is_graph_output &&
                 std::all_of(inner.consumers.begin(), inner.consumers.end(),
                             [&](NodeId c) { return in.count(c); });
      }
      if (!closed) continue;
      b->nodes.erase(std::find(b->nodes.begin(), b->nodes.end(), root));
      b->nodes.push_back(root);  // the root last: its output is the block's
      best = std::move(b);
    }
    return best;
  }

  // Post-ops for the chain after a head producing `current` of shape `shape`: eltwise
  // ops, eltwise blocks (block_after) and binary ops whose other operand is already
  // computed (or constant), as long as every intermediate is read only by the chain.
  struct FusedStep {
    const Node* node;                      // the op, or a block's root
    std::optional<onednn::Eltwise> block;  // set for a block: one eltwise post-op for its nodes
  };
  struct Fusion {
    std::vector<const Node*> nodes;  // every fused node, a block's inner ones included
    ValueId out;
    std::vector<FusedStep> steps;
    bool has_binary() const {
      return std::any_of(steps.begin(), steps.end(),
                         [](const FusedStep& s) { return !s.block && onednn::binary_op(s.node->op_type); });
    }
  };
  Fusion chain_after(ValueId current) {
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
      } else if (!onednn::eltwise_supported(g_, *next) || next->inputs.size() < 1 ||
                 next->inputs[0] != f.out) {
        break;
      }
      f.nodes.push_back(next);
      f.steps.push_back({next, std::nullopt});
      f.out = next->outputs[0];
    }
    return f;
  }

  // Appends the fused chain's post-ops; binary operands of the full shape are read in `full_layout`.
  // `matrix`: the primitive computes the output viewed as [rows, last axis]
  // (row_broadcast_only holds), so broadcast operands are read as [1, last axis].
  dnnl::post_ops post_ops_for(const Fusion& f, ValueId head_out, const memory::desc& full_layout,
                              std::unordered_map<int, memory>& args, bool matrix = false) {
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
  // A broadcast operand of lower rank viewed with the rank-padded plain desc.
  memory alias_plain(ValueId v, const memory::desc& md) {
    memory m = in_layout(v, plain(g_.value(v).shape));
    if (memory_.owns(m)) return alias(m, md);
    memory copy = new_buffer(plain(g_.value(v).shape));
    add_step(dnnl::reorder(m, copy), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, copy}});
    return alias(copy, md);
  }
  void mark_fused(const Fusion& f) {
    for (const Node* n : f.nodes) fused_.insert(static_cast<NodeId>(n - &g_.nodes[0]));
  }

  void add_conv(const Node& n) {
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
  void add_conv_as(Prim, const Node& n, ValueId head_out, const Tensor& wt, const Shape& ws,
                   const onednn::ConvGeometry& geo, const std::optional<Tensor>& bias) {
    const Shape& xs = g_.value(n.inputs[0]).shape;
    const Shape& ys = g_.value(n.outputs[0]).shape;
    std::optional<memory::desc> bias_md;
    if (bias) bias_md = plain(bias->shape());
    memory::desc w_any(dims_of(ws), dt::f32, tag::any);
    bool winograd = !std::is_same_v<Prim, dnnl::deconvolution_forward> && n.attr_int("group", 1) == 1 &&
                    onednn::winograd_pays(ws, ys, geo);
    auto build = [&](const memory::desc& src, const memory::desc& dst, const dnnl::post_ops& ops) {
      using P = dnnl::prop_kind;
      auto alg = std::is_same_v<Prim, dnnl::deconvolution_forward> ? dnnl::algorithm::deconvolution_direct
                 : winograd                                        ? dnnl::algorithm::convolution_winograd
                                                                   : dnnl::algorithm::convolution_direct;
      auto d = bias_md ? typename Prim::desc(P::forward_inference, alg, src, w_any, *bias_md, dst,
                                             geo.strides, geo.dilates, geo.pad_l, geo.pad_r)
                       : typename Prim::desc(P::forward_inference, alg, src, w_any, dst, geo.strides,
                                             geo.dilates, geo.pad_l, geo.pad_r);
      return typename Prim::primitive_desc(d, attr_with(ops), cpu());
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

  // ---- depthwise fusion ----------------------------------------------------------------
  // A 1x1 convolution whose (activated) output only a 3x3 depthwise convolution of stride 1
  // or 2 and padding 1 reads (the expand -> depthwise pair of every MobileNet/EfficientNet
  // block) runs with that one as oneDNN's depthwise post-op, and the depthwise's own
  // activation after it: the expanded tensor, the block's largest, is never written out.
  struct FusedDepthwise {
    dnnl::convolution_forward::primitive_desc pd;
    std::unordered_map<int, memory> args;  // the depthwise weights and bias
    ValueId out;
  };
  template <class Build>
  std::optional<FusedDepthwise> fuse_depthwise(const Node& head, const Shape& head_ws,
                                               const onednn::ConvGeometry& geo, ValueId v,
                                               const dnnl::convolution_forward::primitive_desc& pd,
                                               const dnnl::post_ops& head_ops, Build& build) {
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
    r.args[w_arg] =
        onednn::constant_memory(dwt, plain(dws), fused->query_md(dnnl::query::exec_arg_md, w_arg));
    r.args[b_arg] =
        onednn::constant_memory(bias, plain(bias.shape()), fused->query_md(dnnl::query::exec_arg_md, b_arg));
    fused_.insert(static_cast<NodeId>(dw - &g_.nodes[0]));
    if (bn) fused_.insert(static_cast<NodeId>(bn - &g_.nodes[0]));
    mark_fused(after);
    return r;
  }

  // ---- in-place Concat ------------------------------------------------------------------
  // A channel Concat whose inputs are produced in the region writes nothing itself: each
  // producer that is a convolution writes its slice of the Concat's destination (a
  // sub-memory), the other inputs are copied into theirs. The destination takes the layout
  // of the first producer, when every input's channel count is a multiple of its block.
  //
  // Concats whose inputs are a prefix of another's (a DenseNet block: layer k concatenates
  // x0..x(k-1), the block's end x0..xL) form one family sharing the longest one's
  // destination: each x is written once at its offset, and a member's result is the leading
  // channels of that buffer, a dense view when the batch is 1 and the layout keeps channel
  // blocks outermost (plain or channel-blocked, not channels-last). Slots are written in
  // order and never again, so a view read after a later slot is filled still holds its own.
  struct ConcatPlan {
    memory dst;
    memory::desc md;
    tag layout = tag::undef;
    bool ok = false;
  };

  static std::vector<std::pair<tag, int64_t>> channel_blocked_tags(size_t rank) {
    if (rank == 4) return {{tag::aBcd16b, 16}, {tag::aBcd8b, 8}, {tag::abcd, 1}, {tag::acdb, 1}};
    if (rank == 5) return {{tag::aBcde16b, 16}, {tag::aBcde8b, 8}, {tag::abcde, 1}, {tag::acdeb, 1}};
    if (rank == 3) return {{tag::aBc16b, 16}, {tag::aBc8b, 8}, {tag::abc, 1}, {tag::acb, 1}};
    return {};
  }
  static bool channels_last(tag t) { return t == tag::acdb || t == tag::acdeb || t == tag::acb; }

  int64_t concat_axis(const Node& c) {
    int64_t axis = c.attr_int("axis", 1);
    return axis < 0 ? axis + static_cast<int64_t>(rank_of(g_, c.outputs[0])) : axis;
  }
  // Whether a's inputs are a proper prefix of b's, both channel Concats of one batch-1 shape.
  bool concat_prefix_of(const Node& a, const Node& b) {
    const Shape& as = g_.value(a.outputs[0]).shape;
    const Shape& bs = g_.value(b.outputs[0]).shape;
    if (concat_axis(a) != 1 || concat_axis(b) != 1 || as.size() != bs.size() || as[0] != 1 ||
        a.inputs.size() >= b.inputs.size())
      return false;
    for (size_t d = 2; d < as.size(); ++d)
      if (as[d] != bs[d]) return false;
    return std::equal(a.inputs.begin(), a.inputs.end(), b.inputs.begin());
  }
  // The Concat whose destination `c` shares (its family's longest member; `c` itself if none).
  NodeId concat_root(NodeId c) {
    auto it = concat_root_.find(c);
    if (it != concat_root_.end()) return it->second;
    NodeId root = c;
    for (NodeId t : sub_.node_list)
      if (g_.node(t).op_type == "Concat" && concat_prefix_of(g_.node(c), g_.node(t)) &&
          g_.node(t).inputs.size() > g_.node(root).inputs.size())
        root = t;
    return concat_root_[c] = root;
  }
  bool in_family(NodeId c) {
    if (concat_root(c) != c) return true;
    for (NodeId t : sub_.node_list)
      if (t != c && g_.node(t).op_type == "Concat" && concat_root(t) == c) return true;
    return false;
  }

  // The plan of the family rooted at `root`, made on first use with `first` laid out as `first_layout`.
  const ConcatPlan& concat_plan(NodeId root, const memory::desc& first_layout, ValueId first) {
    auto it = concat_plans_.find(root);
    if (it != concat_plans_.end()) return it->second;
    const Node& c = g_.node(root);
    ConcatPlan plan;
    const Shape& ys = g_.value(c.outputs[0]).shape;
    bool family = in_family(root);
    auto aligned = [&](tag t, int64_t block) {
      if (concat_axis(c) != 1 || (family && channels_last(t))) return false;
      for (ValueId v : c.inputs)
        if (is_const(g_, v) || g_.value(v).shape[1] % block != 0) return false;
      return true;
    };
    // The first producer's layout if it can hold the family; else (a family only, whose
    // members need dense prefixes) the widest channel blocking that divides every input.
    std::optional<tag> chosen;
    for (auto [t, block] : channel_blocked_tags(ys.size()))
      if (memory::desc(dims_of(g_.value(first).shape), dt::f32, t) == first_layout && aligned(t, block))
        chosen = t;
    if (!chosen && family)
      for (auto [t, block] : channel_blocked_tags(ys.size()))
        if (!chosen && aligned(t, block)) chosen = t;
    if (chosen) {
      plan.md = memory::desc(dims_of(ys), dt::f32, *chosen);
      plan.dst = new_buffer(plan.md);
      plan.layout = *chosen;
      plan.ok = true;
    }
    return concat_plans_.emplace(root, plan).first->second;
  }

  memory::desc concat_slice(const ConcatPlan& plan, const Node& root, size_t input) {
    memory::dims offsets(g_.value(root.outputs[0]).shape.size(), 0);
    for (size_t i = 0; i < input; ++i) offsets[1] += g_.value(root.inputs[i]).shape[1];
    return plan.md.submemory_desc(dims_of(g_.value(root.inputs[input]).shape), offsets);
  }

  // Where `v` (laid out as `layout`) can be written inside its Concats' destination, if anywhere:
  // every reader of v is a Concat of one family, in which v has one place.
  std::optional<std::pair<memory, memory::desc>> concat_slot(ValueId v, const memory::desc& layout) {
    const Value& val = g_.value(v);
    if (val.is_graph_output || val.consumers.empty()) return std::nullopt;
    NodeId root = kNoNode;
    for (NodeId c : val.consumers) {
      if (!sub_.nodes.contains(static_cast<size_t>(c)) || fused_.count(c) || g_.node(c).op_type != "Concat")
        return std::nullopt;
      NodeId r = concat_root(c);
      if (root != kNoNode && r != root) return std::nullopt;
      root = r;
    }
    const Node& c = g_.node(root);
    if (std::count(c.inputs.begin(), c.inputs.end(), v) != 1) return std::nullopt;
    const ConcatPlan& plan = concat_plan(root, layout, v);
    if (!plan.ok) return std::nullopt;
    size_t input = static_cast<size_t>(std::find(c.inputs.begin(), c.inputs.end(), v) - c.inputs.begin());
    return std::make_pair(plan.dst, concat_slice(plan, c, input));
  }

  void add_batch_norm(const Node& n) {
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

  void add_pool(const Node& n) {
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

  void add_eltwise(const Node& n) {
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

  // A block (block_after) not fused into its producer, run as one eltwise primitive when
  // `n` is its first node: SiLU's Sigmoid and Mul as one swish pass over the tensor.
  bool add_block_from(const Node& n) {
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

  void add_binary(const Node& n) {
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

  void add_concat(const Node& n) {
    NodeId id = static_cast<NodeId>(&n - &g_.nodes[0]);
    NodeId root = concat_root(id);
    // A family's plan is made by its first member if no producer asked for a slot yet.
    if (root != id || in_family(id)) concat_plan(root, layout_of(n.inputs[0]), n.inputs[0]);
    auto planned = concat_plans_.find(root);
    if (planned != concat_plans_.end() && planned->second.ok) {
      const ConcatPlan& plan = planned->second;
      const Node& whole = g_.node(root);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (in_place_.count(n.inputs[i]) || !copied_.insert({root, n.inputs[i]}).second) continue;
        memory src = value(n.inputs[i]).mem;
        memory slice = alias(plan.dst, concat_slice(plan, whole, i));
        add_step(dnnl::reorder(src, slice), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, slice}});
      }
      const Shape& ys = g_.value(n.outputs[0]).shape;
      define(n.outputs[0],
             root == id ? plan.dst : alias(plan.dst, memory::desc(dims_of(ys), dt::f32, plan.layout)));
      return;
    }
    int64_t axis = n.attr_int("axis", 1);
    int64_t r = static_cast<int64_t>(rank_of(g_, n.outputs[0]));
    if (axis < 0) axis += r;
    // Inputs of one layout are concatenated in it (blocked on channels); mixed ones in the plain layout.
    std::vector<memory::desc> use;
    for (ValueId v : n.inputs) use.push_back(layout_of(v));
    bool same = std::all_of(use.begin(), use.end(), [&](const memory::desc& d) { return d == use[0]; });
    if (!same)
      for (size_t i = 0; i < use.size(); ++i) use[i] = plain(g_.value(n.inputs[i]).shape);
    std::optional<dnnl::concat::primitive_desc> pd;
    try {
      pd = dnnl::concat::primitive_desc(static_cast<int>(axis), use, cpu());
    } catch (const dnnl::error&) {
      for (size_t i = 0; i < use.size(); ++i) use[i] = plain(g_.value(n.inputs[i]).shape);
      pd = dnnl::concat::primitive_desc(static_cast<int>(axis), use, cpu());
    }
    std::unordered_map<int, memory> args;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = in_layout(n.inputs[i], use[i]);
    memory dst = new_buffer(pd->dst_desc());
    args[DNNL_ARG_DST] = dst;
    add_primitive(*pd, std::move(args));
    define(n.outputs[0], dst);
  }

  // Flatten / Reshape: the value in plain layout, viewed with the new dims.
  void add_reshape(const Node& n) {
    memory m = in_layout(n.inputs[0], plain(g_.value(n.inputs[0]).shape));
    if (!memory_.owns(m)) {  // a region input: copy it, the view needs a buffer of ours
      memory copy = new_buffer(m.get_desc());
      add_step(dnnl::reorder(m, copy), {{DNNL_ARG_FROM, m}, {DNNL_ARG_TO, copy}});
      m = copy;
    }
    define(n.outputs[0], alias(m, plain(g_.value(n.outputs[0]).shape)));
  }

  // Transpose: the input's memory seen with its axes permuted (oneDNN's permute_axes keeps
  // the physical layout), so nothing runs unless a reader needs another layout.
  void add_transpose(const Node& n) {
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

  // Whether every binary post-op of `f` reads a constant or a value broadcast along all but
  // the last axis (a bias): such a chain survives viewing the output as a matrix.
  bool row_broadcast_only(const Fusion& f, ValueId head_out) {
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

  void add_fully_connected(const Node& n) {
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
    std::unordered_map<int, memory> args;
    auto build = [&](const dnnl::post_ops& ops, const memory::desc& w) {
      auto d = bias ? dnnl::matmul::desc(plain(mas), w, plain(bias->shape()), plain(mys))
                    : dnnl::matmul::desc(plain(mas), w, plain(mys));
      return dnnl::matmul::primitive_desc(d, attr_with(ops), cpu());
    };
    dnnl::post_ops ops;
    auto pd = build(ops, w_any);
    if (!f.nodes.empty()) {
      std::unordered_map<int, memory> post_args;
      try {
        dnnl::post_ops fused_ops = post_ops_for(f, n.outputs[0], plain(mys), post_args, matrix);
        pd = build(fused_ops, w_any);
        ops = fused_ops;
        args = std::move(post_args);
        mark_fused(f);
      } catch (const dnnl::error&) {
        f = Fusion{{}, n.outputs[0], {}};
      }
    }
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
    define(f.out, matrix ? alias(dst, plain(ys)) : dst);
  }

  void add_softmax(const Node& n) {
    const Shape& xs = g_.value(n.inputs[0]).shape;
    auto alg = n.op_type == "LogSoftmax" ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
    dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, plain(xs), plain(xs),
                                     static_cast<int>(xs.size()) - 1);
    dnnl::softmax_v2_forward::primitive_desc pd(d, attr_with({}), cpu());
    emit(pd, n.inputs[0], n.outputs[0]);
  }

  void add_layer_norm(const Node& n) {
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

  const Graph& g_;  // read only while the constructor builds the steps
  const SubGraph& sub_;
  std::map<ValueId, Val> vals_;
  std::set<NodeId> fused_;                     // nodes computed as post-ops or folded into another
  std::map<NodeId, ConcatPlan> concat_plans_;  // by family root
  std::map<NodeId, NodeId> concat_root_;
  std::set<std::pair<NodeId, ValueId>> copied_;  // (family root, value) already copied into its slot
  std::set<ValueId> in_place_;                   // values written straight into their Concat's destination
  std::vector<Step> steps_;
  onednn::RegionMemory memory_;
  std::optional<memory> scratchpad_;
  std::vector<memory> external_inputs_, external_outputs_;
  std::vector<Shape> out_shapes_;
  std::mutex mutex_;
};

}  // namespace

const BackendSpec& onednn_region_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn-region";
    s.version = onednn::backend_version();
    s.kind = BackendKind::GraphLevel;
    s.supports_node = &supported;
    // Single-op candidates (and Conv+BN) feed the op-level search, as in Collage;
    // the graph-level search grows them into regions.
    s.patterns.push_back(op_any({"Conv",          "MaxPool",   "AveragePool", "GlobalAveragePool",
                                 "GlobalMaxPool", "Concat",    "Add",         "Mul",
                                 "Sub",           "Div",       "Gemm",        "MatMul",
                                 "Relu",          "Clip",      "LeakyRelu",   "Sigmoid",
                                 "Tanh",          "HardSwish", "Softmax",     "LayerNormalization"})
                             ->where(supported));
    s.patterns.push_back(op("BatchNormalization", {op("Conv")->where(supported)})->where(supported));
    s.limits.max_nodes = 64;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
      for (NodeId n : sub.node_list)
        if (!supported(g, g.node(n))) refuse(g.node(n).describe() + " is outside what a region may hold");
      try {
        return std::make_unique<RegionKernel>(g, sub);
      } catch (const dnnl::error& e) {
        refuse(std::string("primitive creation failed: ") + e.what());
      }
    };
    s.set_threads = &onednn::set_threads;
    return s;
  }();
  return spec;
}

}  // namespace collage
