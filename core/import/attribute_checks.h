// Import stage 0: attribute values the kernels divide by or loop over, checked once
// per node before anything runs (a stride of 0 would be a division by zero in every
// backend's shape logic, a negative pad an out-of-bounds write).
#pragma once

#include "onnx/onnx_pb.h"

namespace collage::import_detail {

// On the proto, before ONNX shape inference (whose conv/pool inference divides by the
// strides too). Throws InvalidModel naming the node, the attribute and the rule it breaks.
void check_attributes(const onnx::GraphProto& graph, int default_opset);

// Convolutions and pools whose input or weight rank the proto states (graph inputs,
// initialisers): X and W ranks agree and are at least 3, and the window attributes have
// one value per spatial dim (pads two); LayerNormalization's axis is inside X's rank;
// Gemm's A and B are matrices; MaxUnpool's indices have X's rank; STFT's signal has rank 3.
// ONNX's inference indexes by these unchecked in libonnx 1.12. Throws InvalidModel
// naming the node and the mismatch.
// Reads value_info too: run again after ONNX inference, it names the node whose inferred
// ranks break a rule (guard_onnx_rank_inference kept inference from reading past them).
void check_window_ranks(const onnx::GraphProto& graph, int default_opset);

// Wraps libonnx's inference functions of the ops check_window_ranks covers: ranks only
// inference learns (an intermediate feeding a ConvTranspose's weight) are checked first, and
// a node breaking a rule is skipped (an InferenceError) instead of indexing past its shapes
// (a SEGV in libonnx 1.12's convTransposeShapeInference). Idempotent.
void guard_onnx_rank_inference();

// The highest rank a shape input may ask for (Expand's and Reshape's shape, ConstantOfShape's
// input): ONNX's inference makes one dimension per value before anything else can check it.
constexpr int64_t kMaxRank = 64;

// Sizes the proto states, checked before ONNX's inference acts on them: every graph input
// and initialiser within `budget_bytes` (check_tensor_budget), and no rank-giving shape
// input longer than kMaxRank (a [2^31] shape for Expand: 2^31 dimension protos, minutes).
void check_stated_sizes(const onnx::GraphProto& graph, int default_opset, int64_t budget_bytes);

}  // namespace collage::import_detail
