#include "core/import/qdq_writer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/import/mapped_file.h"
#include "core/import/onnx_import.h"
#include "core/ir/error.h"
#include "onnx/onnx_pb.h"

namespace collage {

namespace {

onnx::NodeProto make_node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                          std::vector<std::string> outputs) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (const std::string& i : inputs) n.add_input(i);
  for (const std::string& o : outputs) n.add_output(o);
  return n;
}

// A numeric attribute (INT or FLOAT) of `node`, or `fallback`.
float attribute(const onnx::NodeProto& node, const std::string& name, float fallback) {
  for (const onnx::AttributeProto& a : node.attribute())
    if (a.name() == name) return a.type() == onnx::AttributeProto::INT ? static_cast<float>(a.i()) : a.f();
  return fallback;
}

}  // namespace

void append_int8_matmul(onnx::GraphProto& graph, const QdqMatmul& m, const std::string& x,
                        const std::string& y) {
  const std::string p = m.node + "/qdq/";
  onnx::TensorProto* wq = graph.add_initializer();
  wq->set_name(p + "weight_q");
  wq->set_data_type(onnx::TensorProto::INT8);
  wq->add_dims(m.k);
  wq->add_dims(m.n);
  wq->set_raw_data(m.q.data(), m.q.size());
  onnx::TensorProto* ws = graph.add_initializer();
  ws->set_name(p + "weight_scale");
  ws->set_data_type(onnx::TensorProto::FLOAT);
  ws->add_dims(m.n);
  ws->set_raw_data(m.scale.data(), m.scale.size() * sizeof(float));
  *graph.add_node() =
      make_node("DynamicQuantizeLinear", p + "quantize", {x}, {p + "x_q", p + "x_scale", p + "x_zero_point"});
  *graph.add_node() =
      make_node("MatMulInteger", p + "matmul", {p + "x_q", p + "weight_q", p + "x_zero_point"}, {p + "acc"});
  onnx::NodeProto cast = make_node("Cast", p + "cast", {p + "acc"}, {p + "acc_f"});
  onnx::AttributeProto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  *graph.add_node() = cast;
  *graph.add_node() = make_node("Mul", p + "scales", {p + "x_scale", p + "weight_scale"}, {p + "scale"});
  *graph.add_node() = make_node("Mul", p + "dequantize", {p + "acc_f", p + "scale"}, {y});
}

size_t write_qdq_model(const std::string& onnx_path, const std::vector<QdqMatmul>& matmuls,
                       const std::string& out_path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(onnx_path, ec);
  if (ec) throw Error(ErrorKind::Io, "cannot open model '" + onnx_path + "': " + ec.message());
  MappedFile file(onnx_path, static_cast<size_t>(size));
  onnx::ModelProto model;
  parse_onnx_model(file.bytes(), model);
  std::map<std::string, const QdqMatmul*> wanted;
  for (const QdqMatmul& m : matmuls) wanted[m.node] = &m;

  onnx::GraphProto* graph = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  size_t rewritten = 0;
  for (const onnx::NodeProto& node : graph->node()) {
    auto it = wanted.find(node.name());
    if (it == wanted.end()) {
      *nodes.Add() = node;
      continue;
    }
    const QdqMatmul& m = *it->second;
    const bool gemm = node.op_type() == "Gemm";
    const bool shape_ok = node.op_type() == "MatMul"
                              ? node.input_size() == 2
                              : gemm && (node.input_size() == 2 || node.input_size() == 3);
    if (!shape_ok || node.output_size() != 1)
      throw Error(ErrorKind::InvalidInput, "--qdq: node '" + m.node + "' is not a MatMul or Gemm");
    if (gemm && attribute(node, "transA", 0.0f) != 0.0f)
      throw Error(ErrorKind::InvalidInput, "--qdq: Gemm '" + m.node + "' transposes its activations");
    if (m.q.size() != static_cast<size_t>(m.k * m.n) || m.scale.size() != static_cast<size_t>(m.n))
      throw Error(ErrorKind::InvalidInput, "--qdq: node '" + m.node + "': weights do not match [K, N]");
    // The new nodes go to `nodes` (the rewritten list), their initializers to the graph. A Gemm's
    // weights come with transB and alpha folded in; its C (times beta) is added after the product.
    onnx::GraphProto part;
    const bool has_c = gemm && node.input_size() == 3 && !node.input(2).empty();
    const std::string p = m.node + "/qdq/";
    append_int8_matmul(part, m, node.input(0), has_c ? p + "product" : node.output(0));
    if (has_c) {
      std::string c = node.input(2);
      if (const float beta = attribute(node, "beta", 1.0f); beta != 1.0f) {
        onnx::TensorProto* b = part.add_initializer();
        b->set_name(p + "beta");
        b->set_data_type(onnx::TensorProto::FLOAT);
        b->add_float_data(beta);
        *part.add_node() = make_node("Mul", p + "scale_c", {c, p + "beta"}, {p + "c_scaled"});
        c = p + "c_scaled";
      }
      *part.add_node() = make_node("Add", p + "add_c", {p + "product", c}, {node.output(0)});
    }
    for (onnx::TensorProto& t : *part.mutable_initializer()) graph->add_initializer()->Swap(&t);
    for (onnx::NodeProto& n : *part.mutable_node()) nodes.Add()->Swap(&n);
    wanted.erase(it);
    ++rewritten;
  }
  if (!wanted.empty())
    throw Error(ErrorKind::InvalidInput, "--qdq: the model has no node '" + wanted.begin()->first + "'");
  graph->mutable_node()->Swap(&nodes);
  // Initializers only the rewritten MatMuls read (their fp32 weights) are dropped.
  std::set<std::string> read;
  for (const onnx::NodeProto& node : graph->node())
    for (const std::string& i : node.input()) read.insert(i);
  for (const onnx::ValueInfoProto& o : graph->output()) read.insert(o.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (const onnx::TensorProto& t : graph->initializer())
    if (read.count(t.name())) *kept.Add() = t;
  graph->mutable_initializer()->Swap(&kept);
  // DynamicQuantizeLinear and MatMulInteger need opset 11 of the default domain (raising an
  // older model's opset could change what its other nodes mean, so it is refused instead).
  for (const onnx::OperatorSetIdProto& o : model.opset_import())
    if (o.domain().empty() && o.version() < 11)
      throw Error(ErrorKind::InvalidInput, "--qdq: the model is opset " + std::to_string(o.version()) +
                                               "; integer MatMuls need 11 or later");
  const std::string partial = out_path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out))
      throw Error(ErrorKind::Io, "cannot write '" + out_path + "'");
  }
  if (std::rename(partial.c_str(), out_path.c_str()) != 0)
    throw Error(ErrorKind::Io, "cannot write '" + out_path + "'");
  return rewritten;
}

}  // namespace collage
