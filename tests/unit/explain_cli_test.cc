// `collage explain` end to end: tune a sample into a fresh cost DB, explain the placement
// (text and JSON), check every runner-up and the what-ifs against search_placement run
// here on the same cached costs, and the exit code 2 of each bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "app/workflow/workflow.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "cli_fixture.h"
#include "core/import/onnx_import.h"
#include "core/search/search.h"
#include "resources/samples/zoo.h"

namespace collage {
namespace {

using nlohmann::json;
using testing::CliResult;
using testing::CliTest;

class ExplainCliTest : public CliTest {
 protected:
  void expect_exit_2(const std::string& args, const std::string& must_mention) {
    CliResult r = cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(must_mention), std::string::npos) << args << "\nstderr: " << r.err;
  }
};

// Σ (cost + ε) over the placement's kernels, each at its candidate's cost when that is valid.
double recost(const Placement& p, const TuneResult& cached) {
  double ms = 0;
  for (const PlacedKernel& k : p.kernels) {
    double cost = k.cost.median_ms;
    for (size_t i = 0; i < cached.candidates.size(); ++i)
      if (cached.candidates[i].backend == k.backend && node_ids(cached.candidates[i].nodes) == k.nodes &&
          cached.costs[i].cost.valid())
        cost = cached.costs[i].cost.median_ms;
    ms += cost + p.epsilon_ms;
  }
  return ms;
}

TEST_F(ExplainCliTest, ExplainsEveryNodeAndAgreesWithReSearches) {
  const std::string model = (dir_ / "resnet_small.onnx").string();
  samples::build_sample("resnet_small").save(model);
  const std::string db = (dir_ / "costs.sqlite").string();
  const std::string placement = (dir_ / "placement.json").string();
  CliResult tune = cli("tune " + model + " --backends xnnpack,native --cost-db " + db +
                       " --epsilon 0.002 --repeat 1 -o " + placement);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const std::string base = "explain " + model + " --placement " + placement + " --cost-db " + db;

  // What the CLI reads, recomputed here: the model, the placement, the cached costs.
  ImportOptions io;
  io.evaluator = native::node_evaluator();
  Graph graph = import_onnx_file(model, io);
  Placement p = workflow::read_placement(placement, graph);
  workflow::TuneStepOptions options;
  options.backends = {find_backend("xnnpack"), find_backend("native")};
  options.threads = p.threads;
  CostDb costs_db(db);
  TuneResult cached = workflow::cached_costs(graph, options, &costs_db);
  std::vector<Cost> costs;
  for (const MeasuredCandidate& m : cached.costs) costs.push_back(m.cost);
  SearchOptions sopts;
  sopts.epsilon_ms = p.epsilon_ms;
  const double current = recost(p, cached);

  CliResult all = cli(base + " --json");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  json doc = json::parse(all.out);
  EXPECT_EQ(doc.at("format"), "collage-explain");
  EXPECT_EQ(doc.at("version"), 2);
  EXPECT_NEAR(doc.at("predicted_ms").get<double>(), current, 1e-9);
  ASSERT_EQ(doc.at("nodes").size(), static_cast<size_t>(graph.num_nodes()));
  int feasible = 0;
  for (const json& n : doc.at("nodes")) {
    NodeId id = n.at("id").get<NodeId>();
    EXPECT_EQ(n.at("name"), graph.node(id).name);
    EXPECT_EQ(n.at("op"), graph.node(id).op_type);
    EXPECT_FALSE(n.at("reason").get<std::string>().empty());
    const std::string backend = n.at("kernel").at("backend");
    const auto kernel_nodes = n.at("kernel").at("nodes").get<std::vector<NodeId>>();
    EXPECT_NE(std::find(kernel_nodes.begin(), kernel_nodes.end(), id), kernel_nodes.end());
    // The runner-up is the search with the node's backend forbidden for it.
    Pins forbid = p.pins;
    forbid.pinned.erase(id);
    forbid.forbidden[id].insert(backend);
    const json& r = n.at("runner_up");
    try {
      SearchResult want = search_placement(graph, cached.candidates, costs, forbid, sopts);
      ASSERT_TRUE(r.at("feasible").get<bool>()) << n.dump();
      EXPECT_NEAR(r.at("predicted_ms").get<double>(), want.predicted_ms, 1e-9) << n.at("name");
      EXPECT_NEAR(r.at("delta_ms").get<double>(), want.predicted_ms - current, 1e-9) << n.at("name");
      EXPECT_NE(r.at("backend"), backend);
      EXPECT_EQ(r.at("near_tie").get<bool>(),
                std::abs(r.at("delta_ms").get<double>()) <= r.at("spread_ms").get<double>());
      ++feasible;
    } catch (const Error& e) {
      EXPECT_FALSE(r.at("feasible").get<bool>()) << n.at("name");
      // With no other backend's kernel for the node the explanation says so; else the search's reason.
      const std::string reason = r.at("reason");
      EXPECT_TRUE(reason == e.what() ||
                  reason.find("no backend but " + backend + " offers a valid kernel") != std::string::npos)
          << reason << " / " << e.what();
    }
  }
  EXPECT_GT(feasible, 0);

  // One node in full: the candidates covering it and a what-if per backend.
  const std::string conv = "/layer1/layer1.0/conv1/Conv";
  CliResult one = cli(base + " --node " + conv + " --json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const json one_doc = json::parse(one.out);
  const json& node = one_doc.at("nodes").at(0);
  EXPECT_EQ(node.at("name"), conv);
  int chosen = 0;
  for (const json& c : node.at("candidates")) {
    chosen += c.at("chosen").get<bool>();
    EXPECT_TRUE(c.contains(c.at("valid").get<bool>() ? "median_ms" : "invalid_reason"));
  }
  EXPECT_EQ(chosen, node.at("kernel").at("is_candidate").get<bool>() ? 1 : 0);
  ASSERT_EQ(node.at("what_if").size(), 2u);  // xnnpack and native both offer a Conv
  NodeId conv_id = node.at("id").get<NodeId>();
  for (const json& w : node.at("what_if")) {
    Pins run_on = p.pins;
    run_on.pinned[conv_id] = w.at("backend").get<std::string>();
    run_on.forbidden.erase(conv_id);
    double want = search_placement(graph, cached.candidates, costs, run_on, sopts).predicted_ms;
    EXPECT_NEAR(w.at("run_on").at("predicted_ms").get<double>(), want, 1e-9);
    EXPECT_NEAR(w.at("run_on").at("delta_ms").get<double>(), want - current, 1e-9);
  }

  // Text: one line per node and a summary; by id the same node as by name.
  CliResult text = cli(base);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("summary: " + std::to_string(graph.num_nodes()) + " nodes"), std::string::npos)
      << text.out;
  EXPECT_EQ(std::count(text.out.begin(), text.out.end(), '\n'), graph.num_nodes() + 2);
  CliResult by_id = cli(base + " --node " + std::to_string(conv_id));
  ASSERT_EQ(by_id.exit_code, 0) << by_id.err;
  EXPECT_NE(by_id.out.find("'" + conv + "'"), std::string::npos) << by_id.out;
  EXPECT_NE(by_id.out.find("runner-up"), std::string::npos) << by_id.out;

  // Bad input: exit 2 with the reason.
  expect_exit_2(base + " --node /no/such/Conv", "/no/such/Conv");
  expect_exit_2(base + " --node 100000", "no node with that name or id");
  expect_exit_2(
      "explain " + model + " --placement " + placement + " --cost-db " + (dir_ / "empty.sqlite").string(),
      "run collage tune first");
  expect_exit_2("explain " + model + " --placement " + placement + " --no-cost-db", "run collage tune first");
  expect_exit_2(base + " --threads 0", "--threads");
  expect_exit_2(base + " --json=yes", "--json");
  expect_exit_2("explain " + model + " --cost-db " + db, "usage: collage explain");
  const std::string other = (dir_ / "other.onnx").string();
  samples::build_sample("mobilenet_small").save(other);
  expect_exit_2("explain " + other + " --placement " + placement + " --cost-db " + db, "different model");
}

}  // namespace
}  // namespace collage
