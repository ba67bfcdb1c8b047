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

// One shape bucket to export: the graph imported with `dims` and its placement (not owned).
struct ExportBucket {
  DimValues dims;  // empty only when it is the one bucket
  const Graph* graph = nullptr;
  const Placement* placement = nullptr;
};

struct BucketedExportReport {
  size_t file_bytes = 0;
  std::vector<ExportReport> buckets;  // in the order given, each checked as export_artifact checks one
};

// One artifact for every bucket (a version-2 file when there are several; weights stored
// once): each plan reloaded from the file and run beside its in-process placement.
// InvalidInput when the buckets were tuned at different thread counts.
BucketedExportReport export_artifact_buckets(const std::vector<ExportBucket>& buckets,
                                             const std::vector<const BackendSpec*>& backends,
                                             const std::string& model_name, const std::string& path);

}  // namespace collage
