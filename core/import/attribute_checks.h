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
// Gemm's A and B are matrices; MaxUnpool's indices have X's rank.
// ONNX's inference indexes by these unchecked in libonnx 1.12. Throws InvalidModel
// naming the node and the mismatch.
void check_window_ranks(const onnx::GraphProto& graph, int default_opset);

}  // namespace collage::import_detail
