#include "app/explorer/model/scope_details.h"

#include <algorithm>
#include <map>

#include "core/ir/scope_tree.h"

namespace collage {

ScopeDetails scope_details(const Graph& graph, const Placement* placement, int scope) {
  ScopeDetails d;
  const ScopeTree tree = ScopeTree::of(graph);
  if (scope <= 0 || scope >= tree.size()) return d;
  const ScopeTree::Scope& s = tree.scope(scope);
  d.scope = scope;
  d.path = QString::fromStdString(s.path);
  d.nodes = static_cast<int>(s.nodes.size());
  d.child_scopes = static_cast<int>(s.children.size());
  std::map<std::string, int> ops;
  for (NodeId n : s.nodes) ++ops[graph.node(n).op_type];
  for (const auto& [op, count] : ops) d.ops.emplace_back(QString::fromStdString(op), count);
  std::stable_sort(d.ops.begin(), d.ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (!placement) return d;

  std::vector<KernelTime> times;
  std::vector<bool> inside(static_cast<size_t>(graph.num_nodes()), false);
  for (NodeId n : s.nodes) inside[static_cast<size_t>(n)] = true;
  for (const PlacedKernel& k : placement->kernels) {
    const double ms = k.cost.valid() ? k.cost.median_ms : 0.0;  // no cost: no time to share out
    times.push_back({k.nodes, k.backend, ms});
    d.placement_ms += ms;
    const int in = static_cast<int>(std::count_if(k.nodes.begin(), k.nodes.end(),
                                                  [&](NodeId n) { return inside[static_cast<size_t>(n)]; }));
    if (in == 0) continue;
    ++d.kernels;
    const int size = static_cast<int>(k.nodes.size());
    d.costliest.push_back(
        {QString::fromStdString(k.backend), QString::fromStdString(k.label), ms * in / size, in, size});
  }
  d.placed = true;
  const ScopeCost cost = tree.cost(scope, split_evenly(graph.num_nodes(), times));
  d.ms = cost.ms;
  for (const auto& [backend, ms] : cost.backend_ms)
    d.backend_ms.emplace_back(QString::fromStdString(backend.empty() ? "(no kernel)" : backend), ms);
  std::stable_sort(d.backend_ms.begin(), d.backend_ms.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::stable_sort(d.costliest.begin(), d.costliest.end(),
                   [](const auto& a, const auto& b) { return a.ms_inside > b.ms_inside; });
  if (d.costliest.size() > ScopeDetails::kCostliest) d.costliest.resize(ScopeDetails::kCostliest);
  return d;
}

}  // namespace collage
