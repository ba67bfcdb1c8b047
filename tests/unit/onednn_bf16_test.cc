// backends/onednn_bf16: the bf16 fully connected kernels against the native fp32 reference,
// on CPUs with bf16 dot products, and their refusal on the others.
#include "backends/onednn_bf16/onednn_bf16.h"

#include <cpuid.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/registry.h"
#include "core/ir/accuracy.h"

namespace collage {
namespace {

using namespace collage::testing;

// AVX512_BF16 (CPUID 7.1 EAX bit 5) or AMX-BF16 (CPUID 7.0 EDX bit 22), read independently
// of oneDNN, and no ONEDNN_MAX_CPU_ISA cap below them (a cap to AVX2 runs oneDNN's AVX2
// paths on any CPU): the backend must have a kernel exactly where both hold.
bool cpu_has_bf16_dot_products() {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string isa = cap ? cap : "ALL";
  if (isa != "ALL" && isa.find("BF16") == std::string::npos && isa.find("AMX") == std::string::npos &&
      isa.find("FP16") == std::string::npos)
    return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  const bool amx = (d >> 22) & 1;
  __cpuid_count(7, 1, a, b, c, d);
  return amx || ((a >> 5) & 1);
}

std::vector<Tensor> run_bf16(const Graph& g, const IndexSet& nodes, const std::vector<Tensor>& values) {
  SubGraph sub = make_subgraph(g, nodes);
  std::unique_ptr<Kernel> kernel = onednn_bf16_backend().compile(g, sub, CompileOptions{});
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
  HeapAllocator alloc;
  return kernel->run(args, alloc);
}

TEST(OnednnBf16, IsAReducedPrecisionBackendOfLayersAndActivationProducts) {
  EXPECT_EQ(onednn_bf16_backend().precision, Precision::BFloat16);
  EXPECT_STREQ(precision_name(onednn_bf16_backend().precision), "bf16");
  for (const BackendSpec* b : default_backends()) EXPECT_NE(b->name, "onednn-bf16");
  Graph g = dense_model(4, 64, 48);
  std::set<std::string> labels;
  BackendSpec patterns_only = onednn_bf16_backend();  // its patterns, whatever this CPU can run
  patterns_only.unavailable = nullptr;
  size_t activation_products = 0;
  for (const Candidate& c : enumerate_candidates(g, {&patterns_only})) {
    labels.insert(c.label);
    for (size_t n : c.nodes.indices())  // a product of two activations: alone (no bias, no activation)
      if (const Node& node = g.node(static_cast<NodeId>(n));
          node.op_type == "MatMul" && !g.value(node.inputs[1]).constant) {
        EXPECT_EQ(c.label, "MatMul");
        ++activation_products;
      }
  }
  EXPECT_EQ(activation_products, 1u);
  EXPECT_TRUE(labels.count("Gemm+Relu"));
  EXPECT_TRUE(labels.count("MatMul+Add"));
}

TEST(OnednnBf16, HasAKernelExactlyWhereTheCpuHasBf16DotProducts) {
  Graph g = dense_model(4, 64, 48);
  IndexSet gemm(g.nodes.size());
  gemm.add(0);
  ASSERT_EQ(g.nodes[0].op_type, "Gemm");
  SubGraph sub = make_subgraph(g, gemm);
  if (cpu_has_bf16_dot_products()) {
    EXPECT_EQ(unavailable_reason(onednn_bf16_backend()), "");
    EXPECT_NE(onednn_bf16_backend().compile(g, sub, CompileOptions{}), nullptr);
    return;
  }
  // Unavailable with the reason: listed as such, out of every selection, no candidates.
  const std::string why = unavailable_reason(onednn_bf16_backend());
  EXPECT_NE(why.find("AVX512_BF16"), std::string::npos) << why;
  for (const BackendSpec* b : available_backends()) EXPECT_NE(b->name, "onednn-bf16");
  EXPECT_TRUE(enumerate_candidates(g, {&onednn_bf16_backend()}).empty());
  try {
    select_backends("onednn-bf16,native");
    ADD_FAILURE() << "an unavailable backend was selected";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("unavailable on this CPU: " + why), std::string::npos) << e.what();
  }
  try {
    onednn_bf16_backend().compile(g, sub, CompileOptions{});
    ADD_FAILURE() << "a bf16 kernel on a CPU without bf16 dot products";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

// Integers below 256 are exact in bf16 and their products' sums exact in fp32, whatever the
// order: the bf16 kernel must then give the fp32 product bitwise, bias and Relu included.
TEST(OnednnBf16, OperandsOnTheBf16GridGiveTheExactProduct) {
  if (!cpu_has_bf16_dot_products()) GTEST_SKIP() << unavailable_reason(onednn_bf16_backend());
  const int64_t m = 7, k = 96, n = 40;
  OnnxTestModel model(17);
  model.input("x", {m, k});
  Tensor w(DType::Float32, {n, k}), bias(DType::Float32, {n});
  for (int64_t i = 0; i < n * k; ++i) w.data<float>()[i] = static_cast<float>((i * 29) % 255 - 127);
  for (int64_t j = 0; j < n; ++j) bias.data<float>()[j] = static_cast<float>(j * 3 - 50);
  model.initializer("w", w);
  model.initializer("b", bias);
  auto& gemm = model.node("Gemm", {"x", "w", "b"}, {"g"});
  OnnxTestModel::attr_int(gemm, "transB", 1);
  model.node("Relu", {"g"}, {"y"});
  model.output("y");
  Graph g = import_model(model);
  Tensor x(DType::Float32, {m, k});
  for (int64_t i = 0; i < m * k; ++i) x.data<float>()[i] = static_cast<float>((i * 37) % 201 - 100);
  std::vector<Tensor> values = reference_values(g, {x});
  IndexSet all(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) all.add(i);
  std::vector<Tensor> got = run_bf16(g, all, values);
  const Tensor& want = values[static_cast<size_t>(g.outputs[0])];
  ASSERT_EQ(got[0].shape(), want.shape());
  size_t positive = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[0].data<float>()[i], want.data<float>()[i]) << i;
    positive += want.data<float>()[i] > 0;
  }
  EXPECT_GT(positive, 0u);  // the Relu let something through
}

// Products of two activations on the bf16 grid (integers below 256; sums exact in fp32): exact,
// with ONNX's batch broadcasting ([2, 3, M, K] x [3, K, N]) and a scalar Mul or Div after them.
TEST(OnednnBf16, ActivationProductsOnTheBf16GridAreExact) {
  if (!cpu_has_bf16_dot_products()) GTEST_SKIP() << unavailable_reason(onednn_bf16_backend());
  const int64_t m = 5, k = 24, n = 7;
  for (const std::string scale : {"", "Mul", "Div"}) {
    SCOPED_TRACE("scale " + (scale.empty() ? std::string("none") : scale));
    OnnxTestModel model(17);
    model.input("a", {2, 3, m, k});
    model.input("b", {3, k, n});
    model.node("MatMul", {"a", "b"}, {scale.empty() ? "y" : "p"});
    if (!scale.empty()) {
      model.initializer("c", Tensor::scalar<float>(scale == "Mul" ? 0.5f : 4.0f));
      model.node(scale, {"p", "c"}, {"y"});
    }
    model.output("y");
    Graph g = import_model(model);
    Tensor a(DType::Float32, {2, 3, m, k}), b(DType::Float32, {3, k, n});
    for (int64_t i = 0; i < a.size(); ++i) a.data<float>()[i] = static_cast<float>((i * 37) % 201 - 100);
    for (int64_t i = 0; i < b.size(); ++i) b.data<float>()[i] = static_cast<float>((i * 29) % 255 - 127);
    std::vector<Tensor> values = reference_values(g, {a, b});
    std::vector<Candidate> whole;
    for (const Candidate& c : enumerate_candidates(g, {&onednn_bf16_backend()}))
      if (c.nodes.popcount() == g.nodes.size()) whole.push_back(c);
    ASSERT_EQ(whole.size(), 1u);
    std::vector<Tensor> got = run_bf16(g, whole[0].nodes, values);
    const Tensor& want = values[static_cast<size_t>(g.outputs[0])];
    ASSERT_EQ(got[0].shape(), want.shape());
    for (int64_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[0].data<float>()[i], want.data<float>()[i]) << i;
  }
}

// Random operands: bf16's 8 significant bits, errors averaging out over K terms, keep every
// candidate within 1% of its output's peak, and it must differ from fp32 (it is bf16).
TEST(OnednnBf16, EveryCandidateIsWithinOnePercentOfItsPeak) {
  if (!cpu_has_bf16_dot_products()) GTEST_SKIP() << unavailable_reason(onednn_bf16_backend());
  for (auto [batch, in, out] :
       {std::tuple<int64_t, int64_t, int64_t>{4, 64, 48}, {3, 33, 17}, {1, 256, 96}}) {
    Graph g = dense_model(batch, in, out);
    std::vector<Tensor> values = reference_values(g);
    AccuracyBudget budget = parse_accuracy("max-rel=1e-2,cosine=0.9999");
    size_t checked = 0;
    for (const Candidate& c : enumerate_candidates(g, {&onednn_bf16_backend()})) {
      SubGraph sub = make_subgraph(g, c.nodes);
      std::vector<Tensor> got = run_bf16(g, c.nodes, values);
      ASSERT_EQ(got.size(), sub.outputs.size());
      AccuracyMeasure acc =
          measure_accuracy(got[0], values[static_cast<size_t>(sub.outputs[0])], budget, c.label, false);
      EXPECT_TRUE(acc.ok()) << acc.failure;
      EXPECT_GT(acc.max_rel, 0) << c.label << ": bf16 and fp32 should not agree exactly on random data";
      ++checked;
    }
    EXPECT_GE(checked, 4u);
  }
}

}  // namespace
}  // namespace collage
