// Close contests: where the op-level search chose between kernels whose measured costs lie
// within the measuring noise. On a shared machine one measurement of a kernel can be off by
// a third for a minute (docs/cli.md, "collage tune"), so such a choice is a coin toss until the rivals are
// measured again side by side. A contest is one signature of the searched placement (every
// kernel of it, e.g. one layer's attention in all twelve layers) and the kernels the search
// places instead once that signature is ruled out, when the placement then costs at most
// `margin` of the signature's own time more.
#pragma once

#include <string>
#include <vector>

#include "core/ir/settings.h"
#include "core/search/pins.h"
#include "core/search/search.h"
#include "core/tuning/candidates.h"
#include "core/tuning/cost.h"

namespace collage {

struct ContestOptions {
  double margin = kSettings.contest_margin;
  int rounds = kSettings.contest_rounds;  // 0: no contests are looked for
  double min_share = kSettings.contest_min_share;
  size_t max_contests = kSettings.contest_max;
};

struct Contest {
  // Candidate indices, one per signature: the placed one first, then its rivals (the kernels
  // the search places instead). Every member has a valid cost.
  std::vector<size_t> members;
  double placed_ms = 0;   // the placement's predicted time
  double without_ms = 0;  // its predicted time with the placed signature ruled out
};

// The close contests of `placed` (the search's result over `costs`, under `pins` and
// `options`); `signatures` is aligned with `candidates` (a kernel's measurement identity:
// candidates of one signature share one cost). Placed signatures are looked at in order of
// the time they hold, the larger first; none below `contest.min_share` of the placement.
std::vector<Contest> find_close_contests(const Graph& graph, const std::vector<Candidate>& candidates,
                                         const std::vector<Cost>& costs,
                                         const std::vector<std::string>& signatures, const Pins& pins,
                                         const SearchOptions& options, const SearchResult& placed,
                                         const ContestOptions& contest);

}  // namespace collage
