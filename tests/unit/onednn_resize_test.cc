// oneDNN's resampling against the native Resize (the ONNX reference): what it claims
// matches for every claimed mode, rank and scale form; what its index arithmetic
// cannot reproduce is not claimed.
#include <gtest/gtest.h>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onednn/onednn_spec.h"

namespace collage {
namespace {

using namespace collage::testing;

struct ResizeCase {
  std::string name;
  Shape x;
  std::vector<float> scales;   // given as the scales input, or
  std::vector<int64_t> sizes;  // as the sizes input
  std::string mode, ctm, nearest = "round_prefer_floor";
  int64_t antialias = 0;
};

Graph resize_model(const ResizeCase& c) {
  OnnxTestModel m(18);
  m.input("x", c.x);
  std::vector<std::string> inputs = {"x", ""};
  if (!c.scales.empty()) {
    Tensor s(DType::Float32, {static_cast<int64_t>(c.scales.size())});
    std::copy(c.scales.begin(), c.scales.end(), s.data<float>());
    m.initializer("scales", s);
    inputs.push_back("scales");
  } else {
    Tensor s(DType::Int64, {static_cast<int64_t>(c.sizes.size())});
    std::copy(c.sizes.begin(), c.sizes.end(), s.data<int64_t>());
    m.initializer("sizes", s);
    inputs.push_back("");
    inputs.push_back("sizes");
  }
  auto& n = m.node("Resize", inputs, {"y"});
  OnnxTestModel::attr_string(n, "mode", c.mode);
  OnnxTestModel::attr_string(n, "coordinate_transformation_mode", c.ctm);
  OnnxTestModel::attr_string(n, "nearest_mode", c.nearest);
  if (c.antialias) OnnxTestModel::attr_int(n, "antialias", c.antialias);
  m.output("y");
  return import_model(m);
}

std::vector<Candidate> resize_candidates(const Graph& g) {
  std::vector<Candidate> out;
  for (const Candidate& c : enumerate_candidates(g, {&onednn_backend()}))
    if (c.label == "Resize") out.push_back(c);
  return out;
}

TEST(OnednnResize, ClaimedModesMatchTheNativeResize) {
  std::vector<ResizeCase> cases = {
      {"bilinear x4 (F.interpolate)", {1, 5, 16, 16}, {1, 1, 4, 4}, {}, "linear", "pytorch_half_pixel"},
      {"bilinear x2 half_pixel", {2, 3, 7, 9}, {1, 1, 2, 2}, {}, "linear", "half_pixel"},
      {"bilinear down x0.5", {1, 4, 12, 10}, {1, 1, 0.5f, 0.5f}, {}, "linear", "half_pixel"},
      {"bilinear to sizes 7x9 -> 10x13", {1, 2, 7, 9}, {}, {1, 2, 10, 13}, "linear", "half_pixel"},
      {"linear 1-D", {2, 3, 11}, {1, 1, 3}, {}, "linear", "pytorch_half_pixel"},
      {"trilinear", {1, 2, 3, 4, 5}, {1, 1, 2, 2, 2}, {}, "linear", "half_pixel"},
      {"nearest x2 asymmetric floor (Upsample)",
       {1, 3, 5, 6},
       {1, 1, 2, 2},
       {},
       "nearest",
       "asymmetric",
       "floor"},
      {"nearest x3 half_pixel", {1, 3, 5, 4}, {1, 1, 3, 3}, {}, "nearest", "half_pixel"},
      {"nearest x4 ceil",
       {1, 2, 3, 3},
       {},
       {1, 2, 12, 12},
       "nearest",
       "pytorch_half_pixel",
       "round_prefer_ceil"},
  };
  for (const ResizeCase& c : cases) {
    Graph g = resize_model(c);
    auto values = reference_values(g);
    auto candidates = resize_candidates(g);
    ASSERT_EQ(candidates.size(), 1u) << c.name;
    CandidateCheck r = check_candidate(g, onednn_backend(), candidates[0].nodes, values, 1e-5, 1e-5);
    EXPECT_TRUE(r.supported) << c.name << ": " << r.mismatch;
    EXPECT_TRUE(r.mismatch.empty()) << c.name << ": " << r.mismatch;
  }
}

TEST(OnednnResize, WhatOneDnnCannotReproduceIsNotClaimed) {
  std::vector<ResizeCase> cases = {
      {"align_corners", {1, 3, 5, 6}, {1, 1, 2, 2}, {}, "linear", "align_corners"},
      {"asymmetric linear", {1, 3, 5, 6}, {1, 1, 2, 2}, {}, "linear", "asymmetric"},
      {"scale 1.75 on 10 (output 17)", {1, 1, 10, 10}, {1, 1, 1.75f, 1.75f}, {}, "linear", "half_pixel"},
      {"nearest 7 -> 10", {1, 2, 7, 7}, {}, {1, 2, 10, 10}, "nearest", "half_pixel"},
      {"nearest half_pixel floor", {1, 2, 4, 4}, {1, 1, 2, 2}, {}, "nearest", "half_pixel", "floor"},
      {"nearest asymmetric round", {1, 2, 4, 4}, {1, 1, 4, 4}, {}, "nearest", "asymmetric"},
      {"cubic", {1, 2, 4, 4}, {1, 1, 2, 2}, {}, "cubic", "half_pixel"},
      {"antialias", {1, 2, 8, 8}, {1, 1, 0.5f, 0.5f}, {}, "linear", "half_pixel", "round_prefer_floor", 1},
      {"channels scaled", {1, 2, 4, 4}, {1, 2, 1, 1}, {}, "linear", "half_pixel"},
  };
  for (const ResizeCase& c : cases) {
    Graph g = resize_model(c);
    EXPECT_TRUE(resize_candidates(g).empty()) << c.name;
    EXPECT_FALSE(reference_values(g).empty()) << c.name;  // the native Resize computes it
  }
}

}  // namespace
}  // namespace collage
