// backends/onnxruntime_int8: ONNX Runtime's dynamic int8 fully connected layers, on the same
// 7-bit weights as onednn-int8, against the native fp32 reference (skipped, naming the reason,
// where the library is not installed).
#include "backends/onnxruntime_int8/onnxruntime_int8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onnxruntime/ort_model.h"
#include "backends/onnxruntime/ort_runtime.h"
#include "backends/onnxruntime_int8_region/onnxruntime_int8_region.h"
#include "core/ir/accuracy.h"

namespace collage {
namespace {

using namespace collage::testing;

Graph two_layers_and_an_activation_product();

std::vector<Tensor> run_int8(const Graph& g, const IndexSet& nodes, const std::vector<Tensor>& values,
                             const BackendSpec& backend = onnxruntime_int8_backend()) {
  SubGraph sub = make_subgraph(g, nodes);
  std::unique_ptr<Kernel> kernel = backend.compile(g, sub, CompileOptions{});
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
  HeapAllocator alloc;
  return kernel->run(args, alloc);
}

TEST(OnnxRuntimeInt8, IsAReducedPrecisionBackendOfConstantWeightMatMuls) {
  EXPECT_EQ(onnxruntime_int8_backend().precision, Precision::Int8);
  EXPECT_EQ(unavailable_reason(onnxruntime_int8_backend()), ort::unavailable_reason());
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  Graph g = dense_model(4, 64, 48);
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&onnxruntime_int8_backend()})) {
    labels.insert(c.label);
    const Node& head = g.node(static_cast<NodeId>(c.nodes.indices().front()));
    EXPECT_EQ(head.op_type, "MatMul") << c.label;
    EXPECT_TRUE(g.value(head.inputs[1]).constant) << c.label << ": two activations, nothing to quantize once";
  }
  EXPECT_TRUE(labels.count("MatMul+Add"));
}

// Activations on the u8 grid and weights on the 7-bit grid quantize without loss: the kernel must
// give the fp32 product exactly.
TEST(OnnxRuntimeInt8, ValuesOnTheQuantizationGridGiveTheExactProduct) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  const int64_t m = 5, k = 64, n = 24;
  OnnxTestModel model(17);
  model.input("x", {m, k});
  Tensor w(DType::Float32, {k, n}), bias(DType::Float32, {n});
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < n; ++j)  // each column reaches +-63, so its scale is 1
      w.data<float>()[i * n + j] = i == j % k ? 63.0f : static_cast<float>((i * 7 + j * 13) % 127 - 63);
  for (int64_t j = 0; j < n; ++j) bias.data<float>()[j] = static_cast<float>(j - 10);
  model.initializer("w", w);
  model.initializer("b", bias);
  model.node("MatMul", {"x", "w"}, {"mm"});
  model.node("Add", {"mm", "b"}, {"y"});
  model.output("y");
  Graph g = import_model(model);
  Tensor x(DType::Float32, {m, k});
  for (int64_t i = 0; i < m * k; ++i)  // integers in [-100, 155], both ends present: scale 1, zero point 100
    x.data<float>()[i] = i == 0 ? -100.0f : i == 1 ? 155.0f : static_cast<float>((i * 37) % 256 - 100);
  std::vector<Tensor> values = reference_values(g, {x});
  IndexSet all(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) all.add(i);
  std::vector<Tensor> got = run_int8(g, all, values);
  const Tensor& want = values[static_cast<size_t>(g.outputs[0])];
  ASSERT_EQ(got[0].shape(), want.shape());
  for (int64_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[0].data<float>()[i], want.data<float>()[i]) << i;
}

// Every candidate within 2% of its output's peak (7-bit weights, 8-bit activations), and not
// exact: the int8 path really ran.
TEST(OnnxRuntimeInt8, EveryCandidateIsWithinTwoPercentOfItsPeak) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  for (auto [batch, in, out] :
       {std::tuple<int64_t, int64_t, int64_t>{4, 64, 48}, {3, 33, 17}, {1, 256, 96}}) {
    Graph g = dense_model(batch, in, out);
    std::vector<Tensor> values = reference_values(g);
    AccuracyBudget budget = parse_accuracy("max-rel=2e-2,cosine=0.999");
    size_t checked = 0;
    for (const Candidate& c : enumerate_candidates(g, {&onnxruntime_int8_backend()})) {
      SubGraph sub = make_subgraph(g, c.nodes);
      std::vector<Tensor> got = run_int8(g, c.nodes, values);
      ASSERT_EQ(got.size(), sub.outputs.size());
      AccuracyMeasure acc =
          measure_accuracy(got[0], values[static_cast<size_t>(sub.outputs[0])], budget, c.label, false);
      EXPECT_TRUE(acc.ok()) << acc.failure;
      EXPECT_GT(acc.max_rel, 0) << c.label << ": int8 and fp32 should not agree exactly on random data";
      ++checked;
    }
    EXPECT_GE(checked, 2u);
  }
}

// x [1, rows, 64] -> MatMul(w) + bias + residual r [1, rows, 24]: rows flatten the leading dims.
Graph matmul_bias_residual(int64_t rows) {
  OnnxTestModel model(17);
  model.input("x", {1, rows, 64});
  model.input("r", {1, rows, 24});
  Tensor w(DType::Float32, {64, 24});
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 24; ++j)  // each column reaches +-63, so its scale is 1
      w.data<float>()[i * 24 + j] = i == j ? 63.0f : static_cast<float>((i * 7 + j * 13) % 127 - 63);
  model.initializer("w", w);
  model.initializer("b", random_tensor_f32({24}, 5));
  model.node("MatMul", {"x", "w"}, {"mm"});
  model.node("Add", {"mm", "b"}, {"mb"});
  model.node("Add", {"mb", "r"}, {"y"});
  model.output("y");
  return import_model(model);
}

std::vector<Tensor> run_threads(const Graph& g, const std::vector<Tensor>& values, int threads) {
  SubGraph sub = make_subgraph(g, all_nodes(g));
  std::unique_ptr<Kernel> kernel = onnxruntime_int8_backend().compile(g, sub, CompileOptions{threads});
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
  HeapAllocator alloc;
  return kernel->run(args, alloc);
}

TEST(OnnxRuntimeInt8, RowSplittableRegionsAreRowWiseLayersOfOneRowCount) {
  Graph g = matmul_bias_residual(7);
  EXPECT_TRUE(ort::row_splittable(g, make_subgraph(g, all_nodes(g))));
  Graph one_row = matmul_bias_residual(1);
  EXPECT_FALSE(ort::row_splittable(one_row, make_subgraph(one_row, all_nodes(one_row))))
      << "nothing to split";
  Graph two = two_layers_and_an_activation_product();
  IndexSet layers(two.nodes.size());
  for (size_t n : {0, 1, 2, 3}) layers.add(n);
  EXPECT_TRUE(ort::row_splittable(two, make_subgraph(two, layers)));
  EXPECT_FALSE(ort::row_splittable(two, make_subgraph(two, all_nodes(two))))
      << "a Transpose and a product of two activations mix rows";
}

// Rows on the u8 grid, each reaching both ends: every block of rows quantizes without loss, so
// however many blocks run at once, the kernel gives the fp32 result exactly, at every row.
TEST(OnnxRuntimeInt8, RowBlocksOnSeveralThreadsGiveTheExactProductOnTheGrid) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  const int64_t rows = 7;
  Graph g = matmul_bias_residual(rows);
  Tensor x(DType::Float32, {1, rows, 64});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < 64; ++j)
      x.data<float>()[i * 64 + j] = j == 0   ? -100.0f
                                    : j == 1 ? 155.0f
                                             : static_cast<float>((i * 64 + j) * 37 % 256 - 100);
  std::vector<Tensor> values = reference_values(g, {x, random_tensor_f32({1, rows, 24}, 9)});
  const Tensor& want = values[static_cast<size_t>(g.outputs[0])];
  for (int threads : {1, 2, 3}) {
    std::vector<Tensor> got = run_threads(g, values, threads);
    ASSERT_EQ(got.at(0).shape(), want.shape());
    for (int64_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got[0].data<float>()[i], want.data<float>()[i]) << threads << " threads, element " << i;
  }
}

// At 2 threads, 7 rows run as rows 0-2 and 3-6, each quantized alone: each block equals the
// 1-thread kernel run on that block's rows only, and the second block, of a far smaller range
// than the first, is quantized more finely than the whole tensor would be.
TEST(OnnxRuntimeInt8, EachBlockOfRowsIsQuantizedOnItsOwnRange) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  const int64_t rows = 7, split = 3;
  Graph g = matmul_bias_residual(rows);
  Tensor x = random_tensor_f32({1, rows, 64}, 21), r = random_tensor_f32({1, rows, 24}, 22);
  for (int64_t i = split * 64; i < rows * 64; ++i) x.data<float>()[i] *= 0.01f;
  std::vector<Tensor> values = reference_values(g, {x, r});
  std::vector<Tensor> blocks = run_threads(g, values, 2);
  std::vector<Tensor> whole = run_threads(g, values, 1);
  size_t differ = 0;
  for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, split}, {split, rows}}) {
    Graph part = matmul_bias_residual(end - begin);
    Tensor px(DType::Float32, {1, end - begin, 64}), pr(DType::Float32, {1, end - begin, 24});
    std::copy_n(x.data<float>() + begin * 64, px.size(), px.data<float>());
    std::copy_n(r.data<float>() + begin * 24, pr.size(), pr.data<float>());
    std::vector<Tensor> alone = run_threads(part, reference_values(part, {px, pr}), 1);
    for (int64_t i = 0; i < alone[0].size(); ++i) {
      ASSERT_EQ(blocks[0].data<float>()[begin * 24 + i], alone[0].data<float>()[i]) << "row block " << begin;
      differ += blocks[0].data<float>()[begin * 24 + i] != whole[0].data<float>()[begin * 24 + i];
    }
  }
  EXPECT_GT(differ, 0u) << "the 2-thread run did not split the rows";
}

// An opset-10 model: DynamicQuantizeLinear does not exist there, so the candidate is refused.
TEST(OnnxRuntimeInt8, AModelBeforeOpset11IsRefusedNamingIt) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  Graph g = dense_model(2, 8, 4);
  for (Node& n : g.nodes) n.opset = 10;
  size_t refused = 0;
  for (const Candidate& c : enumerate_candidates(g, {&onnxruntime_int8_backend()})) {
    ++refused;
    try {
      onnxruntime_int8_backend().compile(g, make_subgraph(g, c.nodes), CompileOptions{});
      ADD_FAILURE() << c.label << " compiled at opset 10";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
      EXPECT_NE(std::string(e.what()).find("opset 10"), std::string::npos) << e.what();
    }
  }
  EXPECT_GE(refused, 1u);
}

// x -> MatMul(w1) + b1 -> Relu -> MatMul(w2) -> h2; scores = MatMul(h2, h2^T): two layers of
// weights and one product of two activations.
Graph two_layers_and_an_activation_product() {
  OnnxTestModel model(17);
  model.input("x", {6, 40});
  model.initializer("w1", random_tensor_f32({40, 32}, 11));
  model.initializer("b1", random_tensor_f32({32}, 12));
  model.initializer("w2", random_tensor_f32({32, 24}, 13));
  model.node("MatMul", {"x", "w1"}, {"m1"});
  model.node("Add", {"m1", "b1"}, {"a1"});
  model.node("Relu", {"a1"}, {"r1"});
  model.node("MatMul", {"r1", "w2"}, {"h2"});
  auto& t = model.node("Transpose", {"h2"}, {"h2t"});
  OnnxTestModel::attr_ints(t, "perm", {1, 0});
  model.node("MatMul", {"h2", "h2t"}, {"scores"});
  model.output("scores");
  return import_model(model);
}

TEST(OnnxRuntimeInt8Region, IsAGraphLevelInt8BackendThatQuantizesOnlyWeightMatMuls) {
  const BackendSpec& region = onnxruntime_int8_region_backend();
  EXPECT_EQ(region.kind, BackendKind::GraphLevel);
  EXPECT_EQ(region.precision, Precision::Int8);
  EXPECT_EQ(unavailable_reason(region), ort::unavailable_reason());
  Graph g = two_layers_and_an_activation_product();
  std::vector<std::string> int8;
  for (NodeId n : ort::int8_nodes(g, make_subgraph(g, all_nodes(g)), ort::Int8::EveryWeightsMatMul))
    int8.push_back(g.value(g.node(n).inputs[1]).name);
  EXPECT_EQ(int8, (std::vector<std::string>{"w1", "w2"}));  // not the product of two activations
}

// A region computes each weight layer as the op-level int8 kernel computes it alone (the same
// weights, the same dynamic activation quantization), so chaining the op-level kernels gives the
// region's output; and it is not the fp32 one.
TEST(OnnxRuntimeInt8Region, ComputesWhatTheOpLevelInt8KernelsComputeInTurn) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  Graph g = two_layers_and_an_activation_product();
  std::vector<Tensor> fp32 = reference_values(g);
  std::vector<Tensor> region = run_int8(g, all_nodes(g), fp32, onnxruntime_int8_region_backend());
  ASSERT_EQ(region.size(), 1u);

  std::vector<Tensor> chained = fp32;  // layer by layer: op-level int8 kernels, the rest native
  auto kernel_of = [&](std::vector<size_t> nodes) {
    IndexSet s(g.nodes.size());
    for (size_t n : nodes) s.add(n);
    SubGraph sub = make_subgraph(g, s);
    std::vector<Tensor> out = run_int8(g, s, chained);
    chained[static_cast<size_t>(sub.outputs.at(0))] = std::move(out.at(0));
  };
  kernel_of({0, 1, 2});  // MatMul+Add+Relu
  kernel_of({3});        // MatMul
  HeapAllocator alloc;
  for (size_t id : {4, 5}) {  // Transpose, MatMul of two activations: native fp32, as in the region
    const Node& n = g.nodes[id];
    std::vector<const Tensor*> args;
    for (ValueId v : n.inputs) args.push_back(&chained[static_cast<size_t>(v)]);
    chained[static_cast<size_t>(n.outputs[0])] = native::evaluate_node(n, args, alloc).at(0);
  }
  const Tensor& want = chained[static_cast<size_t>(g.outputs[0])];
  const Tensor& exact = fp32[static_cast<size_t>(g.outputs[0])];
  float peak = 0, from_chain = 0, from_fp32 = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    peak = std::max(peak, std::fabs(exact.data<float>()[i]));
    from_chain = std::max(from_chain, std::fabs(region[0].data<float>()[i] - want.data<float>()[i]));
    from_fp32 = std::max(from_fp32, std::fabs(region[0].data<float>()[i] - exact.data<float>()[i]));
  }
  EXPECT_LE(from_chain, 1e-5f * peak);
  EXPECT_GT(from_fp32, 1e-4f * peak) << "the int8 path did not run";
  EXPECT_LE(from_fp32, 5e-2f * peak);
}

}  // namespace
}  // namespace collage
