// `collage diff` and `collage profile` through the real binary: exit codes, the text and
// --json reports, the Chrome trace, and one-line errors (exit 2) for bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "core/search/placement.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using nlohmann::json;
using testing::CliResult;
using testing::CliTest;
using testing::OnnxTestModel;

// x[1,64] -> MatMul(64x64) -> Relu -> MatMul(64x64) -> Tanh: four nodes.
OnnxTestModel four_nodes() {
  OnnxTestModel m(17);
  m.input("x", {-1, 64});
  std::vector<float> w(64 * 64);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 7) * 0.01f;
  m.initializer("w1", Tensor::from_vector<float>({64, 64}, w));
  m.initializer("w2", Tensor::from_vector<float>({64, 64}, w));
  m.node("MatMul", {"x", "w1"}, {"a"});
  m.node("Relu", {"a"}, {"b"});
  m.node("MatMul", {"b", "w2"}, {"c"});
  m.node("Tanh", {"c"}, {"y"});
  m.output("y");
  return m;
}

Placement native_placement(const Graph& g, std::vector<std::vector<NodeId>> groups) {
  Placement p;
  p.model_fingerprint = model_fingerprint(g);
  for (auto& nodes : groups) {
    PlacedKernel k;
    k.nodes = nodes;
    k.backend = "native";
    k.label = "k" + std::to_string(nodes.front());
    k.cost = Cost::of_ms(0.001 * static_cast<double>(nodes.size()));
    p.predicted_ms += k.cost.median_ms;
    p.kernels.push_back(k);
  }
  return p;
}

class CliDiffProfileTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    OnnxTestModel m = four_nodes();
    model_ = write("m.onnx", m.bytes());
    graph_ = testing::import_model(m, {{"batch", 1}});
    per_node_ = write("a.json", placement_to_json(native_placement(graph_, {{0}, {1}, {2}, {3}}), graph_));
    fused_ = write("b.json", placement_to_json(native_placement(graph_, {{0}, {1}, {2, 3}}), graph_));
  }
  std::string model_, per_node_, fused_;
  Graph graph_;
};

TEST_F(CliDiffProfileTest, DiffReportsIdenticalAndChangedPlacements) {
  CliResult same = cli("diff " + per_node_ + " " + per_node_);
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("identical"), std::string::npos) << same.out;

  CliResult changed = cli("diff " + per_node_ + " " + fused_);
  EXPECT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_EQ(changed.out.find("identical"), std::string::npos) << changed.out;
  EXPECT_NE(changed.out.find("2 kernels unchanged; 2 nodes changed in 1 region"), std::string::npos)
      << changed.out;

  CliResult as_json = cli("diff " + per_node_ + " " + fused_ + " --json");
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  json j = json::parse(as_json.out);
  EXPECT_FALSE(j.at("identical").get<bool>());
  EXPECT_EQ(j.at("unchanged_kernels"), 2);
  ASSERT_EQ(j.at("regions").size(), 1u);
  EXPECT_EQ(j["regions"][0]["nodes"], (std::vector<int>{2, 3}));
  EXPECT_EQ(j["regions"][0]["a"].size(), 2u);
  EXPECT_EQ(j["regions"][0]["b"].size(), 1u);
  EXPECT_FALSE(j["regions"][0].contains("node_names"));  // no model: ids only
  EXPECT_TRUE(json::parse(cli("diff " + fused_ + " " + fused_ + " --json").out).at("identical").get<bool>());

  // With the model: validated, and nodes by name.
  CliResult named = cli("diff " + per_node_ + " " + fused_ + " --model " + model_ + " --json");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  json n = json::parse(named.out);
  EXPECT_EQ(n["regions"][0]["node_names"][0], graph_.node(2).name);
  CliResult text = cli("diff " + per_node_ + " " + fused_ + " --model " + model_);
  EXPECT_NE(text.out.find("'" + graph_.node(3).name + "'"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("note:"), std::string::npos) << text.out;

  // Costs measured at another thread count: said, not refused.
  Placement two_threads = native_placement(graph_, {{0}, {1}, {2, 3}});
  two_threads.threads = 2;
  CliResult threads =
      cli("diff " + per_node_ + " " + write("t2.json", placement_to_json(two_threads, graph_)));
  EXPECT_EQ(threads.exit_code, 0) << threads.err;
  EXPECT_NE(threads.out.find("note: the costs were measured at 1 and 2 threads"), std::string::npos)
      << threads.out;
}

TEST_F(CliDiffProfileTest, DiffBadInputExitsTwo) {
  expect_bad_input("diff " + per_node_, "usage");
  expect_bad_input("diff " + per_node_ + " " + (dir_ / "missing.json").string(), "missing.json");
  expect_bad_input("diff " + per_node_ + " " + write("broken.json", "{\"format\": "), "malformed");
  json other = json::parse(placement_to_json(native_placement(graph_, {{0}, {1}, {2}, {3}}), graph_));
  other["model_fingerprint"] = "0123456789abcdef";
  std::string other_path = write("other.json", other.dump());
  expect_bad_input("diff " + per_node_ + " " + other_path, "different models");
  expect_bad_input("diff " + per_node_ + " " + other_path, "0123456789abcdef");
  // Only the model catches what the structure cannot: a node id it does not have.
  json beyond = json::parse(placement_to_json(native_placement(graph_, {{0}, {1}, {2}, {3}}), graph_));
  beyond["kernels"][3]["nodes"] = {3, 9};
  std::string beyond_path = write("beyond.json", beyond.dump());
  EXPECT_EQ(cli("diff " + per_node_ + " " + beyond_path).exit_code, 0);
  expect_bad_input("diff " + per_node_ + " " + beyond_path + " --model " + model_, "unknown node id 9");
}

TEST_F(CliDiffProfileTest, ProfileTableJsonAndTrace) {
  CliResult table = cli("profile " + model_ + " --placement " + fused_ + " --repeat 3");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("all kernels"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("additive error"), std::string::npos) << table.out;

  CliResult as_json = cli("profile " + model_ + " --placement " + fused_ + " --repeat 4 --json");
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  json j = json::parse(as_json.out);
  for (const char* key : {"threads", "runs", "e2e_median_ms", "kernel_sum_ms", "isolated_sum_ms",
                          "additive_error_ms", "outside_kernels_ms", "predicted_ms", "kernels"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.at("runs"), 4);
  ASSERT_EQ(j.at("kernels").size(), 3u);  // the fused placement's kernels, in order
  EXPECT_EQ(j["kernels"][2]["nodes"], (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(j["kernels"][2]["isolated_ms"].get<double>(), 0.002);  // the placement's cost_ms
  for (const json& k : j["kernels"])
    for (const char* key : {"label", "backend", "in_run_ms", "start_ms", "delta_ms", "share", "gflop_per_s"})
      EXPECT_TRUE(k.contains(key)) << key;
  // Arithmetic from the model's shapes: a [1,64]x[64,64] product is 64*64 multiply-adds, Relu and
  // Tanh one operation per element; the rate is that over the time inside the run.
  const double product = 2.0 * 64 * 64;
  EXPECT_DOUBLE_EQ(j["kernels"][0]["flops"].get<double>(), product);
  EXPECT_DOUBLE_EQ(j["kernels"][1]["flops"].get<double>(), 64);
  EXPECT_DOUBLE_EQ(j["kernels"][2]["flops"].get<double>(), product + 64);
  EXPECT_DOUBLE_EQ(j["flops"].get<double>(), 2 * product + 128);
  EXPECT_NEAR(j["gflop_per_s"].get<double>(),
              j["flops"].get<double>() / j["e2e_median_ms"].get<double>() * 1e-6, 1e-9);
  const json& k0 = j["kernels"][0];
  if (k0["in_run_ms"].get<double>() > 0) {
    EXPECT_NEAR(k0["gflop_per_s"].get<double>(), product / k0["in_run_ms"].get<double>() * 1e-6, 1e-6);
  }
  EXPECT_NE(table.out.find("GFLOP/s"), std::string::npos) << table.out;

  std::string trace = (dir_ / "trace.json").string();
  CliResult traced = cli("profile " + model_ + " --placement " + fused_ + " --repeat 5 --trace " + trace);
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  std::ifstream in(trace);
  json events = json::parse(in);
  ASSERT_TRUE(events.is_array());
  int kernel_events = 0, run_events = 0;
  for (const json& e : events) {
    if (e.at("ph") != "X") continue;
    (e.at("cat") == "run" ? run_events : kernel_events)++;
  }
  EXPECT_EQ(run_events, 5);
  EXPECT_EQ(kernel_events, 3 * 5);
}

TEST_F(CliDiffProfileTest, ProfileBadInputExitsTwo) {
  expect_bad_input("profile " + model_, "usage");
  expect_bad_input("profile " + model_ + " --placement " + fused_ + " --repeat 0", "--repeat");
  expect_bad_input("profile " + model_ + " --placement " + (dir_ / "none.json").string(), "none.json");
  json other = json::parse(placement_to_json(native_placement(graph_, {{0}, {1}, {2}, {3}}), graph_));
  other["model_fingerprint"] = "0123456789abcdef";
  expect_bad_input("profile " + model_ + " --placement " + write("other.json", other.dump()),
                   "different model");
  expect_bad_input(
      "profile " + model_ + " --placement " + fused_ + " --trace " + (dir_ / "no/such/dir.json").string(),
      "cannot write trace");
}

}  // namespace
}  // namespace collage
