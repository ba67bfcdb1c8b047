// core/backend_api/conv_folding: a BatchNormalization folded into the Conv before it, and refused
// (not read past) when its parameters do not match the Conv's output channels, as a hand-edited
// artifact can state.
#include "core/backend_api/conv_folding.h"

#include <gtest/gtest.h>

#include <cmath>

#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::OnnxTestModel;

Graph conv_batch_norm() {
  OnnxTestModel m(17);
  m.input("x", {1, 2, 4, 4});
  m.initializer("w", Tensor::from_vector<float>({3, 2, 1, 1}, {1, 2, 3, 4, 5, 6}));
  for (const char* p : {"scale", "shift", "mean"})
    m.initializer(p, Tensor::from_vector<float>({3}, {0.5f, 1.0f, 2.0f}));
  m.initializer("var", Tensor::from_vector<float>({3}, {1.0f, 4.0f, 0.25f}));
  m.node("Conv", {"x", "w"}, {"c"});
  m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"});
  m.output("y");
  return testing::import_model(m);
}

SubGraph both(const Graph& g) {
  IndexSet s(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) s.add(i);
  return make_subgraph(g, s);
}

TEST(ConvFolding, FoldsTheBatchNormIntoWeightsAndBias) {
  Graph g = conv_batch_norm();
  ASSERT_TRUE(starts_with_conv_batch_norm(g, both(g)));
  FoldedConv f = fold_conv(g, both(g));
  const float w[6] = {1, 2, 3, 4, 5, 6}, p[3] = {0.5f, 1.0f, 2.0f}, var[3] = {1.0f, 4.0f, 0.25f};
  for (int oc = 0; oc < 3; ++oc) {
    const double a = p[oc] / std::sqrt(var[oc] + 1e-5);
    for (int ic = 0; ic < 2; ++ic) EXPECT_NEAR(f.weight.data<float>()[oc * 2 + ic], w[oc * 2 + ic] * a, 1e-6);
    EXPECT_NEAR(f.bias->data<float>()[oc], (0 - p[oc]) * a + p[oc], 1e-6);
  }
}

TEST(ConvFolding, ParametersShorterThanTheChannelsAreRefused) {
  Graph g = conv_batch_norm();
  g.value(g.find_value("scale")).constant = Tensor::from_vector<float>({1}, {0.5f});
  try {
    fold_conv(g, both(g));
    FAIL() << "folded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidModel);
    EXPECT_NE(std::string(e.what()).find("3 output channels"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collage
