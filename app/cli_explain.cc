// `collage explain MODEL --placement P [--node NAME|ID] [--json]`: why each node sits where the
// placement put it, its runner-up and (with --node) the what-ifs, from the cost DB's costs alone
// (workflow::cached_costs, core/search/explain.h). Nothing is measured. JSON: docs/explain-format.md.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/model_loading.h"
#include "app/workflow/workflow.h"
#include "backends/registry.h"
#include "core/search/explain.h"

namespace collage::cli {
namespace {

using nlohmann::json;

constexpr int kExplainFormatVersion = 2;  // 2: baseline, baseline_ms, what_if current

// --backends, else the backends the placement was tuned with (its backend_versions), else all.
std::vector<const BackendSpec*> backends_for(const Args& args, const Placement& placement) {
  if (args.has("--backends")) return select_backends(args.get("--backends", ""));
  std::vector<const BackendSpec*> out;
  for (const BackendSpec* b : available_backends())
    if (placement.backend_versions.count(b->name)) out.push_back(b);
  return out.empty() ? available_backends() : out;
}

std::string signed_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.4f ms", ms);
  return buf;
}

std::string alternative_text(const Alternative& a) {
  if (!a.feasible) return "no alternative: " + a.infeasible_reason;
  std::string text = signed_ms(a.delta_ms) + " (" + a.backend + " '" + a.label + "'";
  if (a.kernel_nodes > 1) text += ", " + std::to_string(a.kernel_nodes) + " nodes";
  return text + ")" + (a.near_tie ? " near tie" : "");
}

json alternative_json(const Alternative& a) {
  if (!a.feasible) return {{"feasible", false}, {"reason", a.infeasible_reason}};
  return {{"feasible", true},         {"predicted_ms", a.predicted_ms}, {"delta_ms", a.delta_ms},
          {"spread_ms", a.spread_ms}, {"near_tie", a.near_tie},         {"backend", a.backend},
          {"label", a.label},         {"kernel_nodes", a.kernel_nodes}};
}

json node_json(const Graph& graph, const NodeExplanation& e) {
  const Node& n = graph.node(e.node);
  return {{"id", e.node},
          {"name", n.name},
          {"op", n.op_type},
          {"kernel",
           {{"backend", e.chosen.backend},
            {"label", e.chosen.label},
            {"nodes", e.chosen.nodes},
            {"cost_ms", e.chosen_ms},
            {"is_candidate", e.chosen_is_candidate}}},
          {"reason", reason_key(e.reason)},
          {"reason_text", e.reason_text},
          {"runner_up", alternative_json(e.runner_up)}};
}

json detail_json(const Graph& graph, const NodeExplanation& e, const std::vector<WhatIf>& what_ifs) {
  json j = node_json(graph, e);
  json candidates = json::array();
  for (const CandidateCover& c : e.candidates) {
    json cj = {{"backend", c.backend},
               {"label", c.label},
               {"node_count", c.nodes},
               {"valid", c.cost.valid()},
               {"chosen", c.chosen}};
    if (c.cost.valid()) {
      cj["median_ms"] = c.cost.median_ms;
      cj["stddev_ms"] = c.cost.stddev_ms;
      cj["samples"] = c.cost.samples;
    } else {
      cj["invalid_reason"] = c.cost.invalid_reason;
    }
    candidates.push_back(cj);
  }
  j["candidates"] = candidates;
  json ws = json::array();
  for (const WhatIf& w : what_ifs)
    ws.push_back({{"backend", w.backend},
                  {"current", w.current},
                  {"run_on", alternative_json(w.run_on)},
                  {"forbid", alternative_json(w.forbid)}});
  j["what_if"] = ws;
  return j;
}

void print_detail(const Graph& graph, const NodeExplanation& e, const std::vector<WhatIf>& what_ifs,
                  const PlacementExplainer& explainer) {
  const Node& n = graph.node(e.node);
  std::printf("node %d '%s' (%s)\n", e.node, n.name.c_str(), n.op_type.c_str());
  std::printf("placed on %s '%s' (%zu node%s%s), %.4f ms\n", e.chosen.backend.c_str(), e.chosen.label.c_str(),
              e.chosen.nodes.size(), e.chosen.nodes.size() == 1 ? "" : "s",
              e.chosen_is_candidate ? "" : ", not a candidate", e.chosen_ms);
  std::printf("why: %s: %s\n", reason_key(e.reason), e.reason_text.c_str());
  std::printf("candidates covering it:\n  %-6s %-18s %-36s %5s %10s %10s %7s\n", "chosen", "backend", "label",
              "nodes", "median ms", "stddev ms", "samples");
  for (const CandidateCover& c : e.candidates) {
    std::printf("  %-6s %-18s %-36s %5zu ", c.chosen ? "*" : "", c.backend.c_str(), c.label.c_str(), c.nodes);
    if (c.cost.valid())
      std::printf("%10.4f %10.4f %7d\n", c.cost.median_ms, c.cost.stddev_ms, c.cost.samples);
    else
      std::printf("invalid: %s\n", c.cost.invalid_reason.c_str());
  }
  std::printf("deltas against %s: %.4f ms\n", baseline_words(explainer.baseline()), explainer.baseline_ms());
  const Alternative& r = e.runner_up;
  if (r.feasible)
    std::printf("runner-up (%s forbidden for it): predicted %.4f ms, %s, spread %.4f ms%s\n",
                e.chosen.backend.c_str(), r.predicted_ms, alternative_text(r).c_str(), r.spread_ms,
                r.near_tie ? " (|delta| within the measured spread)" : "");
  else
    std::printf("runner-up: %s\n", alternative_text(r).c_str());
  std::printf("what if (predicted change of the whole placement):\n");
  for (const WhatIf& w : what_ifs) {
    std::printf("  run on %-18s %s\n", w.backend.c_str(),
                w.current ? "current (it runs there)" : alternative_text(w.run_on).c_str());
    std::printf("  forbid %-18s %s\n", w.backend.c_str(), alternative_text(w.forbid).c_str());
  }
}

std::vector<DimValues> bucket_dims(const std::vector<workflow::PlacedBucket>& buckets) {
  std::vector<DimValues> out;
  for (const workflow::PlacedBucket& b : buckets) out.push_back(b.dims);
  return out;
}

int explain_bucket(const Args& args, const std::string& path, const std::string& placement_path,
                   const Graph& graph, const Placement& placement);

}  // namespace

int command_explain(const std::vector<std::string>& argv) {
  Args args =
      parse_args(argv, with_model_options({"--placement", "--node", "--cost-db", "--backends", "--threads"}),
                 {"--json", "--no-cost-db"});
  if (args.positional.size() != 1 || !args.has("--placement"))
    throw Error(ErrorKind::InvalidInput,
                "usage: collage explain MODEL --placement P.json [--node NAME|ID] [--json] [--cost-db PATH]");
  if (args.has("--cost-db") && args.has("--no-cost-db"))
    throw Error(ErrorKind::InvalidInput, "--cost-db and --no-cost-db exclude each other");
  const std::string& path = args.positional[0];
  const std::string placement_path = args.get("--placement", "");
  std::vector<workflow::PlacedBucket> buckets = workflow::read_placed_buckets(
      path, placement_path, parse_load_options_for_buckets(args), parse_buckets(args));
  if (buckets.size() > 1 && args.has("--json"))
    throw Error(ErrorKind::InvalidInput,
                "--json explains one shape bucket; name it with --dim (the placement's: " +
                    bucket_list(bucket_dims(buckets)) + ")");
  for (const workflow::PlacedBucket& bucket : buckets) {
    if (buckets.size() > 1) std::printf("== bucket %s\n", bucket_label(bucket.dims).c_str());
    if (int rc = explain_bucket(args, path, placement_path, bucket.graph, bucket.placement); rc != 0)
      return rc;
  }
  return 0;
}

namespace {

int explain_bucket(const Args& args, const std::string& path, const std::string& placement_path,
                   const Graph& graph, const Placement& placement) {
  NodeId only = args.has("--node") ? node_by_ref(graph, args.get("--node", ""), "--node") : kNoNode;

  workflow::TuneStepOptions options;
  options.backends = backends_for(args, placement);
  options.threads = args.get_int("--threads", placement.threads, 1, 1024);
  std::string db_path = workflow::cost_db_path(args.get("--cost-db", ""));
  std::unique_ptr<CostDb> db;
  if (!args.has("--no-cost-db"))  // explain only reads: a read-only DB will do
    db = std::make_unique<CostDb>(db_path, CostDb::access_for_reading(db_path));
  TuneResult cached = workflow::cached_costs(graph, options, db.get());
  if (cached.from_cache == 0)
    throw Error(ErrorKind::InvalidInput,
                (db ? "the cost DB " + db_path + " has" : std::string("with --no-cost-db there are")) +
                    " no costs for " + path + " at " + std::to_string(options.threads) +
                    " thread(s) on these backends (run collage tune first)");

  std::set<std::string> graph_level;
  for (const BackendSpec* b : workflow::graph_level_backends(all_backends())) graph_level.insert(b->name);
  PlacementExplainer explainer(graph, cached.candidates, costs_of(cached.costs), placement, placement.pins,
                               placement.epsilon_ms, graph_level);

  // docs/explain-format.md: one document, with one node (--node) or all of them.
  auto print_document = [&](json nodes) {
    json doc = {{"format", "collage-explain"},
                {"version", kExplainFormatVersion},
                {"model", path},
                {"placement", placement_path},
                {"threads", options.threads},
                {"epsilon_ms", placement.epsilon_ms},
                {"predicted_ms", explainer.current_ms()},
                {"saved_predicted_ms", placement.predicted_ms},
                {"baseline", baseline_key(explainer.baseline())},
                {"baseline_ms", explainer.baseline_ms()},
                {"nodes", std::move(nodes)}};
    std::cout << doc.dump(1) << "\n";
  };
  if (only != kNoNode) {
    NodeExplanation e = explainer.explain(only);
    std::vector<WhatIf> what_ifs = explainer.what_ifs(only);
    if (args.has("--json")) {
      print_document(json::array({detail_json(graph, e, what_ifs)}));
    } else {
      print_detail(graph, e, what_ifs, explainer);
    }
    return 0;
  }

  std::vector<NodeExplanation> all;
  for (NodeId n = 0; n < graph.num_nodes(); ++n) all.push_back(explainer.explain(n));
  if (args.has("--json")) {
    json nodes = json::array();
    for (const NodeExplanation& e : all) nodes.push_back(node_json(graph, e));
    print_document(std::move(nodes));
    return 0;
  }
  size_t width = 4;
  for (const NodeExplanation& e : all) width = std::max(width, graph.node(e.node).name.size());
  width = std::min<size_t>(width, 48);
  std::printf("%-*s %-20s %-18s %-22s %s\n", static_cast<int>(width), "node", "op", "backend", "reason",
              "runner-up delta");
  std::map<std::string, int> per_reason;
  int near_ties = 0, without = 0;
  for (const NodeExplanation& e : all) {
    const Node& n = graph.node(e.node);
    ++per_reason[reason_key(e.reason)];
    near_ties += e.runner_up.feasible && e.runner_up.near_tie;
    without += !e.runner_up.feasible;
    std::string delta = e.runner_up.feasible ? signed_ms(e.runner_up.delta_ms) : "none";
    std::printf("%-*s %-20s %-18s %-22s %s%s\n", static_cast<int>(width), n.name.c_str(), n.op_type.c_str(),
                e.chosen.backend.c_str(), reason_key(e.reason), delta.c_str(),
                e.runner_up.near_tie ? "  ~ near tie" : "");
  }
  std::string reasons;
  for (const auto& [key, count] : per_reason)
    reasons += (reasons.empty() ? "" : ", ") + std::to_string(count) + " " + key;
  std::printf(
      "summary: %d nodes (%s); %d near ties (|delta| within the measured spread), %d without an "
      "alternative; placement %.4f ms under these costs (saved as %.4f ms), %zu kernels; deltas against "
      "%s (%.4f ms)\n",
      graph.num_nodes(), reasons.c_str(), near_ties, without, explainer.current_ms(), placement.predicted_ms,
      placement.kernels.size(), baseline_words(explainer.baseline()), explainer.baseline_ms());
  return 0;
}

}  // namespace

}  // namespace collage::cli
