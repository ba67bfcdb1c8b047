// The native backend's reference kernels: straightforward, correct, fp32 plus
// the int64/bool tensors that shape logic needs. Every op the product accepts
// has one, so every model always has a complete placement.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/ir/kernel.h"

namespace collage::native {

// Computes a node's outputs. Output shapes come from the inputs (never from the
// graph), so the same function serves constant folding and shape discovery.
// Unsupported attributes or dtypes throw Error(Unsupported, node.describe() + ...).
using OpFunction = std::vector<Tensor> (*)(const Node& node, KernelInputs inputs, TensorAllocator& alloc);

using OpTable = std::unordered_map<std::string, OpFunction>;

// Op type (domain-less; "Gelu" also accepted from com.microsoft) -> kernel.
const OpTable& op_table();
bool supports_op(const std::string& op_type);
std::vector<std::string> supported_ops();  // sorted

// The kernel for `node`; throws Unsupported naming node, op and opset if none.
OpFunction find_op(const Node& node);
// Runs `node` with the native kernel; throws Unsupported naming node, op and opset.
std::vector<Tensor> evaluate_node(const Node& node, KernelInputs inputs, TensorAllocator& alloc);
// Runs kernel `fn` of `node`. float16/bfloat16 inputs are computed in float32:
// they are widened before the call and the float32 outputs rounded (nearest
// even) back to the half type of input 0, or of all float inputs when input 0
// is not a float. Cast/CastLike and ops with a 'dtype' attribute see the half
// tensors unchanged / keep their outputs. Every caller of an OpFunction goes
// through here.
std::vector<Tensor> run_op(OpFunction fn, const Node& node, KernelInputs inputs, TensorAllocator& alloc);

// Whether the op takes sequences and empty optionals (Tensor's non-tensor forms); run_op
// refuses them to every other op.
bool takes_non_tensor_values(const Node& node);

// One registration function per kernel file (see native_ops.cc).
void register_conv_ops(OpTable& table);    // Conv, ConvTranspose
void register_matmul_ops(OpTable& table);  // Gemm, MatMul, Det
void register_einsum_ops(OpTable& table);  // Einsum
void register_pool_ops(OpTable& table);    // MaxPool, AveragePool, Global*Pool
void register_norm_ops(
    OpTable& table);  // BatchNormalization, LayerNormalization, InstanceNormalization, Softmax, LogSoftmax
void register_reduce_ops(OpTable& table);  // ReduceMean/Sum/Max/Min/Prod
void register_resize_ops(OpTable& table);  // Resize
void register_elementwise_ops(
    OpTable& table);  // unary, binary (broadcast), variadic, compare, logic, Where, Cast
void register_shape_ops(
    OpTable& table);  // Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Shape, Size, Expand, Tile, ...
void register_local_norm_ops(OpTable& table);  // Hardmax, LRN, MeanVarianceNormalization
void register_random_ops(OpTable& table);      // Random*, Bernoulli, Dropout (training mode too)
void register_loss_ops(OpTable& table);        // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_arg_ops(OpTable& table);         // ArgMax, ArgMin, CumSum
void register_quant_ops(OpTable& table);       // quant_ops.cc: (De)QuantizeLinear, QLinear*, *Integer
void register_rnn_ops(OpTable& table);         // rnn_ops.cc: RNN, GRU, LSTM
void register_detection_ops(OpTable& table);   // detection_ops.cc: RoiAlign, DeformConv, TfIdfVectorizer
void register_index_ops(OpTable& table);       // GatherElements, GatherND, ScatterElements, ScatterND, Trilu
void register_grid_ops(OpTable& table);        // GridSample, AffineGrid
void register_select_ops(OpTable& table);      // EyeLike, OneHot, TopK, Compress, NonZero, ReverseSequence,
                                               // Unique, CenterCropPad
void register_unpool_ops(OpTable& table);      // MaxUnpool, Col2Im
void register_control_flow_ops(OpTable& table);  // control_flow_ops.cc: If, Loop, Scan, SequenceMap (bodies)
void register_sequence_ops(OpTable& table);      // sequence_ops.cc: Sequence*, SplitToSequence, Optional*
void register_image_ops(OpTable& table);         // image_ops.cc (+ image_codecs.cc): ImageDecoder
void register_tensor_ops(OpTable& table);  // Concat, Split, Slice, Gather, Pad, DepthToSpace, SpaceToDepth,
                                           // Constant*, Range, Identity, Dropout

}  // namespace collage::native
