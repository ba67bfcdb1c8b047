#include "backends/onnxruntime/ort_model.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "core/backend_api/int8_weights.h"
#include "core/import/qdq_writer.h"
#include "core/ir/error.h"
#include "core/tensor_io/tensor_proto.h"

namespace collage::ort {

namespace {

void describe(onnx::ValueInfoProto* info, const Value& v, bool rows = false) {
  if (v.name.empty()) throw Error(ErrorKind::Unsupported, "onnxruntime: a value without a name");
  if (!v.shape_known)
    throw Error(ErrorKind::Unsupported, "onnxruntime: value '" + v.name + "' has no static shape");
  info->set_name(v.name);
  onnx::TypeProto_Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(v.dtype));  // DType follows TensorProto's numbering
  onnx::TensorShapeProto* shape = t->mutable_shape();
  if (rows) {
    shape->add_dim()->set_dim_param("rows");
    shape->add_dim()->set_dim_value(v.shape.back());
    return;
  }
  for (int64_t d : v.shape) shape->add_dim()->set_dim_value(d);
}

bool leading_ones(const Shape& s) {
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] != 1) return false;
  return true;
}

void write_attribute(onnx::AttributeProto* a, const std::string& name, const Attribute& attr) {
  a->set_name(name);
  switch (attr.kind) {
    case AttrKind::Int:
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(attr.i);
      break;
    case AttrKind::Float:
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(attr.f);
      break;
    case AttrKind::String:
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(attr.s);
      break;
    case AttrKind::Ints:
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : attr.ints) a->add_ints(v);
      break;
    case AttrKind::Floats:
      a->set_type(onnx::AttributeProto::FLOATS);
      for (float v : attr.floats) a->add_floats(v);
      break;
    case AttrKind::Strings:
      a->set_type(onnx::AttributeProto::STRINGS);
      for (const std::string& v : attr.strings) a->add_strings(v);
      break;
    case AttrKind::Tensor:
      a->set_type(onnx::AttributeProto::TENSOR);
      *a->mutable_t() = tensor_to_proto(attr.t, name);
      break;
    case AttrKind::Graph:  // ort::offered keeps control-flow nodes out of every region
      throw Error(ErrorKind::Unsupported, "onnxruntime: attribute '" + name + "' is a body");
  }
}

// y = x W as dynamic int8 (see region_model); W's own initializer is skipped by the caller
// when nothing else in the region reads it.
void write_int8_matmul(onnx::GraphProto* g, const Graph& graph, const Node& n) {
  const Value& w = graph.value(n.inputs.at(1));
  QdqMatmul m{n.name, w.shape[0], w.shape[1], {}, {}};
  QuantizedWeights q = quantize_weights(w.constant->data<float>(), m.k, m.n);
  m.q = std::move(q.q);
  m.scale = std::move(q.scale);
  append_int8_matmul(*g, m, graph.value(n.inputs[0]).name, graph.value(n.outputs.at(0)).name);
}

}  // namespace

std::vector<NodeId> int8_nodes(const Graph& graph, const SubGraph& sub, Int8 int8) {
  std::vector<NodeId> out;
  if (int8 == Int8::Head) {
    if (sub.node_list.empty() || !int8_weights_matmul(graph, graph.node(sub.node_list.front())))
      throw Error(ErrorKind::Unsupported,
                  "onnxruntime-int8: the head must be a float MatMul of constant [K, N] weights");
    out.push_back(sub.node_list.front());
  } else if (int8 == Int8::EveryWeightsMatMul) {
    for (NodeId id : sub.node_list)
      if (int8_weights_matmul(graph, graph.node(id))) out.push_back(id);
  }
  return out;
}

int64_t rows_of(const Shape& shape) {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}

namespace {

// Ops that compute each row of their output from the same row of their operands alone.
bool row_wise_op(const std::string& op) {
  static const std::set<std::string> kOps = {
      "Relu",     "Sigmoid", "Tanh",        "Erf",       "Exp", "Log",       "Sqrt",     "Neg",
      "Abs",      "Gelu",    "HardSigmoid", "HardSwish", "Elu", "LeakyRelu", "Softplus", "Clip",
      "Identity", "Add",     "Sub",         "Mul",       "Div", "Pow",       "Max",      "Min"};
  return kOps.count(op) > 0;
}

// Normalizing over the last axis only (Softmax from opset 13: before it, `axis` flattened the
// trailing axes together).
bool last_axis(const Node& n, size_t rank) {
  if (n.op_type != "LayerNormalization" && n.opset < 13) return false;
  const int64_t axis = n.attr_int("axis", -1);
  return axis == -1 || axis == static_cast<int64_t>(rank) - 1;
}

// An operand a block of rows can take as it is: a constant broadcast along the rows (a scalar, or
// a row of the output's width), or a computed tensor of the output's shape.
bool row_operand(const Value& v, const Shape& out) {
  if (v.constant)
    return v.shape.empty() || (v.shape.size() <= 2 && leading_ones(v.shape) &&
                               (v.shape.back() == 1 || v.shape.back() == out.back()));
  return v.shape == out;
}

}  // namespace

bool row_splittable(const Graph& graph, const SubGraph& sub) {
  if (sub.inputs.empty() || sub.outputs.empty()) return false;
  int64_t rows = -1;
  for (const std::vector<ValueId>* list : {&sub.inputs, &sub.outputs})
    for (ValueId id : *list) {
      const Value& v = graph.value(id);
      if (!v.shape_known || v.shape.size() < 2) return false;
      if (rows < 0) rows = rows_of(v.shape);
      if (rows_of(v.shape) != rows) return false;
    }
  if (rows < 2) return false;
  for (NodeId id : sub.node_list) {
    const Node& n = graph.node(id);
    for (size_t i = 1; i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue) return false;  // LayerNormalization's mean and deviation
    const Shape& out = graph.value(n.outputs.at(0)).shape;
    if (out.size() < 2 || rows_of(out) != rows) return false;
    auto operand = [&](size_t i) -> const Value& { return graph.value(n.inputs.at(i)); };
    if (n.op_type == "MatMul" || n.op_type == "Gemm") {
      if (n.attr_int("transA", 0) != 0 || operand(0).constant || !operand(1).constant ||
          operand(1).shape.size() != 2)
        return false;
      if (n.inputs.size() > 2 && n.inputs[2] != kNoValue &&
          !(operand(2).constant && row_operand(operand(2), out)))
        return false;
    } else if (n.op_type == "Softmax" || n.op_type == "LogSoftmax" || n.op_type == "LayerNormalization") {
      if (!last_axis(n, out.size()) || operand(0).shape != out) return false;
      for (size_t i = 1; i < n.inputs.size(); ++i)
        if (n.inputs[i] != kNoValue && !(operand(i).constant && operand(i).shape.size() == 1)) return false;
    } else if (row_wise_op(n.op_type)) {
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] != kNoValue && !row_operand(operand(i), out)) return false;
    } else {
      return false;
    }
  }
  return true;
}

std::string region_model(const Graph& graph, const SubGraph& sub, Int8 int8, bool rows) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("collage");
  std::map<std::string, int> opsets;  // domain -> the model's opset for it
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("region");
  for (ValueId v : sub.inputs) describe(g->add_input(), graph.value(v), rows);
  const std::vector<NodeId> in_int8 = int8_nodes(graph, sub, int8);
  auto is_int8 = [&](NodeId id) { return std::find(in_int8.begin(), in_int8.end(), id) != in_int8.end(); };
  std::set<ValueId> fp32_reads;  // constants some node reads in fp32: only these become initializers
  for (NodeId id : sub.node_list) {
    const Node& n = graph.node(id);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (!(is_int8(id) && i == 1)) fp32_reads.insert(n.inputs[i]);
  }
  for (ValueId v : sub.constants) {
    if (!fp32_reads.count(v)) continue;
    const Value& value = graph.value(v);
    if (value.name.empty()) throw Error(ErrorKind::Unsupported, "onnxruntime: a constant without a name");
    *g->add_initializer() = tensor_to_proto(*value.constant, value.name);
  }
  for (NodeId id : sub.node_list) {
    const Node& n = graph.node(id);
    int& opset = opsets[n.domain];
    opset = std::max(opset, n.opset);
    if (is_int8(id)) {
      write_int8_matmul(g, graph, n);
      continue;
    }
    onnx::NodeProto* p = g->add_node();
    p->set_name(n.name);
    p->set_op_type(n.op_type);
    if (!n.domain.empty()) p->set_domain(n.domain);
    for (ValueId v : n.inputs) p->add_input(v == kNoValue ? std::string() : graph.value(v).name);
    for (ValueId v : n.outputs) p->add_output(v == kNoValue ? std::string() : graph.value(v).name);
    for (const auto& [name, attr] : n.attrs) {
      if (rows && name == "axis") {  // row_splittable: the last axis, of the [rows, last] form
        write_attribute(p->add_attribute(), name, Attribute::of_int(-1));
        continue;
      }
      write_attribute(p->add_attribute(), name, attr);
    }
  }
  // DynamicQuantizeLinear is opset 11; raising an older region's opset could change what its
  // other nodes mean, so such a region is refused instead.
  if (!in_int8.empty()) {
    int opset = 0;
    for (const char* domain : {"", "ai.onnx"})
      if (auto it = opsets.find(domain); it != opsets.end()) opset = std::max(opset, it->second);
    if (opset < 11)
      throw Error(ErrorKind::Unsupported, "onnxruntime-int8: the model is opset " + std::to_string(opset) +
                                              "; DynamicQuantizeLinear needs 11 or later");
  }
  for (ValueId v : sub.outputs) describe(g->add_output(), graph.value(v), rows);
  for (const auto& [domain, version] : opsets) {
    onnx::OperatorSetIdProto* o = model.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw Error(ErrorKind::Internal, "onnxruntime: cannot serialize a region");
  return bytes;
}

}  // namespace collage::ort
