#include "core/search/placement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/backend_api/kernel_signature.h"
#include "core/ir/accuracy.h"
#include "core/runtime/placed_bodies.h"
#include "core/search/search.h"

namespace collage {

namespace {
using nlohmann::json;

const BackendSpec* find_spec(const std::vector<const BackendSpec*>& backends, const std::string& name) {
  for (const BackendSpec* b : backends)
    if (b->name == name) return b;
  return nullptr;
}
}  // namespace

const Graph& placed_body(const Graph& graph, const std::string& node, const std::string& body) {
  for (const Node& n : graph.nodes)
    if (n.name == node) {
      auto it = n.attrs.find(body);
      if (it == n.attrs.end() || it->second.kind != AttrKind::Graph)
        throw Error(ErrorKind::InvalidInput, "placement: node '" + node + "' has no body '" + body + "'");
      return *it->second.g;
    }
  throw Error(ErrorKind::InvalidInput, "placement: a body placement names unknown node '" + node + "'");
}

namespace {
json placement_json(const Placement& p, const Graph& graph);
}

bool same_kernel(const PlacedKernel& a, const PlacedKernel& b) {
  return a.backend == b.backend && a.nodes == b.nodes;  // nodes ascending in both
}

bool same_kernels(const Placement& a, const Placement& b) {
  return std::equal(a.kernels.begin(), a.kernels.end(), b.kernels.begin(), b.kernels.end(), same_kernel);
}

std::string placement_to_json(const Placement& p, const Graph& graph) {
  return placement_json(p, graph).dump(1);
}

namespace {

json placement_json(const Placement& p, const Graph& graph) {
  json kernels = json::array();
  for (const PlacedKernel& k : p.kernels) {
    json names = json::array();
    for (NodeId n : k.nodes) names.push_back(graph.node(n).name);
    json kernel = {{"nodes", k.nodes}, {"node_names", names}, {"backend", k.backend}, {"label", k.label}};
    if (k.cost.valid()) kernel["cost_ms"] = k.cost.median_ms;  // no cost: no key
    kernels.push_back(std::move(kernel));
  }
  json pins = json::array();
  for (const auto& [node, backend] : p.pins.pinned)
    pins.push_back({{"node", graph.node(node).name}, {"pin", backend}});
  for (const auto& [node, set] : p.pins.forbidden)
    for (const auto& backend : set) pins.push_back({{"node", graph.node(node).name}, {"forbid", backend}});
  json doc = {{"format", "collage-placement"},
              {"version", Placement::kFormatVersion},
              {"model_fingerprint", p.model_fingerprint},
              {"backend_versions", p.backend_versions},
              {"threads", p.threads},
              {"device", p.device},
              {"epsilon_ms", p.epsilon_ms},
              {"predicted_ms", p.predicted_ms},
              {"kernels", kernels},
              {"pins", pins}};
  if (!p.accuracy.empty()) doc["accuracy"] = p.accuracy;
  if (!p.bodies.empty()) {
    json bodies = json::array();
    for (const BodyPlacement& b : p.bodies)
      bodies.push_back({{"node", b.node},
                        {"body", b.body},
                        {"placement", placement_json(b.placement, placed_body(graph, b.node, b.body))}});
    doc["bodies"] = std::move(bodies);
  }
  return doc;
}

Error bad_placement(const std::string& what) { return Error(ErrorKind::InvalidInput, "placement: " + what); }

json parse_placement_document(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw bad_placement(std::string("malformed JSON: ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "collage-placement")
    throw bad_placement("not a placement file (missing \"format\": \"collage-placement\")");
  if (doc.contains("buckets"))  // version 2 (core/search/placement_buckets.h): pick one first
    throw bad_placement("the file holds a placement per shape bucket (" +
                        std::to_string(doc["buckets"].is_array() ? doc["buckets"].size() : 0) +
                        "); name one with --dim");
  return doc;
}

// The one reader of the format: settings and kernels in file order. With `graph`, the
// fingerprint must be its model's and node ids must exist (errors name the node);
// without it only the structure is checked. Pins need the graph (they name nodes).
Placement read_structure(const json& doc, const Graph* graph) {
  Placement p;
  try {
    int version = doc.at("version").get<int>();
    if (version > Placement::kFormatVersion)
      throw bad_placement("format version " + std::to_string(version) + " is newer than this build reads (" +
                          std::to_string(Placement::kFormatVersion) + ")");
    p.model_fingerprint = doc.at("model_fingerprint").get<std::string>();
    if (graph && p.model_fingerprint != model_fingerprint(*graph))
      throw bad_placement(
          "it was made for a different model, or the same at other --dim values (fingerprint " +
          p.model_fingerprint + ", this model " + model_fingerprint(*graph) + ")");
    p.backend_versions = doc.value("backend_versions", std::map<std::string, std::string>{});
    p.threads = doc.value("threads", 1);
    p.device = doc.value("device", "");
    p.epsilon_ms = doc.value("epsilon_ms", 0.0);
    p.predicted_ms = doc.value("predicted_ms", 0.0);
    p.accuracy = doc.value("accuracy", "");
    if (!p.accuracy.empty()) try {
        p.accuracy = parse_accuracy(p.accuracy).to_string();
      } catch (const Error& e) {
        throw bad_placement(std::string("\"accuracy\": ") + e.what());
      }
    std::set<int64_t> covered;
    auto describe = [graph](int64_t n) {
      std::string text = "node " + std::to_string(n);
      if (graph) text += " ('" + graph->node(static_cast<NodeId>(n)).name + "')";
      return text;
    };
    for (const json& k : doc.at("kernels")) {
      PlacedKernel pk;
      pk.backend = k.at("backend").get<std::string>();
      pk.label = k.value("label", "");
      // No key is no cost; so is 0, which files wrote for it before the key could be left out.
      if (double ms = k.value("cost_ms", 0.0); ms != 0) {
        if (!std::isfinite(ms) || ms < 0) throw bad_placement("a kernel's cost_ms must be a duration");
        pk.cost = Cost::of_ms(ms);
      }
      for (const json& id : k.at("nodes")) {
        int64_t n = id.get<int64_t>();
        if (n < 0 || n > std::numeric_limits<NodeId>::max() || (graph && n >= graph->num_nodes()))
          throw bad_placement("unknown node id " + std::to_string(n));
        if (!covered.insert(n).second) throw bad_placement(describe(n) + " is covered by two kernels");
        pk.nodes.push_back(static_cast<NodeId>(n));
      }
      if (pk.nodes.empty()) throw bad_placement("a kernel with no nodes");
      std::sort(pk.nodes.begin(), pk.nodes.end());
      p.kernels.push_back(std::move(pk));
    }
  } catch (const json::exception& e) {
    throw bad_placement(std::string("missing or mistyped field: ") + e.what());
  }
  return p;
}

}  // namespace

Placement placement_structure_from_json(const std::string& text) {
  return read_structure(parse_placement_document(text), nullptr);
}

namespace {
Placement placement_from_document(const json& doc, const Graph& graph,
                                  const std::vector<const BackendSpec*>& backends);
}

Placement placement_from_json(const std::string& text, const Graph& graph,
                              const std::vector<const BackendSpec*>& backends) {
  return placement_from_document(parse_placement_document(text), graph, backends);
}

namespace {

// With `graph`: every kernel checked against it; bodies against the bodies they name.
Placement placement_from_document(const json& doc, const Graph& graph,
                                  const std::vector<const BackendSpec*>& backends) {
  auto bad = bad_placement;
  Placement p = read_structure(doc, &graph);
  IndexSet covered(graph.nodes.size());
  for (const PlacedKernel& k : p.kernels) {
    if (!find_spec(backends, k.backend)) throw bad("unknown backend '" + k.backend + "'");
    for (NodeId n : k.nodes) covered.add(static_cast<size_t>(n));
  }
  size_t missing = covered.first_outside();
  if (missing < graph.nodes.size())
    throw bad("node " + std::to_string(missing) + " ('" + graph.node(static_cast<NodeId>(missing)).name +
              "') is not covered by any kernel");
  try {
    for (const json& pin : doc.value("pins", json::array())) {
      std::string name = pin.at("node").get<std::string>();
      NodeId id = kNoNode;
      for (NodeId n = 0; n < graph.num_nodes(); ++n)
        if (graph.node(n).name == name) id = n;
      if (id == kNoNode) throw bad("pin on unknown node '" + name + "'");
      if (pin.contains("pin")) p.pins.pinned[id] = pin.at("pin").get<std::string>();
      if (pin.contains("forbid")) p.pins.forbidden[id].insert(pin.at("forbid").get<std::string>());
    }
  } catch (const json::exception& e) {
    throw bad(std::string("missing or mistyped field: ") + e.what());
  }
  std::vector<IndexSet> sets;
  for (const PlacedKernel& k : p.kernels) {
    IndexSet s(graph.nodes.size());
    for (NodeId n : k.nodes) s.add(static_cast<size_t>(n));
    sets.push_back(s);
  }
  std::vector<size_t> order;
  try {
    order = execution_order(graph, sets);
  } catch (const Error&) {
    throw bad("its kernels depend on each other in a cycle");
  }
  std::vector<PlacedKernel> ordered;
  for (size_t k : order) ordered.push_back(p.kernels[k]);
  p.kernels = std::move(ordered);
  try {
    for (const json& b : doc.value("bodies", json::array())) {
      BodyPlacement body;
      body.node = b.at("node").get<std::string>();
      body.body = b.at("body").get<std::string>();
      for (const BodyPlacement& earlier : p.bodies)
        if (earlier.node == body.node && earlier.body == body.body)
          throw bad("body '" + body.body + "' of node '" + body.node + "' is placed twice");
      const json& inner = b.at("placement");
      if (!inner.is_object()) throw bad("a body's placement must be an object");
      body.placement = placement_from_document(inner, placed_body(graph, body.node, body.body), backends);
      p.bodies.push_back(std::move(body));
    }
  } catch (const json::exception& e) {
    throw bad(std::string("missing or mistyped field: ") + e.what());
  }
  return p;
}

// `outer`: the placement is a whole run's, not a control node's body (which runs among the
// outer graph's kernels).
std::vector<ExecStep> steps_of(const Graph& graph, const Placement& placement,
                               const std::vector<const BackendSpec*>& backends, const CompileOptions& options,
                               bool outer) {
  const CompileOptions own =
      placement_options(options, outer, placement.kernels.size(), !placement.bodies.empty());
  std::vector<ExecStep> steps;
  for (const PlacedKernel& k : placement.kernels) {
    const BackendSpec* spec = find_spec(backends, k.backend);
    if (!spec) throw Error(ErrorKind::InvalidInput, "placement uses unknown backend '" + k.backend + "'");
    IndexSet nodes(graph.nodes.size());
    for (NodeId n : k.nodes) nodes.add(static_cast<size_t>(n));
    SubGraph sub = make_subgraph(graph, nodes);
    ExecStep step;
    step.kernel = spec->compile(graph, sub, own);
    step.inputs = sub.inputs;
    step.outputs = sub.outputs;
    step.label = k.backend + ":" + (k.label.empty() ? subgraph_label(graph, nodes) : k.label);
    if (k.nodes.size() == 1 && graph.node(k.nodes[0]).has_bodies()) {
      PlacedBodies placed;
      for (const BodyPlacement& b : placement.bodies)
        if (b.node == graph.node(k.nodes[0]).name) {
          const Graph& body = placed_body(graph, b.node, b.body);
          placed.add(&body,
                     std::make_unique<Executor>(body, steps_of(body, b.placement, backends, options, false)));
        }
      if (!placed.empty()) step.kernel = with_placed_bodies(std::move(step.kernel), std::move(placed));
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace

std::vector<ExecStep> placement_steps(const Graph& graph, const Placement& placement,
                                      const std::vector<const BackendSpec*>& backends,
                                      const CompileOptions& options) {
  return steps_of(graph, placement, backends, options, true);
}

std::map<std::string, BackendShare> time_per_backend(const Placement& placement) {
  std::map<std::string, BackendShare> shares;
  for (const PlacedKernel& k : placement.kernels) {
    BackendShare& share = shares[k.backend];
    share.kernels++;
    if (k.cost.valid())
      share.predicted_ms += k.cost.median_ms;
    else
      share.without_cost++;
  }
  return shares;
}

std::string placement_summary(const Placement& placement) {
  std::string shares;
  for (const auto& [name, share] : time_per_backend(placement))
    shares += (shares.empty() ? "" : ", ") + name + " " + std::to_string(share.kernels);
  char predicted[64];
  std::snprintf(predicted, sizeof predicted, "%.3f", placement.predicted_ms);
  return std::to_string(placement.kernels.size()) + " kernels (" + shares + "), predicted " + predicted +
         " ms a run";
}

const Placement* find_body_placement(const Placement& placement, const std::string& node,
                                     const std::string& body) {
  for (const BodyPlacement& b : placement.bodies)
    if (b.node == node && b.body == body) return &b.placement;
  return nullptr;
}

std::optional<double> summed_cost_ms(const std::vector<PlacedKernel>& kernels, double epsilon_ms) {
  double sum = 0;
  for (const PlacedKernel& k : kernels) {
    if (!k.cost.valid()) return std::nullopt;
    sum += k.cost.median_ms + epsilon_ms;
  }
  return sum;
}

}  // namespace collage
