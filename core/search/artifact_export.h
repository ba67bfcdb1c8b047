// Placement -> compiled artifact, checked: the artifact is written, loaded back
// and run beside the in-process execution of the same placement.
#pragma once

#include <string>
#include <vector>

#include "core/runtime/artifact.h"
#include "core/search/placement.h"

namespace collage {

struct ExportReport {
  size_t file_bytes = 0;
  size_t arena_bytes = 0;      // static memory plan
  size_t unplanned_bytes = 0;  // the same buffers with no reuse
  double max_abs_diff = 0;     // artifact vs in-process outputs
  bool bitwise_equal = false;
  std::string mismatch;  // empty when the outputs agree (bitwise or within 1e-5 relative)
};

// The artifact for `placement`: compiles it, traces one run on seeded random
// inputs to record allocations, and plans the arena.
Artifact build_artifact(const Graph& graph, const Placement& placement,
                        const std::vector<const BackendSpec*>& backends, const std::string& model_name);

ExportReport export_artifact(const Graph& graph, const Placement& placement,
                             const std::vector<const BackendSpec*>& backends, const std::string& model_name,
                             const std::string& path);

}  // namespace collage
