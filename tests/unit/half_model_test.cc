// fp16 / bf16 models end to end: half initialisers in both TensorProto forms
// (raw_data and int32_data), half graph inputs and outputs, native execution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "backends/native/native_kernel.h"
#include "core/tensor_io/tensor_proto.h"
#include "onnx/onnx_pb.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;
using testing::run_native;

Tensor half_tensor(DType dtype, Shape shape, const std::vector<float>& v) {
  Tensor t(dtype, std::move(shape));
  auto* p = static_cast<uint16_t*>(t.raw());
  for (size_t i = 0; i < v.size(); ++i)
    p[i] = dtype == DType::Float16 ? float_to_half(v[i]) : float_to_bfloat16(v[i]);
  return t;
}

TEST(HalfModel, Float16AddReluSoftmaxRunsNatively) {
  OnnxTestModel m(17);
  m.input("x", {2, 3}, onnx::TensorProto::FLOAT16);
  m.initializer("b", half_tensor(DType::Float16, {3}, {0.5f, -1.0f, 2.0f}));
  m.node("Add", {"x", "b"}, {"s"});
  m.node("Relu", {"s"}, {"r"});
  m.node("Softmax", {"r"}, {"y"});
  m.output("y");
  Graph g = import_model(m);
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::Float16);
  auto out = run_native(g, {half_tensor(DType::Float16, {2, 3}, {1, 2, 3, -4, 0, 1})});
  ASSERT_EQ(out[0].dtype(), DType::Float16);
  std::vector<double> y = out[0].to_double_vector();
  // Row 0: relu([1.5, 1, 5]); row 1: relu([-3.5, -1, 3]) = [0, 0, 3].
  auto softmax = [](double a, double b, double c, double v) {
    return std::exp(v) / (std::exp(a) + std::exp(b) + std::exp(c));
  };
  const std::vector<double> want = {softmax(1.5, 1, 5, 1.5), softmax(1.5, 1, 5, 1), softmax(1.5, 1, 5, 5),
                                    softmax(0, 0, 3, 0),     softmax(0, 0, 3, 0),   softmax(0, 0, 3, 3)};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-3 + 1e-3 * want[i]) << i;
}

TEST(HalfModel, HalfInitialisersInInt32DataForm) {
  for (auto [dtype, onnx_type] : {std::pair{DType::Float16, onnx::TensorProto::FLOAT16},
                                  std::pair{DType::BFloat16, onnx::TensorProto::BFLOAT16}}) {
    onnx::TensorProto p;
    p.set_name("w");
    p.set_data_type(onnx_type);
    p.add_dims(2);
    Tensor bits = half_tensor(dtype, {2}, {1.5f, -2.0f});
    for (int i = 0; i < 2; ++i) p.add_int32_data(static_cast<const uint16_t*>(bits.raw())[i]);
    Tensor t = tensor_from_proto(p, ".");
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.to_double_vector(), (std::vector<double>{1.5, -2.0}));
    // And back: written as raw_data, read back unchanged.
    Tensor again = tensor_from_proto(tensor_to_proto(t, "w"), ".");
    EXPECT_EQ(again.dtype(), dtype);
    EXPECT_EQ(again.to_double_vector(), (std::vector<double>{1.5, -2.0}));
  }
}

TEST(HalfModel, BFloat16CastChain) {
  OnnxTestModel m(17);
  m.input("x", {3});
  auto& c1 = m.node("Cast", {"x"}, {"h"});
  OnnxTestModel::attr_int(c1, "to", onnx::TensorProto::BFLOAT16);
  m.node("Neg", {"h"}, {"n"});
  auto& c2 = m.node("Cast", {"n"}, {"y"});
  OnnxTestModel::attr_int(c2, "to", onnx::TensorProto::FLOAT);
  m.output("y");
  Graph g = import_model(m);
  auto out = run_native(g, {Tensor::from_vector<float>({3}, {1.0f, 1.00390625f, 3.0f})});
  ASSERT_EQ(out[0].dtype(), DType::Float32);
  // 1 + 2^-8 is a tie between bfloat16 neighbours 1 and 1 + 2^-7: nearest even is 1.
  EXPECT_EQ(out[0].to_double_vector(), (std::vector<double>{-1.0, -1.0, -3.0}));
}

// The import computes half models in float32 (core/import/half_compute.h): the
// interface keeps its types, explicit Casts keep their rounding, and every other
// node sees float32 so the float32 backends can claim it.
TEST(HalfModel, ComputesInFloat32BehindAHalfInterface) {
  OnnxTestModel m(17);
  m.input("x", {2, 4}, onnx::TensorProto::FLOAT16);
  m.initializer(
      "w", half_tensor(DType::Float16, {4, 3}, {0.5f, -1, 2, 0.25f, 1, -0.5f, 1.5f, 3, -2, 0.125f, 1, 1}));
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Relu", {"mm"}, {"r"});
  auto& up = m.node("Cast", {"r"}, {"r32"});
  OnnxTestModel::attr_int(up, "to", onnx::TensorProto::FLOAT);
  m.node("Sigmoid", {"r32"}, {"s32"});
  auto& down = m.node("Cast", {"s32"}, {"s16"});
  OnnxTestModel::attr_int(down, "to", onnx::TensorProto::FLOAT16);
  m.node("Add", {"s16", "r"}, {"y"});
  m.output("y");

  ImportReport report;
  Graph g = import_model(m, {}, &report);
  EXPECT_EQ(g.value(g.inputs[0]).dtype, DType::Float16);
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::Float16);
  for (const Value& v : g.values) {
    if (!is_half_dtype(v.dtype)) continue;
    bool cast_made = v.producer != kNoNode && g.node(v.producer).op_type == "Cast";
    EXPECT_TRUE(v.is_graph_input || v.is_graph_output || cast_made) << v.name;
    for (NodeId c : v.consumers) EXPECT_EQ(g.node(c).op_type, "Cast") << v.name;
  }
  for (const Node& n : g.nodes) {
    if (n.op_type != "MatMul" && n.op_type != "Relu" && n.op_type != "Add") continue;
    for (ValueId v : n.inputs) EXPECT_EQ(g.value(v).dtype, DType::Float32) << n.name;
  }
  EXPECT_NE(report.notes.back().find("compute in float32"), std::string::npos);

  ImportOptions as_written;
  as_written.evaluator = native::node_evaluator();
  as_written.half_in_float32 = false;
  Graph h = import_onnx_bytes(m.bytes(), ".", as_written);
  EXPECT_EQ(h.value(h.find_value("mm")).dtype, DType::Float16);

  std::vector<float> xs = {1, -2, 0.5f, 3, -1, 0.25f, 2, -0.75f};
  Tensor x = half_tensor(DType::Float16, {2, 4}, xs);
  std::vector<double> lowered = run_native(g, {x})[0].to_double_vector();
  std::vector<double> written = run_native(h, {x})[0].to_double_vector();
  // Independent reference in double, with the explicit Cast's rounding applied.
  const std::vector<float> w = {0.5f, -1, 2, 0.25f, 1, -0.5f, 1.5f, 3, -2, 0.125f, 1, 1};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double acc = 0;
      for (int k = 0; k < 4; ++k) acc += double(half_to_float(float_to_half(xs[i * 4 + k]))) * w[k * 3 + j];
      double r = std::max(acc, 0.0);
      double s = half_to_float(float_to_half(static_cast<float>(1 / (1 + std::exp(-r)))));
      double want = s + r;
      size_t at = static_cast<size_t>(i * 3 + j);
      EXPECT_NEAR(lowered[at], want, 2e-3 * (1 + std::fabs(want))) << at;
      EXPECT_NEAR(written[at], want, 2e-3 * (1 + std::fabs(want))) << at;
    }
}

}  // namespace
}  // namespace collage
