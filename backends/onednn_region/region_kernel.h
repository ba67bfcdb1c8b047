// onednn-region's kernel: one convex region lowered to a chain of oneDNN primitives
// (onednn_region.h says what the backend does), with one step of its own where oneDNN
// reads memory slowly: a one-row product by large weights, streamed by stream-gemm's
// panels. Private to backends/onednn_region/: region_kernel.cc holds the chain, the
// fusion of post-op chains and the plain ops, region_conv.cc the convolutions (BatchNorm
// folding, depthwise post-op fusion), region_concat.cc the in-place Concats. Invariant:
// the constructor either builds the whole chain (every node computed or fused, every
// output reordered to plain) or throws Unsupported; run() only binds data handles and
// executes it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_fusion.h"
#include "backends/onednn/onednn_kernels.h"
#include "backends/onednn_region/region_memory.h"
#include "backends/stream_gemm/packed_gemm.h"
#include "core/backend_api/backend.h"

namespace collage::onednn::region {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

[[noreturn]] inline void refuse(const std::string& why) {
  throw Error(ErrorKind::Unsupported, "onednn-region: " + why);
}

inline size_t rank_of(const Graph& g, ValueId v) { return g.value(v).shape.size(); }

inline bool is_const(const Graph& g, ValueId v) { return v != kNoValue && g.value(v).constant.has_value(); }

// A binary op oneDNN computes with one operand of the result's shape and the other
// broadcast to it (or of the same shape).
inline bool binary_broadcastable(const Graph& g, const Node& n) {
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

// oneDNN's reference kernels and its gemm-based (im2col) convolutions are far
// slower than a reorder into the layout a JIT/brgemm kernel wants.
inline bool fast_impl(const std::string& impl) {
  return impl.rfind("ref", 0) != 0 && impl.find("gemm") == std::string::npos;
}

// "jit_1x1:avx512_core" -> "avx512_core".
inline std::string isa_of(const std::string& impl) {
  size_t colon = impl.rfind(':');
  return colon == std::string::npos ? std::string() : impl.substr(colon + 1);
}

class RegionKernel : public Kernel {
 public:
  // `threads`: what the region's own (non-oneDNN) steps use; oneDNN's primitives take OpenMP's setting.
  RegionKernel(const Graph& g, const SubGraph& sub, int threads = 1);

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override;

 private:
  struct Val {
    memory mem;
    memory::desc md;
    std::vector<memory> converted;  // the same value in other layouts, made on demand
  };
  // A oneDNN primitive, or (`own` set) a step of the region's own run on the same buffers: `args`
  // then only name what it reads and writes (SRC, DST), for the buffer plan.
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, memory> args;
    std::function<void()> own;
  };

  const Val& value(ValueId v) {
    auto it = vals_.find(v);
    if (it == vals_.end()) refuse("'" + g_.value(v).name + "' is read before it is computed");
    return it->second;
  }

  // `v` in layout `want`: the value itself, or a copy reordered once (and cached).
  memory in_layout(ValueId v, const memory::desc& want);
  memory::desc layout_of(ValueId v) { return value(v).md; }

  memory new_buffer(const memory::desc& md) { return memory_.buffer(md, static_cast<int>(steps_.size())); }
  // A second view of an internal buffer (a reshape, a slice of a Concat's destination).
  memory alias(const memory& of, const memory::desc& md) { return memory_.alias(of, md); }
  void define(ValueId v, const memory& m) { vals_[v] = Val{m, m.get_desc(), {}}; }

  void add_step(dnnl::primitive prim, std::unordered_map<int, memory> args, std::function<void()> own = {}) {
    for (const auto& [arg, m] : args) memory_.touch(m, static_cast<int>(steps_.size()));
    steps_.push_back({std::move(prim), std::move(args), std::move(own)});
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
  void add_node(const Node& n);

  // The only reader of `v` inside the region, if `v` is needed nowhere else.
  const Node* sole_reader(ValueId v) const;

  // A multi-node eltwise block reading `x` (SiLU as x*Sigmoid(x), the tanh GELU): every reader
  // of x is one of its nodes and every inner value is read only inside it, all of them in the
  // region and not yet fused. Found from its root, at most kBlockDepth readers away from x;
  // the root is the last of the returned nodes.
  std::optional<onednn::Block> block_after(ValueId x) const;

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
  Fusion chain_after(ValueId current);

  // Appends the fused chain's post-ops; binary operands of the full shape are read in `full_layout`.
  // `matrix`: the primitive computes the output viewed as [rows, last axis]
  // (row_broadcast_only holds), so broadcast operands are read as [1, last axis].
  dnnl::post_ops post_ops_for(const Fusion& f, ValueId head_out, const memory::desc& full_layout,
                              std::unordered_map<int, memory>& args, bool matrix = false);
  // A broadcast operand of lower rank viewed with the rank-padded plain desc.
  memory alias_plain(ValueId v, const memory::desc& md);
  void mark_fused(const Fusion& f) {
    for (const Node* n : f.nodes) fused_.insert(static_cast<NodeId>(n - &g_.nodes[0]));
  }

  void add_conv(const Node& n);

  template <class Prim>
  void add_conv_as(Prim, const Node& n, ValueId head_out, const Tensor& wt, const Shape& ws,
                   const onednn::ConvGeometry& geo, const std::optional<Tensor>& bias);

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
                                               const dnnl::post_ops& head_ops, Build& build);

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

  static std::vector<std::pair<tag, int64_t>> channel_blocked_tags(size_t rank);
  static bool channels_last(tag t) { return t == tag::acdb || t == tag::acdeb || t == tag::acb; }

  int64_t concat_axis(const Node& c) {
    int64_t axis = c.attr_int("axis", 1);
    return axis < 0 ? axis + static_cast<int64_t>(rank_of(g_, c.outputs[0])) : axis;
  }
  // Whether a's inputs are a proper prefix of b's, both channel Concats of one batch-1 shape.
  bool concat_prefix_of(const Node& a, const Node& b);
  // The Concat whose destination `c` shares (its family's longest member; `c` itself if none).
  NodeId concat_root(NodeId c);
  bool in_family(NodeId c);

  // The plan of the family rooted at `root`, made on first use with `first` laid out as `first_layout`.
  const ConcatPlan& concat_plan(NodeId root, const memory::desc& first_layout, ValueId first);

  memory::desc concat_slice(const ConcatPlan& plan, const Node& root, size_t input) {
    memory::dims offsets(g_.value(root.outputs[0]).shape.size(), 0);
    for (size_t i = 0; i < input; ++i) offsets[1] += g_.value(root.inputs[i]).shape[1];
    return plan.md.submemory_desc(dims_of(g_.value(root.inputs[input]).shape), offsets);
  }

  // Where `v` (laid out as `layout`) can be written inside its Concats' destination, if anywhere:
  // every reader of v is a Concat of one family, in which v has one place.
  std::optional<std::pair<memory, memory::desc>> concat_slot(ValueId v, const memory::desc& layout);

  void add_batch_norm(const Node& n);
  void add_pool(const Node& n);
  void add_eltwise(const Node& n);
  // A block (block_after) not fused into its producer, run as one eltwise primitive when
  // `n` is its first node: SiLU's Sigmoid and Mul as one swish pass over the tensor.
  bool add_block_from(const Node& n);

  void add_binary(const Node& n);
  void add_concat(const Node& n);

  // Flatten / Reshape: the value in plain layout, viewed with the new dims.
  void add_reshape(const Node& n);

  // Transpose: the input's memory seen with its axes permuted (oneDNN's permute_axes keeps
  // the physical layout), so nothing runs unless a reader needs another layout.
  void add_transpose(const Node& n);

  // Whether every binary post-op of `f` reads a constant or a value broadcast along all but
  // the last axis (a bias): such a chain survives viewing the output as a matrix.
  bool row_broadcast_only(const Fusion& f, ValueId head_out);

  void add_fully_connected(const Node& n);
  // A product of one row by constant weights too large for L2 (a classifier's Gemm): every
  // inference reads the weights from memory, and oneDNN 2.6's kernels read them at 14-20 GB/s
  // where stream-gemm's prefetching panels stream 23-32 (MobileNetV3's two: 0.6 -> 0.35 ms,
  // AVX-512 kind). False, having added nothing, where it does not apply.
  bool add_streamed_row_product(const Node& n, const Tensor& wt, bool trans_b,
                                const std::optional<Tensor>& bias);
  void add_softmax(const Node& n);
  void add_layer_norm(const Node& n);

  const Graph& g_;  // read only while the constructor builds the steps
  const SubGraph& sub_;
  std::map<ValueId, Val> vals_;
  std::set<NodeId> fused_;                     // nodes computed as post-ops or folded into another
  std::map<NodeId, ConcatPlan> concat_plans_;  // by family root
  std::map<NodeId, NodeId> concat_root_;
  std::set<std::pair<NodeId, ValueId>> copied_;  // (family root, value) already copied into its slot
  std::set<ValueId> in_place_;                   // values written straight into their Concat's destination
  int threads_ = 1;
  std::vector<Step> steps_;
  onednn::RegionMemory memory_;
  std::optional<memory> scratchpad_;
  std::vector<memory> external_inputs_, external_outputs_;
  std::vector<Shape> out_shapes_;
  std::mutex mutex_;
};

}  // namespace collage::onednn::region
