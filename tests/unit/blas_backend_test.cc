#include <gtest/gtest.h>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/blas/blas_spec.h"

namespace collage {
namespace {

using namespace collage::testing;

// Every candidate compiles and matches the reference; returns the labels seen.
std::set<std::string> check_blas(const Graph& g, const std::string& what) {
  auto values = reference_values(g);
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&blas_backend()})) {
    CandidateCheck r = check_candidate(g, blas_backend(), c.nodes, values, 1e-4, 1e-4);
    EXPECT_TRUE(r.supported) << what << " " << c.label << ": " << r.mismatch;
    EXPECT_TRUE(r.mismatch.empty()) << what << " " << c.label << ": " << r.mismatch;
    labels.insert(c.label);
  }
  return labels;
}

TEST(BlasBackend, ConvolutionsWithEpiloguesAcrossShapes) {
  for (const ConvCase& cc : conv_cases()) {
    auto labels = check_blas(conv_model(cc), cc.name);
    EXPECT_TRUE(labels.count("Conv")) << cc.name;
    EXPECT_TRUE(labels.count("Conv+Clip")) << cc.name;
    EXPECT_TRUE(labels.count("Conv+Add+Relu")) << cc.name;
  }
}

TEST(BlasBackend, GemmAndMatMulWithBiasAndActivation) {
  for (auto [batch, in, out] : {std::tuple<int64_t, int64_t, int64_t>{1, 7, 5}, {3, 16, 9}, {4, 33, 17}}) {
    auto labels = check_blas(dense_model(batch, in, out), "dense");
    EXPECT_TRUE(labels.count("Gemm+Relu"));
    EXPECT_TRUE(labels.count("MatMul+Add+Tanh"));
    EXPECT_TRUE(labels.count("MatMul"));
  }
}

TEST(BlasBackend, VersionComesFromTheLibrary) {
  EXPECT_FALSE(blas_backend().version.empty());
  EXPECT_NE(blas_backend().version, "unknown");
}

}  // namespace
}  // namespace collage
