// Import stage 2 (after ONNX shape inference): static shapes everywhere, constant
// sub-graphs folded, dead nodes dropped.
#pragma once

#include <set>
#include <string>

#include "core/import/onnx_import.h"
#include "core/ir/graph.h"
#include "core/ir/kernel.h"

namespace collage::import_detail {

// Rewrites needing input shapes (legacy Softmax axis semantics, opset<7 broadcast),
// folds constant nodes and completes shapes; drops dead nodes.
// Every tensor an evaluation allocates is held to `budget_bytes` (refused before allocating).
void complete_shapes_and_fold(Graph& graph, const NodeEvaluator& evaluator, int64_t budget_bytes,
                              ImportReport& report);

// Graph output shapes are checked by running their producer once on placeholders:
// where the model declared the shape (`declared`), a disagreement is InvalidModel
// ("graph output 'y' is declared [5] but node ... computes [2,3]"); where only ONNX
// shape inference gave it (libonnx 1.12 misses e.g. ceil-mode pooling's last-window
// rule), the kernel's shape wins. Producers that cannot run on placeholders
// (value-steered) are left to the executor's check.
void check_graph_output_shapes(Graph& graph, const NodeEvaluator& evaluator, int64_t budget_bytes,
                               const std::set<std::string>& declared);

// Throws InvalidModel if `shape` of `dtype` needs more than `budget_bytes` (or overflows);
// `what` names the tensor ("value 'x'", "node 'n' (Pad, opset 18): an output").
void check_tensor_budget(const Shape& shape, DType dtype, int64_t budget_bytes, const std::string& what);

}  // namespace collage::import_detail
