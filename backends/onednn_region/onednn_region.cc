// onednn-region's backend spec: what a region may hold (`supported`) and the compile
// entry point; the kernel itself is region_kernel.h.
#include "backends/onednn_region/onednn_region.h"

#include <algorithm>

#include "backends/onednn/onednn_kernels.h"
#include "backends/onednn_region/region_kernel.h"
#include "core/backend_api/conv_folding.h"

namespace collage {

namespace {

using onednn::region::binary_broadcastable;
using onednn::region::is_const;
using onednn::region::rank_of;
using onednn::region::refuse;
using onednn::region::RegionKernel;

bool single_output(const Node& n) {
  return n.outputs.size() == 1 || (n.outputs.size() > 1 && n.outputs[1] == kNoValue);
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
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
      for (NodeId n : sub.node_list)
        if (!supported(g, g.node(n))) refuse(g.node(n).describe() + " is outside what a region may hold");
      try {
        return std::make_unique<RegionKernel>(g, sub, o.threads);
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
