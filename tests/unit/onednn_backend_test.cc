#include <gtest/gtest.h>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onednn/onednn_spec.h"

namespace collage {
namespace {

using namespace collage::testing;

std::set<std::string> check_onednn(const Graph& g, const std::string& what, double tol = 1e-4) {
  auto values = reference_values(g);
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&onednn_backend()})) {
    CandidateCheck r = check_candidate(g, onednn_backend(), c.nodes, values, tol, tol);
    EXPECT_TRUE(r.supported) << what << " " << c.label << ": " << r.mismatch;
    EXPECT_TRUE(r.mismatch.empty()) << what << " " << c.label << ": " << r.mismatch;
    labels.insert(c.label);
  }
  return labels;
}

TEST(OnednnBackend, ConvolutionsWithPostOpsAcrossShapes) {
  for (const ConvCase& cc : conv_cases()) {
    auto labels = check_onednn(conv_model(cc), cc.name);
    EXPECT_TRUE(labels.count("Conv+Clip")) << cc.name;
    EXPECT_TRUE(labels.count("Conv+Add+Relu")) << cc.name;
  }
}

TEST(OnednnBackend, DenseLayers) {
  for (auto [batch, in, out] : {std::tuple<int64_t, int64_t, int64_t>{1, 7, 5}, {3, 16, 9}, {4, 33, 17}}) {
    auto labels = check_onednn(dense_model(batch, in, out), "dense");
    EXPECT_TRUE(labels.count("Gemm+Relu"));
    EXPECT_TRUE(labels.count("MatMul+Add+Tanh"));
    EXPECT_TRUE(labels.count("MatMul"));
  }
}

Graph pool_model(bool ceil_mode, int64_t include_pad) {
  OnnxTestModel m(17);
  m.input("x", {2, 3, 9, 8});
  auto& mp = m.node("MaxPool", {"x"}, {"p"});
  OnnxTestModel::attr_ints(mp, "kernel_shape", {3, 3});
  OnnxTestModel::attr_ints(mp, "strides", {2, 2});
  OnnxTestModel::attr_ints(mp, "pads", {1, 0, 1, 1});
  OnnxTestModel::attr_int(mp, "ceil_mode", ceil_mode);
  m.node("Relu", {"p"}, {"y"});
  auto& ap = m.node("AveragePool", {"x"}, {"a"});
  OnnxTestModel::attr_ints(ap, "kernel_shape", {2, 3});
  OnnxTestModel::attr_ints(ap, "strides", {2, 1});
  OnnxTestModel::attr_ints(ap, "pads", {1, 1, 1, 1});
  OnnxTestModel::attr_int(ap, "count_include_pad", include_pad);
  OnnxTestModel::attr_int(ap, "ceil_mode", ceil_mode);
  m.node("GlobalAveragePool", {"x"}, {"gp"});
  m.output("y");
  m.output("a");
  m.output("gp");
  return import_model(m);
}

TEST(OnednnBackend, Pooling) {
  for (bool ceil_mode : {false, true})
    for (int64_t include : {0, 1}) {
      Graph g = pool_model(ceil_mode, include);
      auto values = reference_values(g);
      for (const Candidate& c : enumerate_candidates(g, {&onednn_backend()})) {
        CandidateCheck r = check_candidate(g, onednn_backend(), c.nodes, values, 1e-5, 1e-5);
        // AveragePool with count_include_pad over a ceil-mode overhang is declined explicitly.
        if (!r.supported) {
          EXPECT_NE(r.mismatch.find("count_include_pad"), std::string::npos)
              << c.label << " ceil " << ceil_mode << " incl " << include << ": " << r.mismatch;
          continue;
        }
        EXPECT_TRUE(r.mismatch.empty())
            << c.label << " ceil " << ceil_mode << " incl " << include << ": " << r.mismatch;
      }
    }
}

TEST(OnednnBackend, SoftmaxNormsEltwiseBinary) {
  OnnxTestModel m(17);
  m.input("x", {2, 5, 6});
  m.input("z", {2, 5, 6});
  m.initializer("s", random_tensor_f32({6}, 4));
  m.initializer("b", random_tensor_f32({6}, 5));
  auto& sm = m.node("Softmax", {"x"}, {"sm"});
  OnnxTestModel::attr_int(sm, "axis", 1);
  auto& lsm = m.node("LogSoftmax", {"x"}, {"lsm"});
  OnnxTestModel::attr_int(lsm, "axis", -1);
  m.node("LayerNormalization", {"x", "s", "b"}, {"ln"});
  m.node("Gelu", {"ln"}, {"gl"});
  m.node("Sub", {"x", "z"}, {"d"});
  m.node("Mul", {"b", "d"}, {"md"});  // broadcast operand first: oneDNN swaps it
  m.node("Sigmoid", {"md"}, {"sg"});
  for (const char* o : {"sm", "lsm", "gl", "sg"}) m.output(o);
  auto labels = check_onednn(import_model(m), "misc", 2e-4);
  EXPECT_TRUE(labels.count("Softmax"));
  EXPECT_TRUE(labels.count("LayerNormalization"));  // oneDNN 2.6 has no post-ops on layer norm
  EXPECT_TRUE(labels.count("Gelu"));
  EXPECT_TRUE(labels.count("Mul+Sigmoid"));

  OnnxTestModel bn(17);
  bn.input("x", {2, 4, 5, 5});
  bn.initializer("sc", random_tensor_f32({4}, 6));
  bn.initializer("bi", random_tensor_f32({4}, 7));
  bn.initializer("mu", random_tensor_f32({4}, 8));
  Tensor var = random_tensor_f32({4}, 9);
  for (int i = 0; i < 4; ++i) var.data<float>()[i] = 0.5f + std::fabs(var.data<float>()[i]);
  bn.initializer("var", var);
  bn.node("BatchNormalization", {"x", "sc", "bi", "mu", "var"}, {"n"});
  bn.node("Relu", {"n"}, {"y"});
  bn.output("y");
  EXPECT_TRUE(check_onednn(import_model(bn), "bn").count("BatchNormalization"));
}

TEST(OnednnBackend, DeconvolutionAnd3DConvolution) {
  OnnxTestModel m(17);
  m.input("x", {1, 4, 5, 6});
  m.initializer("w", random_tensor_f32({4, 3, 4, 4}, 10));
  m.initializer("b", random_tensor_f32({3}, 11));
  auto& ct = m.node("ConvTranspose", {"x", "w", "b"}, {"t"});
  OnnxTestModel::attr_ints(ct, "strides", {2, 2});
  OnnxTestModel::attr_ints(ct, "pads", {1, 1, 1, 1});
  m.node("Relu", {"t"}, {"y"});
  m.input("v", {1, 2, 5, 6, 7});
  m.initializer("w3", random_tensor_f32({4, 2, 3, 3, 3}, 12));
  auto& c3 = m.node("Conv", {"v", "w3"}, {"c3"});
  OnnxTestModel::attr_ints(c3, "pads", {1, 0, 1, 1, 1, 0});
  OnnxTestModel::attr_ints(c3, "strides", {1, 2, 1});
  m.output("y");
  m.output("c3");
  auto labels = check_onednn(import_model(m), "deconv/3d");
  EXPECT_TRUE(labels.count("ConvTranspose+Relu"));
  EXPECT_TRUE(labels.count("Conv"));
}

}  // namespace
}  // namespace collage
