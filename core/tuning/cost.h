// What one kernel costs on this machine, or why it has no cost. The only encoding
// of an invalid cost in the tree: a non-empty `invalid_reason` (build failed, run
// failed, disagrees with the reference, ...). The statistics mean something only
// when valid(); searches treat an invalid cost as "cannot be placed".
#pragma once

#include <string>

namespace collage {

struct Cost {
  double median_ms = 0;
  double p90_ms = 0;
  double stddev_ms = 0;
  int samples = 0;
  double build_ms = 0;
  std::string invalid_reason;  // empty: valid

  bool valid() const { return invalid_reason.empty(); }
  static Cost of_ms(double median_ms) {
    Cost c;
    c.median_ms = median_ms;
    return c;
  }
  static Cost invalid(std::string why) {
    Cost c;
    c.invalid_reason = why.empty() ? "invalid" : std::move(why);
    return c;
  }
};

}  // namespace collage
