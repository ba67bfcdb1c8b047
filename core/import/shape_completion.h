// Import stage 2 (after ONNX shape inference): static shapes everywhere, constant
// sub-graphs folded, dead nodes dropped.
#pragma once

#include "core/import/onnx_import.h"
#include "core/ir/graph.h"
#include "core/ir/kernel.h"

namespace collage::import_detail {

// Rewrites needing input shapes (legacy Softmax axis semantics, opset<7 broadcast),
// folds constant nodes and completes shapes; drops dead nodes.
void complete_shapes_and_fold(Graph& graph, const NodeEvaluator& evaluator, ImportReport& report);

}  // namespace collage::import_detail
