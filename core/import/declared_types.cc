#include "core/import/declared_types.h"

#include <cctype>

#include "core/import/shape_completion.h"
#include "core/ir/error.h"

namespace collage::import_detail {

const onnx::TypeProto_Tensor* element_type(const onnx::TypeProto& type, ValueKind& kind) {
  kind = ValueKind::Tensor;
  if (type.has_tensor_type()) return &type.tensor_type();
  const onnx::TypeProto* elem = nullptr;
  if (type.has_sequence_type()) {
    kind = ValueKind::Sequence;
    elem = &type.sequence_type().elem_type();
  } else if (type.has_optional_type()) {
    const onnx::TypeProto& inner = type.optional_type().elem_type();
    if (inner.has_tensor_type()) {
      kind = ValueKind::OptionalTensor;
      return &inner.tensor_type();
    }
    if (!inner.has_sequence_type()) return nullptr;
    kind = ValueKind::OptionalSequence;
    elem = &inner.sequence_type().elem_type();
  } else {
    return nullptr;
  }
  return elem->has_tensor_type() ? &elem->tensor_type() : nullptr;
}

namespace {

DeclaredType declaration(const onnx::ValueInfoProto& vi, const char* where) {
  DeclaredType d;
  d.name = vi.name();
  d.where = where;
  const onnx::TypeProto_Tensor* elem = element_type(vi.type(), d.kind);
  if (!elem) return d;  // maps: refused by import where used
  const auto& tt = *elem;
  if (d.kind != ValueKind::Tensor) {  // a sequence's tensors each have their own shape
    d.elem_type = tt.elem_type();
    return d;
  }
  d.elem_type = tt.elem_type();
  d.has_shape = tt.has_shape();
  for (const auto& dim : tt.shape().dim())
    d.dims.push_back(dim.has_dim_value() && dim.dim_value() >= 0 ? dim.dim_value() : -1);
  return d;
}

std::string elem_type_name(int elem_type) {
  try {
    return dtype_name(dtype_from_onnx(elem_type));
  } catch (const Error&) {
    std::string name =
        onnx::TensorProto_DataType_IsValid(elem_type)
            ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type))
            : "element type " + std::to_string(elem_type);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
  }
}

std::string dims_to_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + (dims[i] < 0 ? "?" : std::to_string(dims[i]));
  return s + "]";
}

bool same_type(int elem_type, DType computed) {
  try {
    return dtype_from_onnx(elem_type) == computed;
  } catch (const Error&) {
    return false;  // a type import cannot hold is not what it computed
  }
}

bool shape_fits(const DeclaredType& d, const Shape& computed) {
  if (!d.has_shape) return true;
  if (d.dims.size() != computed.size()) return false;
  for (size_t i = 0; i < computed.size(); ++i)
    if (d.dims[i] >= 0 && d.dims[i] != computed[i]) return false;
  return true;
}

}  // namespace

std::vector<DeclaredType> take_declarations(onnx::GraphProto& graph) {
  std::vector<DeclaredType> declared;
  for (const auto& out : graph.output()) declared.push_back(declaration(out, "graph output"));
  for (const auto& vi : graph.value_info()) declared.push_back(declaration(vi, "value_info"));
  graph.clear_value_info();
  for (auto& out : *graph.mutable_output()) out.clear_type();
  return declared;
}

void adopt_declared_types(Graph& graph, const std::vector<DeclaredType>& declared) {
  for (const DeclaredType& d : declared) {
    ValueId id = graph.find_value(d.name);
    if (id == kNoValue || d.elem_type == 0 || graph.value(id).dtype != DType::Undefined) continue;
    Value& v = graph.value(id);
    try {
      v.dtype = dtype_from_onnx(d.elem_type);
    } catch (const Error&) {
      continue;  // a type the IR cannot hold: the final check names the value
    }
    v.kind = d.kind;
    v.shape_known = false;
  }
}

void check_declarations(Graph& graph, const std::vector<DeclaredType>& declared,
                        const NodeEvaluator& evaluator, int64_t budget_bytes) {
  auto fits = [](const DeclaredType& d, DType dtype, const Shape& shape) {
    return (d.elem_type == 0 || same_type(d.elem_type, dtype)) && shape_fits(d, shape);
  };
  for (const DeclaredType& d : declared) {
    ValueId id = graph.find_value(d.name);
    if (id == kNoValue) continue;  // folded or pruned away: nothing computes it at run time
    Value& v = graph.value(id);
    if (fits(d, v.dtype, v.shape)) continue;
    // A shape decided at run time: only the element type can be held to the declaration here.
    if (!v.shape_known && !v.constant && (d.elem_type == 0 || same_type(d.elem_type, v.dtype))) continue;
    DType dtype = v.dtype;
    Shape shape = v.shape;
    if (v.producer != kNoNode && !v.constant) {
      const Node& n = graph.node(v.producer);
      auto outputs = evaluate_on_placeholders(graph, n, evaluator, budget_bytes);
      for (size_t k = 0; outputs && k < n.outputs.size() && k < outputs->size(); ++k) {
        if (n.outputs[k] != id) continue;
        dtype = (*outputs)[k].dtype();
        shape = (*outputs)[k].shape();
      }
      if (outputs && fits(d, dtype, shape)) {  // the model is right, libonnx's inference was not
        v.dtype = dtype;
        v.shape = shape;
        continue;
      }
    }
    std::string stated = d.elem_type == 0 ? "" : elem_type_name(d.elem_type);
    if (d.has_shape) stated += (stated.empty() ? "" : " ") + dims_to_string(d.dims);
    std::string source = v.producer != kNoNode ? graph.node(v.producer).describe() + " computes"
                         : v.constant          ? "its constant value is"
                                               : "the graph input is";
    throw Error(ErrorKind::InvalidModel, d.where + " '" + d.name + "' is declared " + stated + " but " +
                                             source + " " + dtype_name(dtype) + " " + shape_to_string(shape));
  }
}

}  // namespace collage::import_detail
