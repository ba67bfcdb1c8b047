// Hand-built ONNX protos for importer tests, including legacy-opset forms the
// sample builder never emits.
#pragma once

#include <string>
#include <vector>

#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "core/tensor_io/tensor_proto.h"
#include "onnx/onnx_pb.h"

namespace collage::testing {

class OnnxTestModel {
 public:
  explicit OnnxTestModel(int opset, int ir_version = 8) {
    model_.set_ir_version(ir_version);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  // A dim of -1 becomes the symbolic dim "batch".
  void input(const std::string& name, const std::vector<int64_t>& dims,
             int elem_type = onnx::TensorProto::FLOAT) {
    auto* vi = model_.mutable_graph()->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0)
        dim->set_dim_param("batch");
      else
        dim->set_dim_value(d);
    }
  }
  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }
  void initializer(const std::string& name, const Tensor& t) {
    *model_.mutable_graph()->add_initializer() = tensor_to_proto(t, name);
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(outputs.empty() ? op : op + "_" + outputs[0]);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  static void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_float(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
  }
  // A body (If's branches, Loop's and Scan's body): any graph built with OnnxTestModel.
  static void attr_graph(onnx::NodeProto& n, const std::string& name, const onnx::GraphProto& g) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = g;
  }
  onnx::GraphProto& graph() { return *model_.mutable_graph(); }
  std::string bytes() const { return model_.SerializeAsString(); }
  onnx::ModelProto& proto() { return model_; }

 private:
  onnx::ModelProto model_;
};

inline Graph import_bytes(const std::string& bytes, std::map<std::string, int64_t> dims = {},
                          ImportReport* report = nullptr) {
  ImportOptions options;
  options.dims = std::move(dims);
  options.evaluator = native::node_evaluator();
  return import_onnx_bytes(bytes, ".", options, report);
}

inline Graph import_model(const OnnxTestModel& m, std::map<std::string, int64_t> dims = {},
                          ImportReport* report = nullptr) {
  return import_bytes(m.bytes(), std::move(dims), report);
}

// Runs the graph with native kernels.
inline std::vector<Tensor> run_native(const Graph& g, const std::vector<Tensor>& inputs) {
  Executor ex(g, native::native_steps(g));
  return ex.run(inputs);
}

inline int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op;
  return n;
}

}  // namespace collage::testing
