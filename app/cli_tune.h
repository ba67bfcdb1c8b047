#pragma once

#include <string>
#include <vector>

#include "core/placement.h"

namespace collage::cli {

struct PlacementRun {
  std::vector<Tensor> outputs;
  double median_ms = 0;
  double min_ms = 0;
  double max_abs_error = 0;
  std::string mismatch;  // empty when the outputs agree with the native reference
};

// Compiles and runs `placement` `repeat` times after one verified warm-up run.
PlacementRun run_placement(const Graph& graph, const Placement& placement,
                           const std::vector<const BackendSpec*>& backends, int threads, int repeat,
                           const std::vector<Tensor>& inputs);

}  // namespace collage::cli
