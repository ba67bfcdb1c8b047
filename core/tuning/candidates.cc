#include "core/tuning/candidates.h"

#include <set>

namespace collage {

IndexSet nodes_with_dynamic_shapes(const Graph& graph) {
  IndexSet out(graph.nodes.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n)
    for (const std::vector<ValueId>* list : {&graph.nodes[n].inputs, &graph.nodes[n].outputs})
      for (ValueId v : *list)
        if (v != kNoValue && !graph.value(v).shape_known) out.add(n);
  return out;
}

std::vector<Candidate> enumerate_candidates(const Graph& graph,
                                            const std::vector<const BackendSpec*>& backends) {
  std::vector<Candidate> out;
  ConvexityChecker convexity(graph);
  const IndexSet dynamic = nodes_with_dynamic_shapes(graph);
  for (const BackendSpec* spec : backends) {
    if (!unavailable_reason(*spec).empty()) continue;  // the CPU cannot run its kernels
    std::set<std::vector<size_t>> seen;
    const size_t pattern_max =
        spec->limits.max_pattern_nodes ? spec->limits.max_pattern_nodes : spec->limits.max_nodes;
    auto add = [&](const IndexSet& nodes, const std::string& label, size_t max_nodes) {
      if (nodes.empty() || nodes.popcount() > max_nodes) return;
      if (nodes.intersects(dynamic) && (!spec->takes_dynamic_shapes || nodes.popcount() > 1)) return;
      if (!seen.insert(nodes.indices()).second) return;
      if (!convexity.is_convex(nodes)) return;
      if (make_subgraph(graph, nodes).exits.size() > spec->limits.max_exits) return;
      out.push_back({nodes, spec->name, label});
    };
    for (const PatternPtr& p : spec->patterns)
      for (NodeId n = 0; n < graph.num_nodes(); ++n)
        for (const IndexSet& m : p->match(graph, n)) add(m, subgraph_label(graph, m), pattern_max);
    for (const auto& rule : spec->rules)
      for (const IndexSet& g : generate_groups(graph, *rule, spec->limits))
        add(g, subgraph_label(graph, g), spec->limits.max_nodes);
  }
  return out;
}

}  // namespace collage
