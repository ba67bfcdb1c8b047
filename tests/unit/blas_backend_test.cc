#include <gtest/gtest.h>

#include <cmath>

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

// ConvTranspose as GEMM + col2im: strides, pads, output_padding, dilation, groups;
// a following BatchNormalization folded, then an activation.
TEST(BlasBackend, ConvTransposeWithFoldedBatchNorm) {
  struct Case {
    const char* name;
    Shape x, w;
    std::vector<int64_t> strides, pads, dil, out_pad;
    int64_t group;
  };
  std::vector<Case> cases = {
      {"dcgan", {1, 8, 4, 4}, {8, 3, 4, 4}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {}, 1},
      {"first", {1, 10, 1, 1}, {10, 16, 4, 4}, {1, 1}, {0, 0, 0, 0}, {1, 1}, {}, 1},
      {"grouped_outpad", {2, 4, 5, 6}, {4, 3, 3, 3}, {2, 2}, {1, 0, 0, 1}, {1, 1}, {1, 0}, 2},
      {"dilated", {1, 3, 4, 5}, {3, 2, 3, 2}, {1, 2}, {0, 1, 1, 0}, {2, 2}, {}, 1},
      {"depthwise", {1, 4, 5, 5}, {4, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, {}, 4},
  };
  for (const Case& cs : cases) {
    OnnxTestModel m(17);
    m.input("x", cs.x);
    int64_t channels = cs.w[1] * cs.group;
    m.initializer("w", random_tensor_f32(cs.w, 13));
    m.initializer("b", random_tensor_f32({channels}, 14));
    auto& c = m.node("ConvTranspose", {"x", "w", "b"}, {"c"});
    OnnxTestModel::attr_ints(c, "strides", cs.strides);
    OnnxTestModel::attr_ints(c, "pads", cs.pads);
    OnnxTestModel::attr_ints(c, "dilations", cs.dil);
    if (!cs.out_pad.empty()) OnnxTestModel::attr_ints(c, "output_padding", cs.out_pad);
    OnnxTestModel::attr_int(c, "group", cs.group);
    Tensor var = random_tensor_f32({channels}, 15);
    for (int64_t i = 0; i < channels; ++i) var.data<float>()[i] = 0.5f + std::fabs(var.data<float>()[i]);
    m.initializer("gamma", random_tensor_f32({channels}, 16));
    m.initializer("beta", random_tensor_f32({channels}, 17));
    m.initializer("mean", random_tensor_f32({channels}, 18));
    m.initializer("var", var);
    m.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"});
    m.node("Relu", {"n"}, {"y"});
    m.output("y");
    auto labels = check_blas(import_model(m), cs.name);
    EXPECT_TRUE(labels.count("ConvTranspose+BatchNormalization+Relu")) << cs.name;
    EXPECT_TRUE(labels.count("ConvTranspose")) << cs.name;
  }
}

// A training-mode BatchNormalization normalises with the batch's statistics: it is not folded.
TEST(BlasBackend, TrainingModeBatchNormIsNotFolded) {
  OnnxTestModel m(17);
  m.input("x", {2, 3, 6, 6});
  m.initializer("w", random_tensor_f32({4, 3, 3, 3}, 40));
  m.node("Conv", {"x", "w"}, {"c"});
  for (const char* p : {"gamma", "beta", "mean", "var"}) m.initializer(p, random_tensor_f32({4}, 41));
  auto& bn = m.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"});
  OnnxTestModel::attr_int(bn, "training_mode", 1);
  m.node("Relu", {"n"}, {"y"});
  m.output("y");
  auto labels = check_blas(import_model(m), "training bn");
  EXPECT_TRUE(labels.count("Conv"));
  for (const std::string& l : labels) EXPECT_EQ(l.find("BatchNormalization"), std::string::npos) << l;
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
