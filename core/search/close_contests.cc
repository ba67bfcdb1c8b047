#include "core/search/close_contests.h"

#include <algorithm>
#include <map>
#include <set>

namespace collage {

std::vector<Contest> find_close_contests(const Graph& graph, const std::vector<Candidate>& candidates,
                                         const std::vector<Cost>& costs,
                                         const std::vector<std::string>& signatures, const Pins& pins,
                                         const SearchOptions& options, const SearchResult& placed,
                                         const ContestOptions& contest) {
  std::vector<Contest> out;
  if (contest.rounds <= 0 || placed.kernels.empty()) return out;
  struct Held {
    size_t first = 0;  // the signature's first placed candidate
    double ms = 0;     // the time all its placed kernels hold
  };
  std::map<std::string, Held> held;
  const std::set<size_t> placed_kernels(placed.kernels.begin(), placed.kernels.end());
  for (size_t k : placed.kernels) {
    auto [it, fresh] = held.try_emplace(signatures[k], Held{k, 0});
    it->second.ms += costs[k].median_ms + options.epsilon_ms;
  }
  std::vector<std::pair<std::string, Held>> order(held.begin(), held.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  for (const auto& [signature, h] : order) {
    if (out.size() >= contest.max_contests || h.ms < contest.min_share * placed.predicted_ms) break;
    std::vector<Cost> without = costs;
    for (size_t i = 0; i < candidates.size(); ++i)
      if (signatures[i] == signature) without[i] = Cost::invalid("ruled out");
    SearchResult other;
    try {
      other = search_placement(graph, candidates, without, pins, options);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Cancelled) throw;
      continue;  // nothing else can run these nodes (under the pins): no contest
    }
    if (other.predicted_ms - placed.predicted_ms > contest.margin * h.ms) continue;
    Contest c;
    c.members.push_back(h.first);
    std::set<std::string> rivals{signature};
    for (size_t k : other.kernels)
      if (!placed_kernels.count(k) && rivals.insert(signatures[k]).second) c.members.push_back(k);
    if (c.members.size() < 2) continue;  // nothing new placed instead (cannot happen for an exact search)
    c.placed_ms = placed.predicted_ms;
    c.without_ms = other.predicted_ms;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace collage
