// backends/onednn_int8: the int8 fully connected kernels against the native fp32 reference.
#include "backends/onednn_int8/onednn_int8.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onednn_int8/int8_matmul.h"
#include "core/ir/accuracy.h"

namespace collage {
namespace {

using namespace collage::testing;

// The kernel's outputs for `nodes`, fed the reference values.
std::vector<Tensor> run_int8(const Graph& g, const IndexSet& nodes, const std::vector<Tensor>& values) {
  SubGraph sub = make_subgraph(g, nodes);
  std::unique_ptr<Kernel> kernel = onednn_int8_backend().compile(g, sub, CompileOptions{});
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
  HeapAllocator alloc;
  return kernel->run(args, alloc);
}

TEST(OnednnInt8, IsAReducedPrecisionBackendOfFullyConnectedLayers) {
  EXPECT_EQ(onednn_int8_backend().precision, Precision::Int8);
  Graph g = dense_model(4, 64, 48);
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&onednn_int8_backend()})) labels.insert(c.label);
  EXPECT_TRUE(labels.count("Gemm+Relu"));
  EXPECT_TRUE(labels.count("MatMul+Add"));
  // Two activations: nothing to quantize once, so no int8 kernel.
  for (const Candidate& c : enumerate_candidates(g, {&onednn_int8_backend()}))
    for (size_t n : c.nodes.indices())
      EXPECT_FALSE(g.node(static_cast<NodeId>(n)).op_type == "MatMul" &&
                   !g.value(g.node(static_cast<NodeId>(n)).inputs[1]).constant)
          << c.label;
}

// Every candidate within 2% of its output's peak: 7-bit weights (relative step 1/126 at a
// column's largest weight) and 8-bit activations, errors averaging out over K = 64 terms.
TEST(OnednnInt8, EveryCandidateIsWithinTwoPercentOfItsPeak) {
  for (auto [batch, in, out] :
       {std::tuple<int64_t, int64_t, int64_t>{4, 64, 48}, {3, 33, 17}, {1, 256, 96}}) {
    Graph g = dense_model(batch, in, out);
    std::vector<Tensor> values = reference_values(g);
    AccuracyBudget budget = parse_accuracy("max-rel=2e-2,cosine=0.999");
    size_t checked = 0;
    for (const Candidate& c : enumerate_candidates(g, {&onednn_int8_backend()})) {
      SubGraph sub = make_subgraph(g, c.nodes);
      std::vector<Tensor> got = run_int8(g, c.nodes, values);
      ASSERT_EQ(got.size(), sub.outputs.size());
      AccuracyMeasure m =
          measure_accuracy(got[0], values[static_cast<size_t>(sub.outputs[0])], budget, c.label, false);
      EXPECT_TRUE(m.ok()) << m.failure;
      EXPECT_GT(m.max_rel, 0) << c.label << ": int8 and fp32 should not agree exactly on random data";
      ++checked;
    }
    EXPECT_GE(checked, 4u);
  }
}

// Activations on the u8 grid and weights on the 7-bit grid quantize without loss: the int8
// kernel must then give the fp32 product exactly (integer sums well inside fp32's 24 bits), with
// the bias or Gemm's scaled C added after the product's scales, in either form of the kernel.
TEST(OnednnInt8, ValuesOnTheQuantizationGridGiveTheExactProduct) {
  const int64_t m = 5, k = 64, n = 24;
  for (bool gemm : {false, true}) {
    OnnxTestModel model(17);
    model.input("x", {m, k});
    Tensor w(DType::Float32, gemm ? Shape{n, k} : Shape{k, n}), bias(DType::Float32, {n});
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n; ++j)  // each column reaches +-63, so its scale is 1
        w.data<float>()[gemm ? j * k + i : i * n + j] =
            i == j % k ? 63.0f : static_cast<float>((i * 7 + j * 13) % 127 - 63);
    for (int64_t j = 0; j < n; ++j) bias.data<float>()[j] = static_cast<float>(j - 10);
    model.initializer("w", w);
    model.initializer("b", bias);
    if (gemm) {
      onnx::NodeProto& head = model.node("Gemm", {"x", "w", "b"}, {"mm"});
      OnnxTestModel::attr_int(head, "transB", 1);
      OnnxTestModel::attr_float(head, "beta", 2.0f);
      model.node("Relu", {"mm"}, {"y"});
    } else {
      model.node("MatMul", {"x", "w"}, {"mm"});
      model.node("Add", {"mm", "b"}, {"y"});
    }
    model.output("y");
    Graph g = import_model(model);
    Tensor x(DType::Float32, {m, k});
    // Halves of the integers in [-100, 155], both ends present: scale 0.5, zero point 100.
    for (int64_t i = 0; i < m * k; ++i)
      x.data<float>()[i] = 0.5f * (i == 0   ? -100.0f
                                   : i == 1 ? 155.0f
                                            : static_cast<float>((i * 37) % 256 - 100));
    std::vector<Tensor> values = reference_values(g, {x});
    IndexSet all(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i) all.add(i);
    std::vector<Tensor> got = run_int8(g, all, values);
    const Tensor& want = values[static_cast<size_t>(g.outputs[0])];
    size_t positive = 0;
    for (int64_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[0].data<float>()[i], want.data<float>()[i]) << (gemm ? "Gemm " : "MatMul ") << i;
      positive += want.data<float>()[i] > 0;
    }
    EXPECT_GT(positive, 0u);
  }
}

TEST(OnednnInt8, WeightsUseSevenBitsPerColumn) {
  Tensor w = random_tensor_f32({32, 10}, 5, 3.0f);
  QuantizedWeights q = quantize_weights(w.data<float>(), 32, 10);
  for (int64_t j = 0; j < 10; ++j) {
    int peak = 0;
    for (int64_t i = 0; i < 32; ++i) {
      int v = q.q[static_cast<size_t>(i * 10 + j)];
      peak = std::max(peak, std::abs(v));
      EXPECT_LE(
          std::fabs(w.data<float>()[i * 10 + j] - static_cast<float>(v) * q.scale[static_cast<size_t>(j)]),
          q.scale[static_cast<size_t>(j)] * 0.5f * 1.0001f);
    }
    EXPECT_EQ(peak, kWeightLevels) << "column " << j;
  }
}

}  // namespace
}  // namespace collage
