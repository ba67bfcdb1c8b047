#include "core/search/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <queue>
#include <unordered_map>

#include "core/ir/graph_analysis.h"

namespace collage {

namespace {

using Clock = std::chrono::steady_clock;

struct State {
  IndexSet covered;
  double g = 0;
  int parent = -1;
  int candidate = -1;
};

struct StateHash {
  size_t operator()(const IndexSet& s) const { return s.hash(); }
};

class Searcher {
 public:
  Searcher(const Graph& graph, const std::vector<Candidate>& candidates, const std::vector<Cost>& costs,
           const Pins& pins, const SearchOptions& options, ProgressObserver* observer)
      : graph_(graph),
        cands_(candidates),
        options_(options),
        observer_(observer),
        edges_(node_edges(graph)),
        n_(static_cast<size_t>(graph.num_nodes())) {
    covering_.resize(n_);
    std::vector<double> share(n_, std::numeric_limits<double>::infinity());
    std::vector<std::string> why(n_);
    cost_.reserve(costs.size());
    for (const Cost& c : costs) cost_.push_back(c.median_ms);  // read only where valid
    for (size_t i = 0; i < cands_.size(); ++i) {
      const Candidate& c = cands_[i];
      bool allowed = costs[i].valid();
      for (size_t node : c.nodes.indices()) allowed &= pins.allows(static_cast<NodeId>(node), c.backend);
      if (!allowed) continue;
      auto nodes = c.nodes.indices();
      double per_node = (cost_[i] + options_.epsilon_ms) / static_cast<double>(nodes.size());
      for (size_t node : nodes) {
        covering_[node].push_back(i);
        share[node] = std::min(share[node], per_node);
      }
    }
    for (size_t node = 0; node < n_; ++node) {
      if (!std::isinf(share[node])) continue;
      const Node& nd = graph.node(static_cast<NodeId>(node));
      std::string reason = "no candidate kernel covers it";
      if (auto p = pins.pinned.find(static_cast<NodeId>(node)); p != pins.pinned.end())
        reason = "it is pinned to '" + p->second + "', which offers no valid kernel for it";
      else if (pins.forbidden.count(static_cast<NodeId>(node)))
        reason = "every backend that can run it is forbidden or its kernels failed to measure";
      else
        reason = "every candidate kernel covering it failed to build, run or verify";
      throw Error(ErrorKind::InvalidInput, "cannot place " + nd.describe() + ": " + reason);
    }
    lower_bound_suffix_ = share;  // h(S) = Σ over uncovered nodes of the cheapest share
  }

  SearchResult run() {
    auto start = Clock::now();
    SearchResult r = astar(start);
    r.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return r;
  }

 private:
  double heuristic(const IndexSet& covered) const {
    double h = 0;
    for (size_t i = covered.first_outside(); i < n_; ++i)
      if (!covered.contains(i)) h += lower_bound_suffix_[i];
    return h;
  }

  // Node -> kernel id for the chain of choices ending at `state` (-1 uncovered).
  std::vector<int> groups_of(int state) const {
    std::vector<int> group(n_, -1);
    for (int s = state; s >= 0 && states_[static_cast<size_t>(s)].candidate >= 0;
         s = states_[static_cast<size_t>(s)].parent)
      for (size_t node :
           cands_[static_cast<size_t>(states_[static_cast<size_t>(s)].candidate)].nodes.indices())
        group[node] = states_[static_cast<size_t>(s)].candidate;
    return group;
  }

  // Adding `c` must keep the graph of kernels acyclic: no path may leave c and,
  // possibly through other already-chosen kernels (contracted), come back.
  bool keeps_acyclic(const std::vector<int>& group, const IndexSet& c) const {
    std::vector<uint8_t> seen(n_, 0);
    std::vector<size_t> stack;
    std::vector<uint8_t> group_done(cands_.size(), 0);
    auto push = [&](size_t node) {
      if (!seen[node]) {
        seen[node] = 1;
        stack.push_back(node);
      }
    };
    for (size_t m : c.indices())
      for (NodeId s : edges_.succs[m])
        if (!c.contains(static_cast<size_t>(s))) push(static_cast<size_t>(s));
    while (!stack.empty()) {
      size_t x = stack.back();
      stack.pop_back();
      if (c.contains(x)) return false;
      int gid = group[x];
      if (gid >= 0 && !group_done[static_cast<size_t>(gid)]) {
        group_done[static_cast<size_t>(gid)] = 1;
        for (size_t y : cands_[static_cast<size_t>(gid)].nodes.indices()) push(y);
      }
      for (NodeId s : edges_.succs[x]) push(static_cast<size_t>(s));
    }
    return true;
  }

  void report(size_t expanded, double best, Clock::time_point start, const char* what) {
    if (!observer_) return;
    if (observer_->cancel_requested()) throw Error(ErrorKind::Cancelled, "search cancelled");
    ProgressEvent e;
    e.stage = ProgressEvent::Stage::Search;
    e.done = expanded;
    if (!std::isinf(best)) e.best_ms = best;  // inf: no complete placement yet
    e.message = what;
    e.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    observer_->on_progress(e);
  }

  // Successor states of `id`, via candidates containing its first uncovered node.
  template <class F>
  void expand(int id, F&& visit) {
    const IndexSet covered = states_[static_cast<size_t>(id)].covered;
    size_t first = covered.first_outside();
    std::vector<int> group = groups_of(id);
    for (size_t ci : covering_[first]) {
      const IndexSet& nodes = cands_[ci].nodes;
      if (nodes.intersects(covered) || !keeps_acyclic(group, nodes)) continue;
      visit(ci, covered | nodes, states_[static_cast<size_t>(id)].g + cost_[ci] + options_.epsilon_ms);
    }
  }

  SearchResult astar(Clock::time_point start) {
    struct Item {
      double f;
      uint64_t seq;
      int state;
      bool operator>(const Item& o) const { return f != o.f ? f > o.f : seq > o.seq; }
    };
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> open;
    std::unordered_map<IndexSet, int, StateHash> index;
    uint64_t seq = 0;
    states_.push_back({IndexSet(n_), 0, -1, -1});
    index[states_[0].covered] = 0;
    open.push({heuristic(states_[0].covered), seq++, 0});
    std::vector<uint8_t> closed(1, 0);
    double incumbent = std::numeric_limits<double>::infinity();
    size_t expanded = 0;
    while (!open.empty()) {
      Item item = open.top();
      open.pop();
      State& s = states_[static_cast<size_t>(item.state)];
      if (closed[static_cast<size_t>(item.state)]) continue;
      closed[static_cast<size_t>(item.state)] = 1;
      if (s.covered.popcount() == n_) return finish(item.state, expanded, true);
      if (++expanded % 512 == 0) report(expanded, incumbent, start, "searching");
      if (states_.size() > options_.max_states) return beam(start);
      expand(item.state, [&](size_t ci, IndexSet next, double g) {
        auto it = index.find(next);
        if (it != index.end()) {
          State& old = states_[static_cast<size_t>(it->second)];
          if (closed[static_cast<size_t>(it->second)] || old.g <= g) return;
          old.g = g;
          old.parent = item.state;
          old.candidate = static_cast<int>(ci);
          open.push({g + heuristic(next), seq++, it->second});
          if (next.popcount() == n_) incumbent = std::min(incumbent, g);
          return;
        }
        int id = static_cast<int>(states_.size());
        double h = heuristic(next);
        if (next.popcount() == n_) incumbent = std::min(incumbent, g);
        states_.push_back({std::move(next), g, item.state, static_cast<int>(ci)});
        closed.push_back(0);
        index[states_.back().covered] = id;
        open.push({g + h, seq++, id});
      });
    }
    throw Error(ErrorKind::InvalidInput, "no complete placement exists with these candidates and pins");
  }

  // Fallback past the state cap: states bucketed by their first uncovered node,
  // the best `beam_width` of each bucket expanded in node order.
  SearchResult beam(Clock::time_point start) {
    states_.clear();
    states_.push_back({IndexSet(n_), 0, -1, -1});
    std::vector<std::vector<int>> bucket(n_ + 1);
    bucket[0].push_back(0);
    size_t expanded = 0;
    for (size_t f = 0; f < n_; ++f) {
      auto& b = bucket[f];
      std::sort(b.begin(), b.end(), [&](int x, int y) {
        const State& a = states_[static_cast<size_t>(x)];
        const State& c = states_[static_cast<size_t>(y)];
        return a.g + heuristic(a.covered) < c.g + heuristic(c.covered);
      });
      if (b.size() > options_.beam_width) b.resize(options_.beam_width);
      for (int id : b) {
        if (++expanded % 512 == 0) report(expanded, -1, start, "beam search");
        expand(id, [&](size_t ci, IndexSet next, double g) {
          size_t nf = next.first_outside();
          for (int other : bucket[nf]) {
            State& o = states_[static_cast<size_t>(other)];
            if (o.covered == next) {
              if (g < o.g) {
                o.g = g;
                o.parent = id;
                o.candidate = static_cast<int>(ci);
              }
              return;
            }
          }
          states_.push_back({std::move(next), g, id, static_cast<int>(ci)});
          bucket[nf].push_back(static_cast<int>(states_.size() - 1));
        });
      }
    }
    if (bucket[n_].empty()) throw Error(ErrorKind::InvalidInput, "beam search found no complete placement");
    int best = *std::min_element(bucket[n_].begin(), bucket[n_].end(), [&](int x, int y) {
      return states_[static_cast<size_t>(x)].g < states_[static_cast<size_t>(y)].g;
    });
    return finish(best, expanded, false);
  }

  SearchResult finish(int state, size_t expanded, bool exact) {
    SearchResult r;
    r.exact = exact;
    r.states_expanded = expanded;
    r.predicted_ms = states_[static_cast<size_t>(state)].g;
    std::vector<size_t> chosen;
    for (int s = state; s >= 0 && states_[static_cast<size_t>(s)].candidate >= 0;
         s = states_[static_cast<size_t>(s)].parent)
      chosen.push_back(static_cast<size_t>(states_[static_cast<size_t>(s)].candidate));
    std::vector<IndexSet> sets;
    for (size_t c : chosen) sets.push_back(cands_[c].nodes);
    for (size_t k : execution_order(graph_, sets)) r.kernels.push_back(chosen[k]);
    return r;
  }

  const Graph& graph_;
  const std::vector<Candidate>& cands_;
  std::vector<double> cost_;  // candidate i's median, meaningful where it is in covering_
  SearchOptions options_;
  ProgressObserver* observer_;
  NodeEdges edges_;
  size_t n_;
  std::vector<std::vector<size_t>> covering_;
  std::vector<double> lower_bound_suffix_;
  std::vector<State> states_;
};

}  // namespace

std::vector<size_t> execution_order(const Graph& graph, const std::vector<IndexSet>& kernels) {
  size_t n = static_cast<size_t>(graph.num_nodes());
  std::vector<int> owner(n, -1);
  for (size_t k = 0; k < kernels.size(); ++k)
    for (size_t node : kernels[k].indices()) owner[node] = static_cast<int>(k);
  NodeEdges edges = node_edges(graph);
  std::vector<std::set<size_t>> succ(kernels.size());
  std::vector<int> indegree(kernels.size(), 0);
  for (size_t node = 0; node < n; ++node)
    for (NodeId s : edges.succs[node]) {
      int a = owner[node], b = owner[static_cast<size_t>(s)];
      if (a < 0 || b < 0) throw Error(ErrorKind::Internal, "execution_order: a node is not covered");
      if (a != b && succ[static_cast<size_t>(a)].insert(static_cast<size_t>(b)).second)
        ++indegree[static_cast<size_t>(b)];
    }
  // Kahn's algorithm, smallest first node first: deterministic.
  auto first_node = [&](size_t k) { return kernels[k].indices().front(); };
  auto later = [&](size_t a, size_t b) { return first_node(a) > first_node(b); };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> ready(later);
  for (size_t k = 0; k < kernels.size(); ++k)
    if (indegree[k] == 0) ready.push(k);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t k = ready.top();
    ready.pop();
    order.push_back(k);
    for (size_t s : succ[k])
      if (--indegree[s] == 0) ready.push(s);
  }
  if (order.size() != kernels.size()) throw Error(ErrorKind::Internal, "the kernels form a cycle");
  return order;
}

SearchResult search_placement(const Graph& graph, const std::vector<Candidate>& candidates,
                              const std::vector<Cost>& costs, const Pins& pins, const SearchOptions& options,
                              ProgressObserver* observer) {
  if (costs.size() != candidates.size()) throw Error(ErrorKind::Internal, "one cost per candidate expected");
  if (graph.num_nodes() == 0) return {};
  return Searcher(graph, candidates, costs, pins, options, observer).run();
}

}  // namespace collage
