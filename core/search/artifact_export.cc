#include "core/search/artifact_export.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/ir/random_inputs.h"
#include "core/ir/tensor_compare.h"

namespace collage {

namespace {

std::vector<ArtifactTensorInfo> tensor_infos(const Graph& graph, const std::vector<ValueId>& ids) {
  std::vector<ArtifactTensorInfo> out;
  for (ValueId id : ids) out.push_back({graph.value(id).name, graph.value(id).dtype, graph.value(id).shape});
  return out;
}

// Applies the placement's thread count to every backend (process-wide pools), as
// the runtime will at load: reductions may split differently with more threads.
CompileOptions compile_options(const Placement& placement, const std::vector<const BackendSpec*>& backends) {
  apply_threads(backends, placement.threads);
  CompileOptions options;
  options.threads = placement.threads;
  return options;
}

// The reloaded artifact runs the same kernels: anything beyond rounding noise is a bug.
constexpr Tolerance kArtifactTolerance{1e-6, 1e-5, 0};

std::vector<ArtifactBodyPlan> body_plans(const Graph& graph, const std::vector<BodyPlacement>& placed) {
  std::vector<ArtifactBodyPlan> out;
  for (const BodyPlacement& b : placed) {
    ArtifactBodyPlan plan;
    for (NodeId n = 0; n < graph.num_nodes(); ++n)
      if (graph.node(n).name == b.node) plan.node = n;
    plan.body = b.body;
    for (const KernelGroup& k : b.placement.kernels) plan.kernels.push_back(k);
    plan.bodies = body_plans(placed_body(graph, b.node, b.body), b.placement.bodies);
    out.push_back(std::move(plan));
  }
  return out;
}

}  // namespace

Artifact build_artifact(const Graph& graph, const Placement& placement,
                        const std::vector<const BackendSpec*>& backends, const std::string& model_name) {
  Artifact art;
  ArtifactInfo& info = art.info;
  info.model_name = model_name;
  info.model_fingerprint =
      placement.model_fingerprint.empty() ? model_fingerprint(graph) : placement.model_fingerprint;
  info.device = placement.device;
  info.threads = placement.threads;
  for (const PlacedKernel& k : placement.kernels)
    for (const BackendSpec* b : backends)
      if (b->name == k.backend) info.backend_versions[b->name] = b->version;
  info.placement_json = placement_to_json(placement, graph);
  info.inputs = tensor_infos(graph, graph.inputs);
  info.outputs = tensor_infos(graph, graph.outputs);
  art.graph = graph;
  for (const KernelGroup& k : placement.kernels) art.kernels.push_back(k);
  art.bodies = body_plans(graph, placement.bodies);

  Executor executor(graph, placement_steps(graph, placement, backends, compile_options(placement, backends)));
  std::vector<BufferLifetime> lifetimes = executor.trace_buffers(random_inputs(graph, 1));
  art.memory_plan = plan_memory(lifetimes);
  info.unplanned_bytes = unplanned_bytes(lifetimes);
  return art;
}

namespace {

// The reloaded plan against the in-process execution of the same placement: outputs bitwise
// equal or within kArtifactTolerance, and no allocation outside the memory plan.
void check_plan(const Graph& graph, const Placement& placement,
                const std::vector<const BackendSpec*>& backends, const Artifact& loaded,
                ExportReport& report) {
  std::vector<Tensor> inputs = random_inputs(graph, 2);
  Executor in_process(graph,
                      placement_steps(graph, placement, backends, compile_options(placement, backends)));
  std::vector<Tensor> want = in_process.run(inputs);
  Executor from_file(loaded.graph, artifact_steps(loaded, backends, compile_options(placement, backends)));
  from_file.use_memory_plan(loaded.memory_plan);
  from_file.run(inputs);  // twice: the second run reuses the arena the first one dirtied
  std::vector<Tensor> got = from_file.run(inputs);
  // Shapes decided as the model runs may need other buffers on other inputs: those come from the
  // heap by design. With static shapes every allocation is the plan's.
  const bool dynamic = std::any_of(graph.values.begin(), graph.values.end(),
                                   [](const Value& v) { return !v.shape_known && !v.constant; });
  if (from_file.memory_stats().unplanned_allocations && !dynamic)
    report.mismatch = std::to_string(from_file.memory_stats().unplanned_allocations) +
                      " allocations missed the memory plan";
  report.bitwise_equal = true;
  for (size_t o = 0; o < want.size(); ++o) {
    if (!bitwise_equal(got[o], want[o])) report.bitwise_equal = false;
    TensorComparison c = compare_tensors(got[o], want[o], kArtifactTolerance);
    report.max_abs_diff = std::max(report.max_abs_diff, c.max_abs_error);
    if (!report.mismatch.empty() || c.ok()) continue;
    const std::string& name = graph.value(graph.outputs[o]).name;
    if (c.shape_mismatch || c.dtype_mismatch)
      report.mismatch = "output '" + name + "' is " + describe_value(got[o]) + " from the artifact, " +
                        describe_value(want[o]) + " in process";
    else
      report.mismatch = "output '" + name + "'[" + std::to_string(c.first_mismatch) + "] is " +
                        std::to_string(c.got_value) + " from the artifact, " + std::to_string(c.want_value) +
                        " in process";
  }
}

size_t file_size(const std::string& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<size_t>(size);
}

}  // namespace

ExportReport export_artifact(const Graph& graph, const Placement& placement,
                             const std::vector<const BackendSpec*>& backends, const std::string& model_name,
                             const std::string& path) {
  return export_artifact_buckets({{DimValues{}, &graph, &placement}}, backends, model_name, path)
      .buckets.front();
}

BucketedExportReport export_artifact_buckets(const std::vector<ExportBucket>& buckets,
                                             const std::vector<const BackendSpec*>& backends,
                                             const std::string& model_name, const std::string& path) {
  if (buckets.empty()) throw Error(ErrorKind::InvalidInput, "nothing to export: no placement");
  for (const ExportBucket& b : buckets)
    if (b.placement->threads != buckets.front().placement->threads)
      throw Error(ErrorKind::InvalidInput,
                  "the buckets were tuned at different thread counts (" + bucket_label(buckets.front().dims) +
                      ": " + std::to_string(buckets.front().placement->threads) + ", " +
                      bucket_label(b.dims) + ": " + std::to_string(b.placement->threads) +
                      "); an artifact runs at one");
  std::vector<ArtifactBucket> built;
  for (const ExportBucket& b : buckets)
    built.push_back({b.dims, build_artifact(*b.graph, *b.placement, backends, model_name)});
  write_artifact(built, path);
  BucketedExportReport report;
  report.file_bytes = file_size(path);
  std::vector<ArtifactBucket> loaded = load_artifact_buckets(path);
  for (size_t i = 0; i < buckets.size(); ++i) {
    ExportReport r;
    r.file_bytes = report.file_bytes;
    r.arena_bytes = built[i].artifact.memory_plan.arena_bytes;
    r.unplanned_bytes = built[i].artifact.info.unplanned_bytes;
    check_plan(*buckets[i].graph, *buckets[i].placement, backends, loaded.at(i).artifact, r);
    report.buckets.push_back(std::move(r));
  }
  return report;
}

}  // namespace collage
