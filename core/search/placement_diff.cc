#include "core/search/placement_diff.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

namespace collage {

namespace {

using nlohmann::json;

// Union-find over kernel indices.
struct Components {
  std::vector<size_t> parent;
  explicit Components(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), size_t{0}); }
  size_t find(size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(size_t x, size_t y) { parent[find(x)] = find(y); }
};

void add_cost(const PlacedKernel& k, double& sum_ms, int& without_cost) {
  if (k.cost.valid())
    sum_ms += k.cost.median_ms;
  else
    ++without_cost;
}

json kernels_json(const std::vector<PlacedKernel>& kernels, const Graph* graph) {
  json out = json::array();
  for (const PlacedKernel& k : kernels) {
    json j = {{"backend", k.backend}, {"label", k.label}, {"nodes", k.nodes}};
    if (k.cost.valid()) j["cost_ms"] = k.cost.median_ms;  // as in the placement file: no cost, no key
    if (graph) {
      json names = json::array();
      for (NodeId n : k.nodes) names.push_back(graph->node(n).name);
      j["node_names"] = names;
    }
    out.push_back(j);
  }
  return out;
}

}  // namespace

std::vector<NodeId> PlacementDiff::changed() const {
  std::vector<NodeId> nodes;
  for (const DiffRegion& r : regions) nodes.insert(nodes.end(), r.nodes.begin(), r.nodes.end());
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

PlacementDiff diff_placements(const Placement& a, const Placement& b, const std::string& name_a,
                              const std::string& name_b) {
  if (a.model_fingerprint != b.model_fingerprint)
    throw Error(ErrorKind::InvalidInput, "the placements are for different models: " + name_a +
                                             " has model fingerprint " + a.model_fingerprint + ", " + name_b +
                                             " has " + b.model_fingerprint);
  PlacementDiff d;
  d.kernels_a = a.kernels.size();
  d.kernels_b = b.kernels.size();
  d.predicted_a_ms = a.predicted_ms;
  d.predicted_b_ms = b.predicted_ms;
  d.threads_a = a.threads;
  d.threads_b = b.threads;
  for (const PlacedKernel& k : a.kernels)
    d.nodes_per_backend[k.backend].a += static_cast<int>(k.nodes.size());
  for (const PlacedKernel& k : b.kernels)
    d.nodes_per_backend[k.backend].b += static_cast<int>(k.nodes.size());

  // Unchanged: B's kernel equals an A kernel (each matched once).
  std::map<NodeId, size_t> a_by_first;  // a kernel's first node identifies it among A's kernels
  for (size_t i = 0; i < a.kernels.size(); ++i) a_by_first.emplace(a.kernels[i].nodes.front(), i);
  std::vector<bool> a_same(a.kernels.size(), false), b_same(b.kernels.size(), false);
  for (size_t j = 0; j < b.kernels.size(); ++j) {
    auto it = a_by_first.find(b.kernels[j].nodes.front());
    if (it == a_by_first.end() || a_same[it->second] || !same_kernel(a.kernels[it->second], b.kernels[j]))
      continue;
    a_same[it->second] = b_same[j] = true;
    ++d.unchanged_kernels;
  }

  // Changed kernels: A's are 0..na-1, B's na..; those sharing a node join.
  std::vector<size_t> changed_a, changed_b;
  for (size_t i = 0; i < a.kernels.size(); ++i)
    if (!a_same[i]) changed_a.push_back(i);
  for (size_t j = 0; j < b.kernels.size(); ++j)
    if (!b_same[j]) changed_b.push_back(j);
  const size_t na = changed_a.size();
  Components components(na + changed_b.size());
  std::map<NodeId, size_t> owner;  // node -> the first changed kernel seen covering it
  auto visit = [&](const PlacedKernel& k, size_t index) {
    for (NodeId n : k.nodes) {
      auto [it, fresh] = owner.emplace(n, index);
      if (!fresh) components.join(index, it->second);
    }
  };
  for (size_t c = 0; c < na; ++c) visit(a.kernels[changed_a[c]], c);
  for (size_t c = 0; c < changed_b.size(); ++c) visit(b.kernels[changed_b[c]], na + c);

  std::map<size_t, DiffRegion> by_root;
  for (size_t c = 0; c < na; ++c) {
    DiffRegion& r = by_root[components.find(c)];
    r.a.push_back(a.kernels[changed_a[c]]);
    add_cost(a.kernels[changed_a[c]], r.a_ms, r.a_without_cost);
  }
  for (size_t c = 0; c < changed_b.size(); ++c) {
    DiffRegion& r = by_root[components.find(na + c)];
    r.b.push_back(b.kernels[changed_b[c]]);
    add_cost(b.kernels[changed_b[c]], r.b_ms, r.b_without_cost);
  }
  for (auto& [root, region] : by_root) {
    std::set<NodeId> nodes;
    for (const auto* side : {&region.a, &region.b})
      for (const PlacedKernel& k : *side) nodes.insert(k.nodes.begin(), k.nodes.end());
    region.nodes.assign(nodes.begin(), nodes.end());
    d.changed_nodes += region.nodes.size();
    d.regions.push_back(std::move(region));
  }
  std::sort(d.regions.begin(), d.regions.end(),
            [](const DiffRegion& x, const DiffRegion& y) { return x.nodes.front() < y.nodes.front(); });
  return d;
}

std::string backend_summary(const std::vector<PlacedKernel>& kernels) {
  std::map<std::string, int> count;
  for (const PlacedKernel& k : kernels) ++count[k.backend];
  std::vector<std::pair<int, std::string>> order;
  for (const auto& [backend, n] : count) order.emplace_back(-n, backend);
  std::sort(order.begin(), order.end());
  std::string text;
  for (const auto& [minus_n, backend] : order)
    text += (text.empty() ? "" : ", ") + backend + (minus_n < -1 ? " x" + std::to_string(-minus_n) : "");
  return text.empty() ? "-" : text;
}

std::string placement_diff_to_json(const PlacementDiff& d, const Graph* graph) {
  json regions = json::array();
  for (const DiffRegion& r : d.regions) {
    json j = {{"nodes", r.nodes},
              {"a", kernels_json(r.a, graph)},
              {"b", kernels_json(r.b, graph)},
              {"a_ms", r.a_ms},
              {"b_ms", r.b_ms},
              {"delta_ms", r.delta_ms()}};
    if (!r.costs_complete()) {  // the sums leave these kernels out
      j["a_without_cost"] = r.a_without_cost;
      j["b_without_cost"] = r.b_without_cost;
    }
    if (graph) {
      json names = json::array();
      for (NodeId n : r.nodes) names.push_back(graph->node(n).name);
      j["node_names"] = names;
    }
    regions.push_back(j);
  }
  json backends = json::object();
  for (const auto& [name, n] : d.nodes_per_backend) backends[name] = {{"a", n.a}, {"b", n.b}};
  json doc = {{"identical", d.identical()},         {"kernels_a", d.kernels_a},
              {"kernels_b", d.kernels_b},           {"unchanged_kernels", d.unchanged_kernels},
              {"changed_nodes", d.changed_nodes},   {"predicted_a_ms", d.predicted_a_ms},
              {"predicted_b_ms", d.predicted_b_ms}, {"predicted_delta_ms", d.predicted_delta_ms()},
              {"threads_a", d.threads_a},           {"threads_b", d.threads_b},
              {"nodes_per_backend", backends},      {"regions", regions}};
  return doc.dump(1);
}

PlacementDiff diff_buckets(const Graph& graph_a, const Placement& a, const Graph& graph_b, const Placement& b,
                           const std::string& name_a, const std::string& name_b) {
  for (NodeId n = 0; n < std::max(graph_a.num_nodes(), graph_b.num_nodes()); ++n) {
    if (n < graph_a.num_nodes() && n < graph_b.num_nodes() && graph_a.node(n).name == graph_b.node(n).name &&
        graph_a.node(n).op_type == graph_b.node(n).op_type)
      continue;
    auto describe = [n](const Graph& g) {
      return n < g.num_nodes() ? "'" + g.node(n).name + "' (" + g.node(n).op_type + ")" : std::string("none");
    };
    throw Error(ErrorKind::InvalidInput,
                "the graphs of " + name_a + " and " + name_b +
                    " differ in structure (the import folded them differently): node " + std::to_string(n) +
                    " is " + describe(graph_a) + " in one, " + describe(graph_b) + " in the other");
  }
  Placement b_as_a = b;
  b_as_a.model_fingerprint = a.model_fingerprint;  // the same model at another shape
  return diff_placements(a, b_as_a, name_a, name_b);
}

}  // namespace collage
