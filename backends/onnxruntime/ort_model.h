// A sub-graph as a self-contained ONNX model for ONNX Runtime: its inputs are the graph inputs,
// the constants it reads are initializers (ORT's optimizer folds and prepacks them), its
// outputs the graph outputs; nodes keep their op, domain, attributes and the model's opset.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/subgraph.h"

namespace collage::ort {

// Which MatMuls of the region are written as dynamic int8 (the form `export --qdq` writes:
// DynamicQuantizeLinear, MatMulInteger over the shared 7-bit weights of int8_weights.h, Cast,
// Mul by the scales), which ORT fuses into its DynamicQuantizeMatMul:
//   Head: node_list[0], which must be one (int8_weights_matmul);
//   EveryWeightsMatMul: each node of the region that is one (none is fine: then all fp32).
enum class Int8 { None, Head, EveryWeightsMatMul };

// The serialized ModelProto. Throws Error(Unsupported) for what an ONNX model cannot say here
// (an unknown shape, a value without a name), and for int8 in a model older than opset 11.
// `rows`: the region is row_splittable and its inputs and outputs are written as [rows, last]
// with a symbolic row count, so that one session runs any contiguous block of the rows.
std::string region_model(const Graph& graph, const SubGraph& sub, Int8 int8 = Int8::None, bool rows = false);

// Whether every output row of the region depends on the same row of each input only, the rows
// being the product of all dimensions but the last, one count R (> 1) for every input, output and
// node output: MatMul/Gemm (no transA) of constant [K, N] weights, Softmax, LogSoftmax and
// LayerNormalization over the last axis, and element-wise ops whose operands are constants
// broadcast along the rows (a scalar or a row) or tensors of their output's shape. Such a region
// can run as blocks of rows.
bool row_splittable(const Graph& graph, const SubGraph& sub);

// R of a row_splittable region (the product of all dimensions but the last).
int64_t rows_of(const Shape& shape);

// The nodes `region_model` writes in int8, in node_list order.
std::vector<NodeId> int8_nodes(const Graph& graph, const SubGraph& sub, Int8 int8);

}  // namespace collage::ort
