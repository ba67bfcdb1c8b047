// strassen: one Winograd-form level of Strassen's algorithm over stream-gemm's kernel, against the
// native reference: odd and even row counts (an odd one is padded by a virtual row of zeros),
// MatMul with a bias Add, Gemm with transB, alpha and beta, at 1 and 2 threads; and what it is
// not offered (odd or small halves, few rows).
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
TEST(Strassen, IsNotOfferedOddOrSmallHalvesOrFewRows) {
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
  EXPECT_FALSE(offered(32, 256, 131)) << "odd N";
  EXPECT_FALSE(offered(32, 256, 126)) << "N/2 below 64";
  EXPECT_FALSE(offered(15, 256, 256)) << "fewer than 16 rows";
}

}  // namespace
}  // namespace collage
