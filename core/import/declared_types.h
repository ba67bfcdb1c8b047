// What a model states about its values' types and shapes (graph outputs, value_info) is
// never taken as fact: ONNX inference and the kernels decide, and a statement that
// disagrees with what import computes refuses the model, naming the value and its node
// (a wrong declaration would otherwise only surface as a kernel's output contradicting the
// graph at run time).
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/kernel.h"
#include "onnx/onnx_pb.h"

namespace collage::import_detail {

// The kind a type states and the tensor type of its elements (a tensor's own type, a sequence's or
// optional's element type); null when it is none of the kinds the IR holds (maps, sparse tensors,
// sequences of sequences): refused by the caller.
const onnx::TypeProto_Tensor* element_type(const onnx::TypeProto& type, ValueKind& kind);

struct DeclaredType {
  std::string name;
  std::string where;                   // "graph output" or "value_info"
  ValueKind kind = ValueKind::Tensor;  // a sequence's or optional's elem_type is its tensors'
  int elem_type = 0;                   // onnx::TensorProto::DataType; 0: not stated
  bool has_shape = false;              // false: no shape stated (any rank)
  std::vector<int64_t> dims;           // -1: symbolic or unstated dim
};

// Records the declarations and removes them from the proto (value_info entirely, the
// graph outputs' types), so that ONNX inference computes every type afresh.
std::vector<DeclaredType> take_declarations(onnx::GraphProto& graph);

// With shapes decided at run time: a value whose type ONNX inference could not find (an op
// its schemas do not type, e.g. OptionalGetElement of a sequence) takes its declared kind and
// element type; every run checks each output's kind and type against them (executor.h).
void adopt_declared_types(Graph& graph, const std::vector<DeclaredType>& declared);

// After shape completion: every declaration of a value still in `graph` must agree with
// its computed element type and with each stated dim, or InvalidModel names the value, the
// node and both. Where ONNX inference disagrees, the producer is run on placeholders: the
// kernel decides (if it agrees with the declaration, inference was wrong and is corrected).
void check_declarations(Graph& graph, const std::vector<DeclaredType>& declared,
                        const NodeEvaluator& evaluator, int64_t budget_bytes);

}  // namespace collage::import_detail
