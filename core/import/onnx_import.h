// ONNX import: file -> Graph with one normalised form per op, static shapes
// everywhere and constant sub-graphs folded.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/kernel.h"
#include "core/ir/settings.h"

namespace onnx {
class ModelProto;
}

namespace collage {

// The protobuf of an ONNX file (any size: the 64 MiB default limit is lifted); InvalidModel when
// it is empty, truncated, not ONNX or has no graph. The importer and the QDQ writer read with it.
void parse_onnx_model(std::string_view bytes, onnx::ModelProto& model);

constexpr int kMinOpset = 6;
constexpr int kMaxOpset = 21;

struct ImportOptions {
  // Values for symbolic input dims ("batch" -> 4); unnamed or unlisted ones default to 1.
  std::map<std::string, int64_t> dims;
  // Evaluates nodes on constant inputs (folding) and on placeholder inputs
  // (shapes ONNX inference missed). Required: pass native::evaluate_node.
  NodeEvaluator evaluator;
  // float16/bfloat16 models compute in float32 behind their half interface
  // (import_detail::compute_half_in_float32); false keeps them as written.
  bool half_in_float32 = true;
  // Graph inputs specialised on a value (`--bind NAME=FILE.pb`): each becomes a constant,
  // so shapes that depend on its value (Reshape's shape, Range's bounds...) are computed.
  // Checked against the declared dtype and shape; symbolic dims take the tensor's.
  std::map<std::string, Tensor> bound_inputs;
  // The largest tensor the model may ask for, in bytes (an input, a weight, any value
  // its shapes imply or a folded constant); larger ones are refused with a message
  // before anything is allocated. 0: a quarter of this machine's physical memory.
  int64_t memory_budget_bytes = 0;
  // Seconds import may spend evaluating nodes (folding, learning shapes), all together;
  // checked before each evaluation (Settings::import_evaluation_budget_s).
  double evaluation_budget_s = kSettings.import_evaluation_budget_s;
  // Shapes that depend on values computed at run time (NonZero, TopK with a computed k, a
  // detector's kept boxes) are left unknown (Value::shape_known false), decided as the model
  // runs, instead of refusing the import (ValueDependentShapeError). Only backends with
  // takes_dynamic_shapes (native; blas for Gemm and MatMul) take the nodes that touch them.
  bool dynamic_shapes = false;
};

// memory_budget_bytes resolved (0 -> a quarter of physical memory).
int64_t tensor_memory_budget(const ImportOptions& options);

// Import refused because some shapes depend on the VALUES of graph inputs (a Range's
// limit, a Reshape's shape fed by an input, NonZero...). `inputs()` are those graph
// inputs, in graph order: bind them (ImportOptions::bound_inputs) to import a version
// specialised on their values. Empty when the values are computed at run time by
// nodes no input feeds (random ops), and for sequences and optionals (their tensors' shapes
// are the run's): binding cannot help then, --shapes dynamic can.
class ValueDependentShapeError : public Error {
 public:
  ValueDependentShapeError(const std::string& message, std::vector<std::string> inputs)
      : Error(ErrorKind::Unsupported, message), inputs_(std::move(inputs)) {}
  const std::vector<std::string>& inputs() const { return inputs_; }

 private:
  std::vector<std::string> inputs_;
};

struct ImportReport {
  std::vector<std::string> notes;  // e.g. "input 'x' dim 0 ('batch') set to 1"
  int folded_nodes = 0;
};

Graph import_onnx_file(const std::string& path, const ImportOptions& options, ImportReport* report = nullptr);
// `base_dir` resolves external data files.
Graph import_onnx_bytes(std::string_view bytes, const std::string& base_dir, const ImportOptions& options,
                        ImportReport* report = nullptr);

// The graph inputs whose values the model's shapes depend on (empty when it imports
// as is); other import errors are thrown.
std::vector<std::string> value_dependent_inputs(const std::string& path, const ImportOptions& options);

}  // namespace collage
