#include <gtest/gtest.h>

#include "backend_check.h"
#include "backends/native/native_spec.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::check_candidate;
using testing::import_model;
using testing::OnnxTestModel;
using testing::reference_values;

// Every native candidate of `g` compiles and matches the per-node reference; returns the labels.
std::vector<std::string> check_all(const Graph& g) {
  auto values = reference_values(g);
  std::vector<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&native_backend()})) {
    auto r = check_candidate(g, native_backend(), c.nodes, values, 1e-6, 1e-6);
    EXPECT_TRUE(r.supported) << c.label << ": " << r.mismatch;
    EXPECT_TRUE(r.mismatch.empty()) << c.label << ": " << r.mismatch;
    labels.push_back(c.label);
  }
  return labels;
}

bool has(const std::vector<std::string>& labels, const std::string& label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

TEST(NativeBackend, ElementwiseChainLongerThanOneTile) {
  // 3 x 5000 elements spans several 4096-element tiles, with a ragged last tile.
  OnnxTestModel m(17);
  m.input("x", {3, 5000});
  m.input("z", {3, 5000});
  m.initializer("half", Tensor::scalar<float>(0.5f));
  m.node("Mul", {"x", "half"}, {"a"});
  m.node("Tanh", {"a"}, {"b"});
  m.node("Add", {"b", "z"}, {"c"});
  m.node("Sigmoid", {"c"}, {"y"});
  m.output("y");
  auto labels = check_all(import_model(m));
  EXPECT_TRUE(has(labels, "Mul+Tanh+Add+Sigmoid"));
}

TEST(NativeBackend, ConvWithEpilogueAndResidual) {
  OnnxTestModel m(17);
  m.input("x", {2, 3, 9, 7});
  Tensor w(DType::Float32, {3, 3, 3, 3});
  for (int64_t i = 0; i < w.size(); ++i)
    w.data<float>()[i] = static_cast<float>((i * 37) % 11) / 11.0f - 0.5f;
  m.initializer("w", w);
  m.initializer("b", Tensor::from_vector<float>({3}, {0.1f, -0.2f, 0.3f}));
  auto& conv = m.node("Conv", {"x", "w", "b"}, {"c"});
  OnnxTestModel::attr_ints(conv, "pads", {1, 1, 1, 1});
  m.node("Add", {"c", "x"}, {"a"});
  m.node("Relu", {"a"}, {"y"});
  m.output("y");
  auto labels = check_all(import_model(m));
  EXPECT_TRUE(has(labels, "Conv+Add+Relu"));
  EXPECT_TRUE(has(labels, "Add+Relu"));
}

TEST(NativeBackend, BroadcastOperandFallsBackToNodeByNode) {
  // A per-channel operand is not tileable as a flat slice; the group must still be right.
  OnnxTestModel m(17);
  m.input("x", {1, 4, 5, 5});
  m.initializer("scale", Tensor::from_vector<float>({4, 1, 1}, {1, 2, 3, 4}));
  m.node("Mul", {"x", "scale"}, {"a"});
  m.node("Relu", {"a"}, {"y"});
  m.output("y");
  auto labels = check_all(import_model(m));
  EXPECT_TRUE(has(labels, "Mul+Relu"));
}

}  // namespace
}  // namespace collage
