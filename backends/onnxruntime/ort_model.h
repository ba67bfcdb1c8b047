// A sub-graph as a self-contained ONNX model for ONNX Runtime: its inputs are the graph inputs,
// the constants it reads are initializers (ORT's optimizer folds and prepacks them), its
// outputs the graph outputs; nodes keep their op, domain, attributes and the model's opset.
#pragma once

#include <string>

#include "core/ir/graph.h"
#include "core/ir/subgraph.h"

namespace collage::ort {

// The serialized ModelProto. Throws Error(Unsupported) for what an ONNX model cannot say here
// (an unknown shape, a value without a name).
// `int8_head`: node_list[0] is a MatMul of constant [K, N] weights, written as dynamic int8 (the
// form `export --qdq` writes: DynamicQuantizeLinear, MatMulInteger over the shared 7-bit weights
// of int8_weights.h, Cast, Mul by the scales), which ORT fuses into its DynamicQuantizeMatMul.
std::string region_model(const Graph& graph, const SubGraph& sub, bool int8_head = false);

}  // namespace collage::ort
