#include "core/tuning/cost.h"

namespace collage {

// One token each: the worker channel and the cost exchange files carry these names.
const char* cost_status_name(CostStatus status) {
  switch (status) {
    case CostStatus::Measured:
      return "measured";
    case CostStatus::NotMeasured:
      return "not-measured";
    case CostStatus::Failed:
      return "failed";
    case CostStatus::Lost:
      return "lost";
  }
  return "failed";
}

CostStatus cost_status_from_name(const std::string& name) {
  for (CostStatus s : {CostStatus::Measured, CostStatus::NotMeasured, CostStatus::Failed, CostStatus::Lost})
    if (name == cost_status_name(s)) return s;
  return CostStatus::Failed;
}

}  // namespace collage
