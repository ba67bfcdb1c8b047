// Transformer blocks as exporters write them, found by structure so backends can
// offer each as one kernel: layer normalisation (the opset-17 node, or the
// decomposed ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] chain
// torch.onnx.export writes below opset 17), optionally after a residual Add; erf
// and tanh GELU, optionally after a bias Add and a MatMul; and the attention
// core MatMul(Q, K^T) -> scale -> [mask Add or Where] -> Softmax -> MatMul(., V) with the
// Slices, Reshapes, Transposes and scalar scales before its operands (read as strided
// views of the tensor before them) and the Transpose/Reshape after it.
//
// `*_at(graph, root)` reads a block ending at `root`; `*_of(graph, sub)` reads
// the block `sub` is exactly (nullopt otherwise), which is what kernels compile.
#pragma once

#include <optional>
#include <vector>

#include "core/backend_api/pattern.h"
#include "core/ir/subgraph.h"

namespace collage {

// ---- layer normalisation over the last axis -----------------------------------------
struct LayerNormBlock {
  ValueId x = kNoValue;       // the normalised tensor (the residual Add's output when it is included)
  NodeId residual = kNoNode;  // Add(a, b) feeding x, part of the block
  ValueId gamma = kNoValue, beta = kNoValue;  // constants broadcasting along the last axis, or absent
  float epsilon = 1e-5f;
  bool decomposed = false;
  std::vector<NodeId> nodes;  // residual Add excluded
};
std::optional<LayerNormBlock> layer_norm_at(const Graph& g, NodeId root);
std::optional<LayerNormBlock> layer_norm_of(const Graph& g, const SubGraph& sub);
// The largest block at each root (an affine Mul/Add right after is absorbed), with
// and, if `residual`, also without... the residual Add: both sets are returned.
PatternPtr layer_norm_pattern(bool residual);

// ---- GELU ---------------------------------------------------------------------------------
struct GeluBlock {
  bool tanh = false;          // 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) instead of 0.5x(1+erf(x/sqrt2))
  ValueId x = kNoValue;       // GELU's input (the bias Add's output when it is included)
  NodeId bias_add = kNoNode;  // Add(h, bias) feeding x, part of the block
  ValueId h = kNoValue, bias = kNoValue;  // the bias Add's operands (h from the MatMul if included)
  NodeId matmul = kNoNode;                // MatMul producing h, part of the block
  std::vector<NodeId> nodes;              // the GELU nodes only
};
std::optional<GeluBlock> gelu_at(const Graph& g, NodeId root);
std::optional<GeluBlock> gelu_of(const Graph& g, const SubGraph& sub);
// GELU alone, Add(bias)+GELU and MatMul+Add+GELU where the graph has them.
PatternPtr gelu_pattern(bool with_bias, bool with_matmul);

// ---- attention core ---------------------------------------------------------------------
// An operand as a strided view of the stored (row-major) tensor `value`: the Slices, Reshapes and
// Transposes the block absorbed before the product cost no copy. Invariant: `shape` is the
// product's input shape and every element lies inside `value`.
struct AttentionOperand {
  ValueId value = kNoValue;      // what the kernel reads
  Shape shape;                   // the operand as the product sees it
  std::vector<int64_t> strides;  // element strides of `shape` within `value`
  int64_t offset = 0;            // element offset of its first element
};
struct AttentionBlock {
  AttentionOperand q, k, v;  // MatMul(q, k) is the scores; k already as K^T
  NodeId qk = kNoNode, pv = kNoNode, softmax = kNoNode;
  float scale = 1.0f;       // scores * scale (a Div by c gives 1/c; on Q or K or the scores)
  ValueId mask = kNoValue;  // added to the scaled scores, or absent
  // Instead of `mask`: Where(constant condition, fill, scores) as the additive mask it equals.
  std::optional<Tensor> mask_constant;
  std::vector<int64_t> out_perm;         // Transpose after MatMul(P, V), or empty
  bool reshape = false;                  // a Reshape after that (a view: data order unchanged)
  std::vector<int64_t> context_strides;  // of MatMul(P, V)'s output within the block's output
  std::vector<NodeId> nodes;
};
// `with_layout`: also take in the operands' Transposes, Reshapes and Slices (and scalar Div/Mul
// on Q and K) whose only reader is the block, and the Transpose/Reshape after it (the largest
// block): torch's packed in_proj -> Slice -> Reshape -> Transpose forms, read in place. Else none.
std::optional<AttentionBlock> attention_at(const Graph& g, NodeId root, bool with_layout);
std::optional<AttentionBlock> attention_of(const Graph& g, const SubGraph& sub);
PatternPtr attention_pattern(bool with_layout);

}  // namespace collage
