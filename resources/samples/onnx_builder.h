// Writes real ONNX models from C++ (tests, bundled samples): inputs with
// symbolic dims, deterministic random weights, PyTorch-style node names and the
// op patterns torch.onnx.export emits (Constant nodes, Shape->Gather->Concat->Reshape).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/ir/tensor.h"
#include "onnx/onnx_pb.h"

namespace collage {

using Dim = std::variant<int64_t, std::string>;  // a size or a symbolic name ("batch")

class OnnxBuilder {
 public:
  explicit OnnxBuilder(std::string graph_name, int opset = 17, uint64_t seed = 1);

  std::string input(const std::string& name, DType dtype, const std::vector<Dim>& dims);
  void output(const std::string& value, const std::string& rename, const std::vector<Dim>& dims,
              DType dtype = DType::Float32);

  // Initialisers.
  std::string initializer(const std::string& name, const Tensor& t);
  std::string random_normal(const std::string& name, const Shape& shape, float stddev);
  std::string ints(const std::string& name, const std::vector<int64_t>& values);  // 1-D int64
  std::string scalar(const std::string& name, float value);
  // A Constant node (PyTorch emits these for small tensors).
  std::string constant_node(const std::vector<int64_t>& values, bool as_scalar = false);
  std::string float_constant(float value);  // a float32 scalar Constant node

  // Nodes: names "<scope>/<Op>" and outputs "<scope>/<Op>_output_<i>".
  std::vector<std::string> node(const std::string& op, const std::vector<std::string>& inputs,
                                std::vector<onnx::AttributeProto> attrs = {}, int outputs = 1);
  std::string op(const std::string& op, const std::vector<std::string>& inputs,
                 std::vector<onnx::AttributeProto> attrs = {}) {
    return node(op, inputs, std::move(attrs))[0];
  }
  void push_scope(const std::string& scope) { scopes_.push_back(scope); }
  void pop_scope() { scopes_.pop_back(); }

  static onnx::AttributeProto attr(const std::string& name, int64_t v);
  static onnx::AttributeProto attr(const std::string& name, float v);
  static onnx::AttributeProto attr(const std::string& name, const std::string& v);
  static onnx::AttributeProto attr(const std::string& name, const std::vector<int64_t>& v);

  // Layers as torch.onnx.export writes them (opset 17).
  std::string conv(const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride, int64_t pad,
                   int64_t group = 1, bool bias = true, int spatial = 2);
  std::string batch_norm(const std::string& x, int64_t channels);
  std::string relu(const std::string& x) { return op("Relu", {x}); }
  std::string relu6(const std::string& x);  // Clip(0, 6) with Constant bounds
  std::string linear(const std::string& x, int64_t in, int64_t out, bool rank2);  // Gemm or MatMul+Add
  std::string layer_norm(const std::string& x, int64_t d);
  std::string gelu(const std::string& x);  // erf form: x * 0.5 * (1 + erf(x / sqrt(2)))
  // x.view(x.size(0), rest...) via Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
  std::string dynamic_reshape(const std::string& x, const std::vector<int64_t>& rest);

  // The same model as a newer exporter writes it: only the opset import changes, so it
  // must hold no op whose form differs between the two opsets.
  void set_opset(int opset);
  // As model.half() exports: every float32 initializer, Constant, graph input and output
  // becomes float16 (round to nearest even); graph logic on int64 tensors is untouched.
  void convert_to_float16();

  onnx::ModelProto build() const { return model_; }
  // Initialisers of at least `external_threshold` bytes go to "<file>.data" (-1: none).
  void save(const std::string& path, int64_t external_threshold = -1) const;
  size_t parameter_count() const;

 private:
  std::string next_name(const std::string& op) const;  // the name the next `op` node gets
  std::string scoped(const std::string& op);
  float normal();

  onnx::ModelProto model_;
  std::vector<std::string> scopes_;
  std::map<std::string, int> counters_;
  uint64_t rng_;
};

}  // namespace collage
