// Import stage 2 (after ONNX shape inference): static shapes everywhere, constant
// sub-graphs folded, dead nodes dropped.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/import/onnx_import.h"
#include "core/ir/graph.h"
#include "core/ir/kernel.h"

namespace collage::import_detail {

// The import-time evaluation budget (ImportOptions::evaluation_budget_s) of the import
// running on this thread: set for its duration, checked before every node evaluation below
// (folding, placeholder runs). Without one, evaluation is unbounded in time.
class EvaluationBudget {
 public:
  explicit EvaluationBudget(double seconds);
  ~EvaluationBudget();
  EvaluationBudget(const EvaluationBudget&) = delete;
  EvaluationBudget& operator=(const EvaluationBudget&) = delete;
  // InvalidModel naming `n` when the budget is spent.
  static void check(const Node& n);

 private:
  double seconds_;
  double started_;
  EvaluationBudget* outer_;
};

// Rewrites needing input shapes (legacy Softmax axis semantics, opset<7 broadcast),
// folds constant nodes and completes shapes; drops dead nodes.
// Every tensor an evaluation allocates is held to `budget_bytes` (refused before allocating).
// `dynamic_shapes`: a shape steered by a value computed at run time is left unknown (decided
// as the model runs), as is every shape it steers, instead of refusing the import.
void complete_shapes_and_fold(Graph& graph, const NodeEvaluator& evaluator, int64_t budget_bytes,
                              ImportReport& report, bool dynamic_shapes = false);

// Graph output shapes and types are checked by running their producer once on
// placeholders: where ONNX shape inference gave them (libonnx 1.12 misses e.g. ceil-mode
// pooling's last-window rule, dilated AveragePool), the kernel's wins. What the model
// declared is checked afterwards (declared_types.h). Producers that cannot run on
// placeholders (value-steered) are left to the executor's check.
void check_graph_output_shapes(Graph& graph, const NodeEvaluator& evaluator, int64_t budget_bytes);

// `n` run once with zero placeholders for its computed inputs (constants as they are), every
// allocation held to the budget; nullopt when an input's shape is unknown or the evaluation
// throws (a zero placeholder as a divisor, an op the evaluator lacks).
std::optional<std::vector<Tensor>> evaluate_on_placeholders(const Graph& graph, const Node& n,
                                                            const NodeEvaluator& evaluator,
                                                            int64_t budget_bytes);

// Throws InvalidModel if `shape` of `dtype` needs more than `budget_bytes` (or overflows);
// `what` names the tensor ("value 'x'", "node 'n' (Pad, opset 18): an output").
void check_tensor_budget(const Shape& shape, DType dtype, int64_t budget_bytes, const std::string& what);

}  // namespace collage::import_detail
