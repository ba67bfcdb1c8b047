// Native fused kernels. An element-wise chain (optionally after one "head" node
// such as Conv or Gemm) runs tile by tile: every node of the chain processes a
// cache-sized tile before the next tile is read, so the big tensors cross
// memory once instead of once per node.
#include <algorithm>
#include <cstring>

#include "backends/native/native_kernel.h"
#include "backends/native/native_ops.h"
#include "backends/native/transformer_kernels.h"
#include "core/backend_api/pattern_rule.h"
#include "core/runtime/composite_kernel.h"

namespace collage::native {

namespace {

constexpr int64_t kTile = 4096;  // elements: 16 KiB of fp32 per live tile

// Hands out the same buffers in the same order every tile: a tile's tensors are
// dead once the next tile starts, so buffer i can be reused by allocation i.
class TileAllocator : public TensorAllocator {
 public:
  void next_tile() { next_ = 0; }
  Tensor allocate(DType dtype, const Shape& shape) override {
    size_t bytes = static_cast<size_t>(shape_size(shape)) * dtype_size(dtype);
    if (next_ == buffers_.size() || buffers_[next_]->capacity() < bytes)
      buffers_.insert(buffers_.begin() + static_cast<long>(next_),
                      std::make_shared<Storage>(std::max<size_t>(bytes, kTile * 8)));
    return Tensor(dtype, shape, buffers_[next_++]);
  }

 private:
  std::vector<std::shared_ptr<Storage>> buffers_;
  size_t next_ = 0;
};

class TiledChainKernel : public Kernel {
 public:
  TiledChainKernel(const Graph& graph, const SubGraph& sub, bool has_head) : sub_(sub) {
    size_t first = 0;
    if (has_head) {
      head_ = make_node_kernel(graph.node(sub.node_list[0]));
      head_node_ = graph.node(sub.node_list[0]);
      first = 1;
    }
    out_shape_ = graph.value(sub.outputs[0]).shape;
    for (size_t i = first; i < sub.node_list.size(); ++i) chain_.push_back(graph.node(sub.node_list[i]));
    for (ValueId v : sub.constants) constants_[v] = *graph.value(v).constant;
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    std::map<ValueId, Tensor> full;  // whole tensors: kernel inputs and the head's outputs
    for (size_t i = 0; i < inputs.size(); ++i) full[sub_.inputs[i]] = *inputs[i];
    if (head_) {
      std::vector<const Tensor*> args;
      for (ValueId v : head_node_.inputs) args.push_back(v == kNoValue ? nullptr : lookup(full, v));
      auto outs = head_->run(args, alloc);
      full[head_node_.outputs[0]] = outs[0];
    }
    std::vector<Tensor> results;
    for (ValueId v : sub_.outputs) {
      auto it = full.find(v);  // the head's output may itself leave the group
      results.push_back(it != full.end() ? it->second : alloc.allocate(DType::Float32, out_shape_));
    }
    const int64_t total = shape_size(out_shape_);
    TileAllocator tiles;
    std::map<ValueId, Tensor> tile;
    std::vector<const Tensor*> args;
    for (int64_t start = 0; start < total; start += kTile) {
      const int64_t n = std::min(kTile, total - start);
      tiles.next_tile();
      tile.clear();
      for (const Node& node : chain_) {
        args.clear();
        for (ValueId v : node.inputs)
          args.push_back(v == kNoValue ? nullptr : tile_input(full, tile, tiles, v, start, n));
        auto outs = run_op(find_op(node), node, args, tiles);
        tile[node.outputs[0]] = outs[0].reshaped({n});
      }
      for (size_t k = 0; k < sub_.outputs.size(); ++k) {
        auto it = tile.find(sub_.outputs[k]);
        if (it == tile.end()) continue;  // the head's output, already complete
        std::memcpy(static_cast<float*>(results[k].raw()) + start, it->second.raw(),
                    static_cast<size_t>(n) * 4);
      }
    }
    return results;
  }

 private:
  const Tensor* lookup(std::map<ValueId, Tensor>& full, ValueId v) {
    auto c = constants_.find(v);
    return c != constants_.end() ? &c->second : &full.at(v);
  }

  // Scalars pass whole; full-size tensors are cut to the current tile.
  const Tensor* tile_input(std::map<ValueId, Tensor>& full, std::map<ValueId, Tensor>& tile,
                           TileAllocator& tiles, ValueId v, int64_t start, int64_t n) {
    auto t = tile.find(v);
    if (t != tile.end()) return &t->second;
    const Tensor* whole = lookup(full, v);
    if (whole->size() == 1) return whole;
    Tensor cut = tiles.allocate(whole->dtype(), {n});
    std::memcpy(cut.raw(), static_cast<const float*>(whole->raw()) + start, static_cast<size_t>(n) * 4);
    return &(tile[v] = cut);
  }

  SubGraph sub_;
  std::unique_ptr<Kernel> head_;
  Node head_node_;
  Shape out_shape_;
  std::vector<Node> chain_;
  std::map<ValueId, Tensor> constants_;
};

bool is_elementwise(const Node& n) {
  OpCategory c = op_category(n.op_type);
  return (c == OpCategory::ElemWise || c == OpCategory::Broadcast) && n.outputs.size() == 1;
}

// Every chain node is element-wise on float32 tensors of the group's output shape
// (other operands are scalars), so a flat tile is a valid slice of each.
bool tileable_chain(const Graph& g, const SubGraph& sub, size_t first) {
  if (sub.outputs.empty()) return false;
  const Shape& shape = g.value(sub.outputs.back()).shape;
  for (ValueId out : sub.outputs)
    if (g.value(out).shape != shape || g.value(out).dtype != DType::Float32) return false;
  for (size_t i = first; i < sub.node_list.size(); ++i) {
    const Node& n = g.node(sub.node_list[i]);
    if (!is_elementwise(n) || n.op_type == "Where" || n.op_type == "Cast") return false;
    for (ValueId v : n.inputs) {
      if (v == kNoValue) continue;
      const Value& val = g.value(v);
      if (val.dtype != DType::Float32) return false;
      if (val.shape != shape && shape_size(val.shape) != 1) return false;
    }
    if (g.value(n.outputs[0]).shape != shape) return false;
  }
  return sub.node_list.size() > first;
}

}  // namespace

std::unique_ptr<Kernel> make_fused_kernel(const Graph& graph, const SubGraph& subgraph, int threads) {
  // Sub-graph kernels take subgraph.inputs (constants excluded), so even a single
  // node goes through the composite wrapper that maps them to its input slots.
  for (NodeId n : subgraph.node_list) (void)find_op(graph.node(n));  // Unsupported surfaces at compile time
  const Node& head = graph.node(subgraph.node_list[0]);
  if (auto k = make_transformer_kernel(graph, subgraph, threads)) return k;
  if (subgraph.node_list.size() == 1) return make_composite_kernel(graph, subgraph, &make_node_kernel);
  if (tileable_chain(graph, subgraph, 0)) return std::make_unique<TiledChainKernel>(graph, subgraph, false);
  if (head.outputs.size() == 1 && tileable_chain(graph, subgraph, 1))
    return std::make_unique<TiledChainKernel>(graph, subgraph, true);
  return make_composite_kernel(graph, subgraph, &make_node_kernel);
}

}  // namespace collage::native
