#include "core/search/placement.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backends/native/native_spec.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

Graph chain() {
  OnnxTestModel m(17);
  m.input("x", {2, 3});
  m.node("Relu", {"x"}, {"a"});
  m.node("Neg", {"a"}, {"b"});
  m.node("Exp", {"b"}, {"c"});
  m.output("c");
  return import_model(m);
}

Placement two_kernels(const Graph& g) {
  Placement p;
  p.model_fingerprint = model_fingerprint(g);
  p.backend_versions["native"] = "1";
  p.threads = 2;
  p.device = "test";
  p.epsilon_ms = 0.01;
  p.predicted_ms = 3.5;
  p.kernels = {{{{0, 1}, "native", "Relu+Neg"}, Cost::of_ms(2.0)},
               {{{2}, "native", "Exp"}, Cost::of_ms(1.5)}};
  p.pins.pinned[2] = "native";
  return p;
}

std::string expect_rejected(const std::string& text, const Graph& g) {
  try {
    placement_from_json(text, g, {&native_backend()});
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text;
  return "";
}

TEST(PlacementJson, RoundTrip) {
  Graph g = chain();
  Placement p = two_kernels(g);
  Placement q = placement_from_json(placement_to_json(p, g), g, {&native_backend()});
  ASSERT_EQ(q.kernels.size(), 2u);
  EXPECT_EQ(q.kernels[0].nodes, (std::vector<NodeId>{0, 1}));
  EXPECT_EQ(q.kernels[1].label, "Exp");
  EXPECT_DOUBLE_EQ(q.kernels[1].cost.median_ms, 1.5);
  EXPECT_EQ(q.threads, 2);
  EXPECT_DOUBLE_EQ(q.predicted_ms, 3.5);
  EXPECT_EQ(q.pins.pinned.at(2), "native");
}

// A kernel without a cost writes no cost_ms and reads back without one; files that wrote 0
// for "no cost" (before the key could be left out) read the same way.
TEST(PlacementJson, UnknownCostRoundTripsAsNoCost) {
  Graph g = chain();
  Placement p = two_kernels(g);
  p.kernels[0].cost = PlacedKernel::no_placed_cost();
  const std::string text = placement_to_json(p, g);
  nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_FALSE(doc["kernels"][0].contains("cost_ms"));
  EXPECT_EQ(doc["kernels"][1]["cost_ms"].get<double>(), 1.5);
  Placement q = placement_from_json(text, g, {&native_backend()});
  ASSERT_EQ(q.kernels.size(), 2u);
  EXPECT_FALSE(q.kernels[0].cost.valid());
  EXPECT_EQ(q.kernels[0].cost.status, CostStatus::NotMeasured);
  ASSERT_TRUE(q.kernels[1].cost.valid());
  EXPECT_DOUBLE_EQ(q.kernels[1].cost.median_ms, 1.5);
  EXPECT_EQ(placement_to_json(q, g), text);  // and writes back the same

  doc["kernels"][0]["cost_ms"] = 0;  // an older file's "no cost"
  Placement old = placement_from_json(doc.dump(), g, {&native_backend()});
  EXPECT_FALSE(old.kernels[0].cost.valid());
  doc["kernels"][0]["cost_ms"] = -1;
  EXPECT_NE(expect_rejected(doc.dump(), g).find("cost_ms"), std::string::npos);

  // Sums name what they leave out instead of counting it as 0 ms.
  EXPECT_FALSE(summed_cost_ms(q.kernels).has_value());
  EXPECT_DOUBLE_EQ(*summed_cost_ms({q.kernels[1]}, 0.25), 1.75);
  BackendShare share = time_per_backend(q).at("native");
  EXPECT_EQ(share.kernels, 2);
  EXPECT_EQ(share.without_cost, 1);
  EXPECT_DOUBLE_EQ(share.predicted_ms, 1.5);
}

TEST(PlacementJson, ImportReordersKernelsIntoExecutionOrder) {
  Graph g = chain();
  Placement p = two_kernels(g);
  std::swap(p.kernels[0], p.kernels[1]);
  Placement q = placement_from_json(placement_to_json(p, g), g, {&native_backend()});
  EXPECT_EQ(q.kernels[0].nodes, (std::vector<NodeId>{0, 1}));
}

TEST(PlacementJson, ValidationErrorsNameTheProblem) {
  Graph g = chain();
  nlohmann::json good = nlohmann::json::parse(placement_to_json(two_kernels(g), g));
  auto with = [&](auto edit) {
    nlohmann::json j = good;
    edit(j);
    return j.dump();
  };
  EXPECT_NE(expect_rejected("{oops", g).find("malformed"), std::string::npos);
  EXPECT_NE(
      expect_rejected(with([](auto& j) { j["model_fingerprint"] = "0000"; }), g).find("different model"),
      std::string::npos);
  EXPECT_NE(
      expect_rejected(with([](auto& j) { j["kernels"][1]["nodes"] = {7}; }), g).find("unknown node id 7"),
      std::string::npos);
  EXPECT_NE(expect_rejected(with([](auto& j) {
                              j["kernels"][1]["nodes"] = {1, 2};
                            }),
                            g)
                .find("two kernels"),
            std::string::npos);
  EXPECT_NE(expect_rejected(with([](auto& j) { j["kernels"][1]["nodes"] = nlohmann::json::array(); }), g)
                .find("no nodes"),
            std::string::npos);
  EXPECT_NE(expect_rejected(with([](auto& j) { j["kernels"].erase(1); }), g).find("not covered"),
            std::string::npos);
  EXPECT_NE(
      expect_rejected(with([](auto& j) { j["kernels"][0]["backend"] = "cuda"; }), g).find("unknown backend"),
      std::string::npos);
  EXPECT_NE(expect_rejected(with([](auto& j) { j["version"] = 99; }), g).find("newer"), std::string::npos);
  EXPECT_NE(expect_rejected(with([](auto& j) { j.erase("kernels"); }), g).find("missing"), std::string::npos);
  // {Relu, Exp} and {Neg}: each kernel needs the other first.
  EXPECT_NE(expect_rejected(with([](auto& j) {
                              j["kernels"][0]["nodes"] = {0, 2};
                              j["kernels"][1]["nodes"] = {1};
                            }),
                            g)
                .find("cycle"),
            std::string::npos);
}

TEST(PlacementJson, FingerprintTracksShapes) {
  OnnxTestModel m(17);
  m.input("x", {-1, 3});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_NE(model_fingerprint(import_model(m)), model_fingerprint(import_model(m, {{"batch", 4}})));
  EXPECT_EQ(model_fingerprint(import_model(m)), model_fingerprint(import_model(m)));
}

}  // namespace
}  // namespace collage
