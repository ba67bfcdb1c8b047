// core/import/qdq_writer: the int8 MatMuls and Gemms of a placement written as ONNX integer ops
// compute what the onednn-int8 kernels compute.
#include "core/import/qdq_writer.h"

#include <gtest/gtest.h>

#include <fstream>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/native/native_kernel.h"
#include "backends/onednn_int8/int8_matmul.h"
#include "backends/onednn_int8/onednn_int8.h"
#include "core/import/onnx_import.h"
#include "core/ir/accuracy.h"
#include "temp_dir.h"

namespace collage {
namespace {

using namespace collage::testing;

OnnxTestModel matmul_model(const Tensor& w) {
  OnnxTestModel m(17);
  m.input("x", {2, 4, w.shape()[0]});
  m.initializer("w", w);
  m.initializer("b", random_tensor_f32({w.shape()[1]}, 9));
  m.node("MatMul", {"x", "w"}, {"mm"}).set_name("fc/MatMul");
  m.node("Add", {"mm", "b"}, {"y"});
  m.output("y");
  return m;
}

Graph import_file(const std::string& path) {
  ImportOptions options;
  options.evaluator = native::node_evaluator();
  return import_onnx_file(path, options);
}

TEST(QdqWriter, TheIntegerOpsComputeWhatTheInt8KernelComputes) {
  ScopedTempDir dir("collage_qdq");
  Tensor w = random_tensor_f32({64, 48}, 4);
  {
    std::ofstream out(dir.file("fp32.onnx"), std::ios::binary);
    out << matmul_model(w).bytes();
  }
  QuantizedWeights q = quantize_weights(w.data<float>(), 64, 48);
  ASSERT_EQ(
      write_qdq_model(dir.file("fp32.onnx"), {{"fc/MatMul", 64, 48, q.q, q.scale}}, dir.file("qdq.onnx")),
      1u);

  Graph fp32 = import_file(dir.file("fp32.onnx"));
  Graph qdq = import_file(dir.file("qdq.onnx"));
  EXPECT_EQ(count_ops(qdq, "MatMul"), 0);
  EXPECT_EQ(count_ops(qdq, "MatMulInteger"), 1);
  EXPECT_EQ(count_ops(qdq, "DynamicQuantizeLinear"), 1);
  for (const Value& v : qdq.values) EXPECT_NE(v.name, "w") << "the fp32 weights are dropped";

  // The int8 kernel (MatMul+Add) on the original, the QDQ model by the native kernels.
  std::vector<Tensor> values = reference_values(fp32);
  IndexSet both(fp32.nodes.size());
  for (size_t i = 0; i < fp32.nodes.size(); ++i) both.add(i);
  SubGraph sub = make_subgraph(fp32, both);
  std::unique_ptr<Kernel> kernel = onednn_int8_backend().compile(fp32, sub, CompileOptions{});
  std::vector<const Tensor*> args{&values[static_cast<size_t>(fp32.inputs[0])]};
  HeapAllocator alloc;
  Tensor int8 = kernel->run(args, alloc).at(0);
  Tensor from_qdq = run_native(qdq, {values[static_cast<size_t>(fp32.inputs[0])]}).at(0);
  const Tensor& reference = values[static_cast<size_t>(fp32.outputs[0])];
  // Rounding ties (half-to-even there, half-up here) may move an activation by one step.
  AccuracyMeasure same = measure_accuracy(from_qdq, int8, parse_accuracy("max-rel=2e-3"), "y", false);
  EXPECT_TRUE(same.ok()) << same.failure;
  EXPECT_GT(measure_accuracy(from_qdq, reference, parse_accuracy("max-rel=1"), "y", false).max_rel, 0)
      << "quantized, so not exactly the fp32 result";
}

// A Gemm (transB, alpha, beta, a C row), as the classifier heads and attention projections of
// PyTorch exports are written: the weights with transB and alpha folded, C times beta added after.
TEST(QdqWriter, AGemmIsWrittenWithItsAttributesFolded) {
  ScopedTempDir dir("collage_qdq");
  {
    OnnxTestModel m(17);
    m.input("x", {5, 40});
    m.initializer("w", random_tensor_f32({33, 40}, 4));
    m.initializer("c", random_tensor_f32({33}, 5));
    auto& gemm = m.node("Gemm", {"x", "w", "c"}, {"y"});
    gemm.set_name("head/Gemm");
    OnnxTestModel::attr_int(gemm, "transB", 1);
    OnnxTestModel::attr_float(gemm, "alpha", 0.5f);
    OnnxTestModel::attr_float(gemm, "beta", 2.0f);
    m.output("y");
    std::ofstream out(dir.file("fp32.onnx"), std::ios::binary);
    out << m.bytes();
  }
  Graph fp32 = import_file(dir.file("fp32.onnx"));
  ASSERT_EQ(fp32.nodes.size(), 1u);
  QuantizedWeights q = quantize_node_weights(fp32, fp32.nodes[0]);
  ASSERT_EQ(
      write_qdq_model(dir.file("fp32.onnx"), {{"head/Gemm", 40, 33, q.q, q.scale}}, dir.file("qdq.onnx")),
      1u);
  Graph qdq = import_file(dir.file("qdq.onnx"));
  EXPECT_EQ(count_ops(qdq, "Gemm"), 0);
  EXPECT_EQ(count_ops(qdq, "MatMulInteger"), 1);

  std::vector<Tensor> values = reference_values(fp32);
  IndexSet all(1);
  all.add(0);
  std::unique_ptr<Kernel> kernel =
      onednn_int8_backend().compile(fp32, make_subgraph(fp32, all), CompileOptions{});
  std::vector<const Tensor*> args{&values[static_cast<size_t>(fp32.inputs[0])]};
  HeapAllocator alloc;
  Tensor int8 = kernel->run(args, alloc).at(0);
  Tensor from_qdq = run_native(qdq, {values[static_cast<size_t>(fp32.inputs[0])]}).at(0);
  AccuracyMeasure same = measure_accuracy(from_qdq, int8, parse_accuracy("max-rel=2e-3"), "y", false);
  EXPECT_TRUE(same.ok()) << same.failure;
  AccuracyMeasure near = measure_accuracy(from_qdq, values[static_cast<size_t>(fp32.outputs[0])],
                                          parse_accuracy("max-rel=3e-2,cosine=0.999"), "y", false);
  EXPECT_TRUE(near.ok()) << near.failure;
}

TEST(QdqWriter, RefusesANodeTheModelLacks) {
  ScopedTempDir dir("collage_qdq");
  Tensor w = random_tensor_f32({8, 4}, 4);
  {
    std::ofstream out(dir.file("fp32.onnx"), std::ios::binary);
    out << matmul_model(w).bytes();
  }
  QuantizedWeights q = quantize_weights(w.data<float>(), 8, 4);
  try {
    write_qdq_model(dir.file("fp32.onnx"), {{"no/such/MatMul", 8, 4, q.q, q.scale}}, dir.file("qdq.onnx"));
    ADD_FAILURE() << "wrote a model for a node it lacks";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("no/such/MatMul"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("qdq.onnx")));
}

}  // namespace
}  // namespace collage
