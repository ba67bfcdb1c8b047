// The one median of the tree: kernel costs, placement fitness, side-by-side timing, profiles
// and the run commands' latency all report it, so they agree on what "median" means.
#pragma once

#include <algorithm>
#include <vector>

#include "core/ir/error.h"

namespace collage {

// The middle sample; the mean of the middle two for an even count. Throws Internal for no
// samples: every caller times at least once, so none is a bug, not a latency of 0.
inline double median(std::vector<double> samples) {
  if (samples.empty()) throw Error(ErrorKind::Internal, "the median of no samples");
  const size_t n = samples.size();
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(n / 2), samples.end());
  const double upper = samples[n / 2];
  if (n % 2) return upper;
  const double lower =
      *std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(n / 2));
  return 0.5 * (lower + upper);
}

}  // namespace collage
