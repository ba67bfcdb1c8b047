// What one kernel costs on this machine, or why it has no cost: the only encoding of
// "no cost" in the tree. `status` says which case it is (measured, not measured, failed,
// lost in the measurement worker) and `invalid_reason` says why in words for people;
// code decides on the status, never on the words. The statistics mean something only
// when valid() (status Measured), and the constructors check them: a measured cost is
// finite and not negative. Searches treat an invalid cost as "cannot be placed".
#pragma once

#include <cmath>
#include <string>

#include "core/ir/error.h"

namespace collage {

enum class CostStatus {
  Measured,     // median_ms and the other statistics hold
  NotMeasured,  // looked up only (cached_only) and the cost DB has none for this machine; never stored
  Failed,       // the kernel did not build, failed to run or disagrees with the native reference
  Lost,         // its measurement worker crashed, overran its time limit or ran out of memory
};

// "not measured (no cost in the cost DB for this machine)": the reason of Cost::not_measured().
inline constexpr const char* kNotMeasured = "not measured (no cost in the cost DB for this machine)";

struct Cost {
  CostStatus status = CostStatus::Measured;
  double median_ms = 0;
  double p90_ms = 0;
  double stddev_ms = 0;
  int samples = 0;
  double build_ms = 0;
  std::string invalid_reason;  // empty exactly when valid()

  bool valid() const { return status == CostStatus::Measured; }
  // A measured median; throws Internal for a negative or non-finite one.
  static Cost of_ms(double median_ms) {
    if (!std::isfinite(median_ms) || median_ms < 0)
      throw Error(ErrorKind::Internal, "a measured cost must be finite and not negative, got " +
                                           std::to_string(median_ms) + " ms");
    Cost c;
    c.median_ms = median_ms;
    return c;
  }
  // No cost, for `why`; `status` is Failed unless a worker was lost (Lost).
  static Cost invalid(std::string why, CostStatus status = CostStatus::Failed) {
    if (status == CostStatus::Measured)
      throw Error(ErrorKind::Internal, "an invalid cost needs a status other than Measured");
    Cost c;
    c.status = status;
    c.invalid_reason = why.empty() ? "invalid" : std::move(why);
    return c;
  }
  static Cost lost(std::string why) { return invalid(std::move(why), CostStatus::Lost); }
  static Cost not_measured() { return invalid(kNotMeasured, CostStatus::NotMeasured); }
};

const char* cost_status_name(CostStatus status);  // "measured", "not measured", "failed", "lost"
// The inverse of cost_status_name; Failed for anything else (costs stored before the status existed).
CostStatus cost_status_from_name(const std::string& name);

}  // namespace collage
