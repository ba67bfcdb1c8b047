// The compiled artifact: one file holding everything a runtime needs to run a
// placement without the ONNX importer, the cost DB or the searches — the graph
// (ops, attributes, shapes), the placement's kernels in execution order, a static
// memory plan and the weights (64-byte aligned). Format: docs/artifact-format.md.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend_api/backend.h"
#include "core/ir/graph.h"
#include "core/ir/kernel_group.h"
#include "core/ir/shape_buckets.h"
#include "core/runtime/executor.h"
#include "core/runtime/memory_plan.h"

namespace collage {

// A loader refuses a newer major version. 1: one plan; 2: a plan per shape bucket (written
// only when there are several, so one-shape artifacts stay readable by 1.x runtimes).
constexpr int kArtifactMajor = 2;
constexpr int kArtifactMinor = 1;  // minor versions only add optional fields (1: placed bodies)

struct ArtifactTensorInfo {
  std::string name;
  DType dtype = DType::Undefined;
  Shape shape;
};

// The manifest's descriptive part.
struct ArtifactInfo {
  int major = kArtifactMajor;
  int minor = kArtifactMinor;
  std::string model_name;
  std::string model_fingerprint;
  std::string device;  // device fingerprint the placement was tuned on
  int threads = 1;
  std::map<std::string, std::string> backend_versions;
  std::string placement_json;  // the placement as exported (docs/placement-format.md)
  std::vector<ArtifactTensorInfo> inputs, outputs;
  size_t unplanned_bytes = 0;  // intermediate bytes with no reuse, for comparison with the arena
};

// The kernels of body `body` of control-flow node `node` (an id of the graph holding it), in
// execution order, and its own placed bodies. A runtime without them runs the body natively.
struct ArtifactBodyPlan {
  NodeId node = kNoNode;
  std::string body;
  std::vector<KernelGroup> kernels;
  std::vector<ArtifactBodyPlan> bodies;
};

struct Artifact {
  ArtifactInfo info;
  Graph graph;                       // constants are views of the loaded file's weights section
  std::vector<KernelGroup> kernels;  // execution order
  std::vector<ArtifactBodyPlan> bodies;
  MemoryPlan memory_plan;
};

// `graph` as an artifact that runs each node natively, in order (no memory plan): how
// a graph travels to a measure worker, locally (a session file) or through the queue.
Artifact native_artifact(const Graph& graph);

// One plan of a multi-shape artifact: the graph imported with `dims`, its kernels and memory
// plan. Plans share the weights section: equal constants are stored once.
struct ArtifactBucket {
  DimValues dims;  // empty for a one-plan (version 1) file
  Artifact artifact;
};

// The file's bytes. Throws Unsupported for constants the format cannot hold (strings).
// One bucket: a version-1 file; several (each with dims): version 2, the device, threads and
// model name taken from the first.
std::string serialize_artifact(const Artifact& artifact);
std::string serialize_artifact(const std::vector<ArtifactBucket>& buckets);
void write_artifact(const Artifact& artifact, const std::string& path);
void write_artifact(const std::vector<ArtifactBucket>& buckets, const std::string& path);

// Verifies magic, version, size and checksum, then the manifest's structure; every
// problem is an InvalidInput error naming the artifact and what is wrong. The `_buckets`
// forms read both versions (a version-1 file is one bucket without dims); the others refuse
// a file with several plans, naming its buckets.
Artifact load_artifact(const std::string& path);
Artifact parse_artifact(const std::string& bytes, const std::string& origin);
std::vector<ArtifactBucket> load_artifact_buckets(const std::string& path);
std::vector<ArtifactBucket> parse_artifact_buckets(const std::string& bytes, const std::string& origin);

// The bucket whose graph inputs have exactly `shapes` (graph input order); InvalidInput
// listing every bucket's input shapes when none has (no padding, no rounding).
size_t select_bucket(const std::vector<ArtifactBucket>& buckets, const std::vector<Shape>& shapes);

// Compiles the kernels with `backends` (found by name) into executor steps, a control node
// with placed bodies running them through their kernels (core/runtime/placed_bodies.h).
// Throws InvalidInput if a kernel reads a value no earlier kernel computes or names a
// backend this build lacks.
std::vector<ExecStep> artifact_steps(const Artifact& artifact,
                                     const std::vector<const BackendSpec*>& backends,
                                     const CompileOptions& options);

namespace artifact_detail {
constexpr size_t kHeaderBytes = 64;
// Recomputes the checksum after `bytes` were edited (lets tests reach the manifest parser).
void reseal(std::string& bytes);
}  // namespace artifact_detail

}  // namespace collage
