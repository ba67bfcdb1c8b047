// strassen: one Winograd-form level of Strassen's algorithm over stream-gemm's kernel, against the
// native reference: odd and even row counts (an odd one is padded by a virtual row of zeros),
// MatMul with a bias Add, Gemm with transB, alpha and beta, a GELU, Relu or residual Add after the
// product, at 1 and 2 threads; and what it is not offered (odd or small halves, few rows).
#include "backends/strassen/strassen.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/stream_gemm/packed_gemm.h"
#include "core/backend_api/shared_constants.h"

namespace collage {
namespace {

using namespace collage::testing;

std::set<std::string> check_strassen(const Graph& g) {
  std::vector<Tensor> values = reference_values(g);
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&strassen_backend()})) {
    for (int threads : {1, 2}) {
      CandidateCheck r = check_candidate(g, strassen_backend(), c.nodes, values, 1e-4, 1e-4, threads);
      EXPECT_TRUE(r.supported) << c.label << ": " << r.mismatch;
      EXPECT_TRUE(r.mismatch.empty()) << c.label << " (" << threads << " threads): " << r.mismatch;
    }
    labels.insert(c.label);
  }
  return labels;
}

TEST(Strassen, MatMulWithBiasAtOddAndEvenRowCountsAgreesWithTheReference) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  for (int64_t rows : {37, 40}) {
    OnnxTestModel m(17);
    m.input("x", {1, rows, 256});
    m.initializer("w", random_tensor_f32({256, 160}, 41));
    m.initializer("b", random_tensor_f32({160}, 42));
    m.node("MatMul", {"x", "w"}, {"mm"});
    m.node("Add", {"mm", "b"}, {"y"});
    m.output("y");
    std::set<std::string> labels = check_strassen(import_model(m));
    EXPECT_EQ(labels, (std::set<std::string>{"MatMul", "MatMul+Add"})) << rows << " rows";
  }
}

// A ConvNeXt block's MLP as torch.onnx.export writes it: channels-last rows (rank 4), MatMul, bias
// Add, erf GELU, MatMul, bias Add; and a Gemm with a Relu. The activation runs on each quarter as
// it is final, so every row and column of the output goes through it once.
TEST(Strassen, ProductsWithTheirActivationAgreeWithTheReference) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  OnnxTestModel m(17);
  m.input("x", {1, 5, 7, 128});  // 35 rows: an odd count, a partial row block per half
  m.initializer("w1", random_tensor_f32({128, 288}, 51));  // 144 columns a half: a partial panel
  m.initializer("b1", random_tensor_f32({288}, 52));
  m.initializer("w2", random_tensor_f32({288, 128}, 53));
  m.initializer("b2", random_tensor_f32({128}, 54));
  m.node("MatMul", {"x", "w1"}, {"mm"});
  m.node("Add", {"mm", "b1"}, {"h"});
  erf_gelu(m, "h", "g");
  m.node("MatMul", {"g", "w2"}, {"mm2"});
  m.node("Add", {"mm2", "b2"}, {"y"});
  m.input("z", {40, 128});
  m.initializer("wz", random_tensor_f32({257, 128}, 55));  // transB, odd N
  m.initializer("cz", random_tensor_f32({257}, 56));
  auto& gemm = m.node("Gemm", {"z", "wz", "cz"}, {"gz"});
  OnnxTestModel::attr_int(gemm, "transB", 1);
  m.node("Relu", {"gz"}, {"r"});
  m.output("y");
  m.output("r");
  std::set<std::string> labels = check_strassen(import_model(m));
  for (const char* want : {"MatMul+Add+Div+Erf+Add+Mul+Mul", "MatMul+Add", "Gemm+Relu"})
    EXPECT_TRUE(labels.count(want)) << want;
}

// BERT's attention output and second MLP product: MatMul, bias Add, then the residual Add of the
// block's input (here also A itself, and another tensor), each quarter taking its residual's quarter.
TEST(Strassen, ResidualAddsAgreeWithTheReference) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  OnnxTestModel m(17);
  m.input("x", {1, 33, 256});
  m.input("skip", {1, 33, 193});
  m.initializer("w", random_tensor_f32({256, 256}, 61));
  m.initializer("b", random_tensor_f32({256}, 62));
  m.initializer("w2", random_tensor_f32({256, 193}, 63));  // odd N: the last column apart
  m.node("MatMul", {"x", "w"}, {"mm"});
  m.node("Add", {"mm", "b"}, {"h"});
  m.node("Add", {"x", "h"}, {"y"});
  m.node("MatMul", {"x", "w2"}, {"mm2"});
  m.node("Add", {"mm2", "skip"}, {"z"});
  m.output("y");
  m.output("z");
  std::set<std::string> labels = check_strassen(import_model(m));
  for (const char* want : {"MatMul+Add+Add", "MatMul+Add"}) EXPECT_TRUE(labels.count(want)) << want;
}

TEST(Strassen, GemmAttributesFoldIntoTheWeightsAndTheBias) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  OnnxTestModel m(17);
  m.input("x", {21, 128});
  m.initializer("w", random_tensor_f32({192, 128}, 51));
  m.initializer("c", random_tensor_f32({192}, 52));
  auto& gemm = m.node("Gemm", {"x", "w", "c"}, {"y"});
  OnnxTestModel::attr_int(gemm, "transB", 1);
  OnnxTestModel::attr_float(gemm, "alpha", 0.5f);
  OnnxTestModel::attr_float(gemm, "beta", 2.0f);
  m.output("y");
  EXPECT_EQ(check_strassen(import_model(m)), (std::set<std::string>{"Gemm"}));
}

// Two shape buckets of one model, compiled under one store as the runtime compiles an artifact's
// plans: the second kernel takes the first one's packed combinations, and both compute right.
TEST(Strassen, ShapeBucketsShareThePackedWeights) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const Tensor w = random_tensor_f32({128, 128}, 71);
  SharedConstants store;
  SharedConstantsScope scope(&store);
  for (int64_t rows : {24, 41}) {
    OnnxTestModel m(17);
    m.input("x", {rows, 128});
    m.initializer("w", w);
    m.node("MatMul", {"x", "w"}, {"y"});
    m.output("y");
    Graph g = import_model(m);
    CandidateCheck r =
        check_candidate(g, strassen_backend(), all_nodes(g), reference_values(g), 1e-4, 1e-4, 1);
    EXPECT_TRUE(r.supported && r.mismatch.empty()) << rows << " rows: " << r.mismatch;
  }
  EXPECT_EQ(store.hits(), 1u);
}

// Halves of 64 or more, even K and N, 16 rows or more: anything else is left to the other backends.
TEST(Strassen, IsNotOfferedOddKOrSmallHalvesOrFewRows) {
  auto offered = [](int64_t rows, int64_t k, int64_t n) {
    OnnxTestModel m(17);
    m.input("x", {rows, k});
    m.initializer("w", random_tensor_f32({k, n}, 61));
    m.node("MatMul", {"x", "w"}, {"y"});
    m.output("y");
    return !enumerate_candidates(import_model(m), {&strassen_backend()}).empty();
  };
  if (!stream_gemm::supported()) {
    EXPECT_FALSE(offered(32, 256, 256));
    GTEST_SKIP() << "no AVX2/FMA on this CPU";
  }
  EXPECT_TRUE(offered(32, 256, 256));
  EXPECT_FALSE(offered(32, 255, 256)) << "odd K";
  EXPECT_TRUE(offered(32, 256, 130)) << "halves of 65 columns: odd halves are fine";
  EXPECT_TRUE(offered(32, 256, 131)) << "odd N: its last column as a plain product";
  EXPECT_FALSE(offered(32, 256, 127)) << "N/2 below 64 after the odd column";
  EXPECT_FALSE(offered(32, 256, 126)) << "N/2 below 64";
  EXPECT_FALSE(offered(15, 256, 256)) << "fewer than 16 rows";
}

}  // namespace
}  // namespace collage
