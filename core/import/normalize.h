// Import stage 1 (before shapes are known): attribute -> input migrations, so every
// op reaches the backends in its newest opset form, one signature per op.
#pragma once

#include <string>

#include "core/ir/graph.h"
#include "core/ir/tensor.h"

namespace collage::import_detail {

// Attribute -> input migrations of older opsets (Pad, Slice, Reshape, Upsample/Resize,
// Clip, Squeeze/Unsqueeze, ReduceX, Split, Dropout).
void normalize_legacy_forms(Graph& graph);

// Once shapes are static: auto_pad SAME_UPPER / SAME_LOWER / VALID of every forward window
// op (Conv, ConvInteger, QLinearConv, MaxPool, AveragePool, LpPool) becomes explicit
// `pads` (core/ir/conv_geometry.h; SAME pooling also drops ceil_mode, which SAME ignores),
// so no backend re-derives it. ConvTranspose keeps its auto_pad (see conv_geometry.h).
void resolve_auto_pad(Graph& graph);

// A fresh constant value named after `hint`.
ValueId add_constant(Graph& graph, const std::string& hint, Tensor tensor);

}  // namespace collage::import_detail
