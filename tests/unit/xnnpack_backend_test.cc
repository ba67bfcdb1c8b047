#include <gtest/gtest.h>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/registry.h"
#include "backends/xnnpack/omp_pthreadpool.h"
#include "backends/xnnpack/xnnpack_spec.h"

namespace collage {
namespace {

using namespace collage::testing;

std::set<std::string> check_xnnpack(const Graph& g, const std::string& what) {
  auto values = reference_values(g);
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&xnnpack_backend()})) {
    CandidateCheck r = check_candidate(g, xnnpack_backend(), c.nodes, values, 1e-4, 1e-4);
    EXPECT_TRUE(r.supported) << what << " " << c.label << ": " << r.mismatch;
    EXPECT_TRUE(r.mismatch.empty()) << what << " " << c.label << ": " << r.mismatch;
    labels.insert(c.label);
  }
  return labels;
}

TEST(XnnpackBackend, ConvolutionsWithClampAcrossShapes) {
  for (const ConvCase& cc : conv_cases()) {
    if (cc.one_d) continue;  // 2-D only
    auto labels = check_xnnpack(conv_model(cc), cc.name);
    EXPECT_TRUE(labels.count("Conv+Clip")) << cc.name;
    EXPECT_TRUE(labels.count("Conv")) << cc.name;
    EXPECT_TRUE(labels.count("Add+Relu")) << cc.name;
  }
}

TEST(XnnpackBackend, DenseLayers) {
  for (auto [batch, in, out] : {std::tuple<int64_t, int64_t, int64_t>{1, 7, 5}, {3, 16, 9}, {4, 33, 17}}) {
    auto labels = check_xnnpack(dense_model(batch, in, out), "dense");
    EXPECT_TRUE(labels.count("Gemm+Relu"));
    EXPECT_TRUE(labels.count("MatMul+Add"));
  }
}

TEST(XnnpackBackend, PoolingAndBroadcastMul) {
  OnnxTestModel m(17);
  m.input("x", {2, 5, 9, 8});
  m.input("s", {2, 5, 1, 1});
  auto& mp = m.node("MaxPool", {"x"}, {"p"});
  OnnxTestModel::attr_ints(mp, "kernel_shape", {3, 3});
  OnnxTestModel::attr_ints(mp, "strides", {2, 2});
  OnnxTestModel::attr_ints(mp, "pads", {1, 0, 1, 1});
  OnnxTestModel::attr_int(mp, "ceil_mode", 1);
  m.node("Relu", {"p"}, {"y"});
  auto& ap = m.node("AveragePool", {"x"}, {"a"});
  OnnxTestModel::attr_ints(ap, "kernel_shape", {2, 3});
  OnnxTestModel::attr_ints(ap, "strides", {2, 1});
  m.node("GlobalAveragePool", {"x"}, {"gp"});
  m.node("Mul", {"x", "s"}, {"ms"});
  for (const char* o : {"y", "a", "gp", "ms"}) m.output(o);
  auto labels = check_xnnpack(import_model(m), "pool");
  EXPECT_TRUE(labels.count("MaxPool+Relu"));
  EXPECT_TRUE(labels.count("AveragePool"));
  EXPECT_TRUE(labels.count("GlobalAveragePool"));
  EXPECT_TRUE(labels.count("Mul"));
}

// XNNPACK's parallel calls reach the project's OpenMP pool (not Debian's
// libpthreadpool), and every operator still matches the native reference when the
// pool splits its task grids over 2 threads (each pthreadpool entry point flattens a
// different grid: convolutions, dense layers, pooling and binary ops use several).
TEST(XnnpackBackend, RunsOnTheSharedOpenMpPool) {
  std::vector<std::pair<std::string, Graph>> models;
  for (const ConvCase& cc : conv_cases())
    if (!cc.one_d) models.emplace_back(cc.name, conv_model(cc));
  models.emplace_back("dense", dense_model(4, 33, 17));
  set_backend_threads(2);
  long before = xnnpack::pool_calls();
  for (const auto& [name, g] : models) {
    auto values = reference_values(g);
    for (const Candidate& c : enumerate_candidates(g, {&xnnpack_backend()})) {
      CandidateCheck r = check_candidate(g, xnnpack_backend(), c.nodes, values, 1e-4, 1e-4, 2);
      EXPECT_TRUE(r.mismatch.empty()) << name << " " << c.label << ": " << r.mismatch;
    }
  }
  set_backend_threads(1);
  EXPECT_GT(xnnpack::pool_calls(), before);
}

}  // namespace
}  // namespace collage
