#include "core/search/explain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "core/ir/error.h"

namespace collage {

namespace {

// A kernel's identity across placements: backend and nodes.
using KernelKey = std::pair<std::string, std::vector<NodeId>>;

std::string kernel_words(const KernelGroup& k) {
  std::string text = k.backend + " '" + (k.label.empty() ? "?" : k.label) + "'";
  if (k.nodes.size() > 1) text += " (" + std::to_string(k.nodes.size()) + " nodes)";
  return text;
}

}  // namespace

const char* reason_key(PlacementReason reason) {
  switch (reason) {
    case PlacementReason::NotFromTheseCosts:
      return "not-from-these-costs";
    case PlacementReason::RefinedIntoRegion:
      return "refined-into-region";
    case PlacementReason::OnlyBackend:
      return "only-backend";
    case PlacementReason::Pinned:
      return "pinned";
    case PlacementReason::FusedGroupWins:
      return "fused-group-wins";
    case PlacementReason::SingleOpCheapest:
      return "single-op-cheapest";
  }
  return "?";
}

const char* baseline_words(DeltaBaseline baseline) {
  return baseline == DeltaBaseline::ThisPlacement ? "this placement re-costed"
                                                  : "the op-level search under the current pins";
}

const char* baseline_key(DeltaBaseline baseline) {
  return baseline == DeltaBaseline::ThisPlacement ? "placement" : "op-level-search";
}

std::vector<Cost> costs_of(const std::vector<MeasuredCandidate>& measured) {
  std::vector<Cost> costs;
  costs.reserve(measured.size());
  for (const MeasuredCandidate& m : measured) costs.push_back(m.cost);
  return costs;
}

PlacementExplainer::PlacementExplainer(const Graph& graph, const std::vector<Candidate>& candidates,
                                       std::vector<Cost> costs, const Placement& placement, Pins pins,
                                       double epsilon_ms, std::set<std::string> graph_level)
    : graph_(graph),
      candidates_(candidates),
      costs_(std::move(costs)),
      placement_(placement),
      pins_(std::move(pins)),
      epsilon_ms_(epsilon_ms),
      graph_level_(std::move(graph_level)) {
  if (costs_.size() != candidates_.size())
    throw Error(ErrorKind::InvalidInput, "explain: one cost per candidate expected");
  const size_t n = static_cast<size_t>(graph_.num_nodes());
  kernel_of_node_.assign(n, -1);
  for (size_t k = 0; k < placement_.kernels.size(); ++k)
    for (NodeId node : placement_.kernels[k].nodes) {
      if (node < 0 || static_cast<size_t>(node) >= n)
        throw Error(ErrorKind::InvalidInput, "explain: the placement names node " + std::to_string(node) +
                                                 ", which the model does not have");
      kernel_of_node_[static_cast<size_t>(node)] = static_cast<int>(k);
    }
  for (size_t node = 0; node < n; ++node)
    if (kernel_of_node_[node] < 0)
      throw Error(ErrorKind::InvalidInput, "explain: the placement does not cover " +
                                               graph_.node(static_cast<NodeId>(node)).describe());
  covering_.resize(n);
  std::map<KernelKey, size_t> by_key;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    for (size_t node : candidates_[i].nodes.indices()) covering_[node].push_back(i);
    by_key.emplace(KernelKey{candidates_[i].backend, node_ids(candidates_[i].nodes)}, i);
  }
  for (const PlacedKernel& k : placement_.kernels) {
    auto it = by_key.find({k.backend, k.nodes});
    int index = it == by_key.end() ? -1 : static_cast<int>(it->second);
    candidate_of_kernel_.push_back(index);
    bool costed = index >= 0 && costs_[static_cast<size_t>(index)].valid();
    if (!costed && !k.cost.valid())  // no number to re-cost the placement with
      throw Error(ErrorKind::InvalidInput,
                  "explain: kernel " + k.backend + " '" + k.label +
                      "' has no cost: not a measured candidate, none in the placement");
    kernel_ms_.push_back(costed ? costs_[static_cast<size_t>(index)].median_ms : k.cost.median_ms);
    current_ms_ += kernel_ms_.back() + epsilon_ms_;
    baseline_kernels_[{k.backend, k.nodes}] = costed ? costs_[static_cast<size_t>(index)].stddev_ms : 0;
  }
  baseline_ms_ = current_ms_;
  // The cheapest placement under these costs and pins: what an op-level placement is checked
  // against, and the baseline of a refined one (its regions are measured, not summed).
  const bool op_level =
      std::all_of(candidate_of_kernel_.begin(), candidate_of_kernel_.end(), [](int c) { return c >= 0; });
  Alternative best = re_search(pins_, kNoNode);
  if (!best.feasible) return;
  if (op_level) {
    optimum_ms_ = best.predicted_ms;
    return;
  }
  baseline_ = DeltaBaseline::OpLevelSearch;
  baseline_ms_ = best.predicted_ms;
  baseline_kernels_.clear();
  for (size_t i : best.kernels)
    baseline_kernels_[{candidates_[i].backend, node_ids(candidates_[i].nodes)}] = costs_[i].stddev_ms;
}

Alternative PlacementExplainer::re_search(const Pins& pins, NodeId node) const {
  Alternative alt;
  SearchOptions options;
  options.epsilon_ms = epsilon_ms_;
  SearchResult result;
  try {
    result = search_placement(graph_, candidates_, costs_, pins, options);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidInput) throw;
    alt.infeasible_reason = e.what();
    return alt;
  }
  alt.feasible = true;
  alt.kernels = result.kernels;
  alt.predicted_ms = result.predicted_ms;
  alt.delta_ms = alt.predicted_ms - baseline_ms_;
  std::map<KernelKey, double> current = baseline_kernels_;  // kernel -> its stddev
  for (size_t i : result.kernels) {
    const Candidate& c = candidates_[i];
    if (node != kNoNode && c.nodes.contains(static_cast<size_t>(node))) {
      alt.backend = c.backend;
      alt.label = c.label;
      alt.kernel_nodes = c.nodes.popcount();
    }
    auto it = current.find({c.backend, node_ids(c.nodes)});
    if (it != current.end())
      current.erase(it);  // in both: no difference
    else
      alt.spread_ms += costs_[i].stddev_ms;
  }
  for (const auto& [key, stddev] : current) alt.spread_ms += stddev;
  alt.near_tie = std::abs(alt.delta_ms) <= alt.spread_ms;
  return alt;
}

const PlacedKernel& PlacementExplainer::kernel_of(NodeId node) const {
  if (node < 0 || node >= graph_.num_nodes())
    throw Error(ErrorKind::InvalidInput, "explain: the model has no node " + std::to_string(node));
  return placement_.kernels[static_cast<size_t>(kernel_of_node_[static_cast<size_t>(node)])];
}

NodeExplanation PlacementExplainer::explain(NodeId node) const {
  const PlacedKernel& chosen = kernel_of(node);
  const size_t k = static_cast<size_t>(kernel_of_node_[static_cast<size_t>(node)]);
  const int chosen_candidate = candidate_of_kernel_[k];
  NodeExplanation e;
  e.node = node;
  e.chosen = chosen;
  e.chosen_is_candidate = chosen_candidate >= 0;
  e.chosen_ms = kernel_ms_[k];
  e.current_ms = current_ms_;
  std::set<std::string> valid_backends, allowed_backends;
  for (size_t i : covering_[static_cast<size_t>(node)]) {
    const Candidate& c = candidates_[i];
    e.candidates.push_back(
        {i, c.backend, c.label, c.nodes.popcount(), costs_[i], static_cast<int>(i) == chosen_candidate});
    if (!costs_[i].valid()) continue;
    valid_backends.insert(c.backend);
    if (pins_.allows(node, c.backend)) allowed_backends.insert(c.backend);
  }

  const bool costed = e.chosen_is_candidate && costs_[static_cast<size_t>(chosen_candidate)].valid();
  const std::string where = kernel_words(chosen);
  if (!costed && (e.chosen_is_candidate || !graph_level_.count(chosen.backend))) {
    e.reason = PlacementReason::NotFromTheseCosts;
    e.reason_text = "its kernel " + where + " has no valid cost here (" +
                    (e.chosen_is_candidate ? costs_[static_cast<size_t>(chosen_candidate)].invalid_reason
                                           : std::string("not a candidate of these backends")) +
                    "): the placement was made from other costs";
  } else if (!e.chosen_is_candidate) {
    e.reason = PlacementReason::RefinedIntoRegion;
    e.reason_text = "the graph-level refinement moved it into a " + chosen.backend + " region of " +
                    std::to_string(chosen.nodes.size()) + (chosen.nodes.size() == 1 ? " node" : " nodes") +
                    " (measured end to end, not an op-level candidate)";
  } else if (valid_backends.size() == 1) {
    e.reason = PlacementReason::OnlyBackend;
    e.reason_text = "only " + *valid_backends.begin() + " offers a valid kernel for it";
  } else if (allowed_backends.size() == 1 && allowed_backends.count(chosen.backend)) {
    // Only when the pins force the backend it is on (pins changed since the placement do not count).
    e.reason = PlacementReason::Pinned;
    auto pin = pins_.pinned.find(node);
    e.reason_text = pin != pins_.pinned.end() ? "it is pinned to " + pin->second
                                              : "the forbids leave only " + chosen.backend + " for it";
  } else if (chosen.nodes.size() > 1) {
    e.reason = PlacementReason::FusedGroupWins;
    e.reason_text = "its fused " + chosen.backend + " kernel of " + std::to_string(chosen.nodes.size()) +
                    " nodes is part of the cheapest placement";
  } else {
    e.reason = PlacementReason::SingleOpCheapest;
    e.reason_text = "running it alone on " + chosen.backend + " is part of the cheapest placement";
  }
  // An op-level placement searched on other costs (or pins) need not be the cheapest under these: say so.
  const bool searched_here = e.reason == PlacementReason::FusedGroupWins ||
                             e.reason == PlacementReason::SingleOpCheapest ||
                             e.reason == PlacementReason::Pinned;
  if (searched_here && optimum_ms_ && current_ms_ > *optimum_ms_ + 1e-9) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  " (but under these costs and pins the whole placement is %.4f ms slower than the best one)",
                  current_ms_ - *optimum_ms_);
    e.reason_text += buf;
  }

  // A kernel without a cost here has nothing to be compared with: a re-search without it would only
  // give the optimum of these costs again (a "near tie" at +0 ms).
  if (e.reason == PlacementReason::NotFromTheseCosts) {
    e.runner_up.infeasible_reason = where + " has no cost here to weigh the alternatives against";
    return e;
  }
  // Runner-up: its backend forbidden for it, its own pin dropped (else the pin alone makes it infeasible).
  Pins pins = pins_;
  pins.pinned.erase(node);
  pins.forbidden[node].insert(chosen.backend);
  bool other = false;  // without another backend's kernel, forbidding this one says nothing more
  for (size_t i = 0; i < candidates_.size() && !other; ++i)
    other = candidates_[i].backend != chosen.backend && costs_[i].valid() &&
            candidates_[i].nodes.contains(static_cast<size_t>(node));
  if (!other) {
    e.runner_up.infeasible_reason = "cannot place " + graph_.node(node).describe() +
                                    " elsewhere: no backend but " + chosen.backend +
                                    " offers a valid kernel for it";
    return e;
  }
  e.runner_up = re_search(pins, node);
  return e;
}

std::vector<WhatIf> PlacementExplainer::what_ifs(NodeId node) const {
  const std::string& current_backend = kernel_of(node).backend;  // validates the id
  std::vector<WhatIf> out;
  std::set<std::string> seen;
  for (size_t i : covering_[static_cast<size_t>(node)]) {
    const std::string& backend = candidates_[i].backend;
    if (!seen.insert(backend).second) continue;
    WhatIf w;
    w.backend = backend;
    w.current = backend == current_backend;
    if (w.current) {  // it runs there already: the change is none
      w.run_on.feasible = true;
      w.run_on.predicted_ms = baseline_ms_;
      w.run_on.backend = backend;
      w.run_on.label = kernel_of(node).label;
      w.run_on.kernel_nodes = kernel_of(node).nodes.size();
    } else {
      Pins run_on = pins_;  // as the explorer's "Run on": pin, forbids cleared
      run_on.pinned[node] = backend;
      run_on.forbidden.erase(node);
      w.run_on = re_search(run_on, node);
    }
    Pins forbid = pins_;  // as its "Forbid": one more forbid, a pin stays
    forbid.forbidden[node].insert(backend);
    w.forbid = re_search(forbid, node);
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace collage
