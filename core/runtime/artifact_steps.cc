// Compiling an artifact's plans into executor steps: the main plan's kernels, and a placed
// body's kernels for each control node that has them (core/runtime/placed_bodies.h).
#include "core/ir/subgraph.h"
#include "core/runtime/artifact.h"
#include "core/runtime/placed_bodies.h"

namespace collage {

namespace {

std::vector<ExecStep> plan_steps(const Graph& g, const std::vector<KernelGroup>& kernels,
                                 const std::vector<ArtifactBodyPlan>& bodies,
                                 const std::vector<const BackendSpec*>& backends,
                                 const CompileOptions& options, bool outer) {
  const CompileOptions own = placement_options(options, outer, kernels.size(), !bodies.empty());
  std::vector<bool> available(g.values.size(), false);
  for (size_t v = 0; v < g.values.size(); ++v)
    available[v] = g.values[v].constant.has_value() || g.values[v].is_graph_input;
  std::vector<ExecStep> steps;
  for (const KernelGroup& k : kernels) {
    const BackendSpec* spec = nullptr;
    for (const BackendSpec* b : backends)
      if (b->name == k.backend) spec = b;
    if (!spec)
      throw Error(ErrorKind::InvalidInput,
                  "the artifact uses backend '" + k.backend + "', which this runtime lacks");
    IndexSet nodes(g.nodes.size());
    for (NodeId n : k.nodes) nodes.add(static_cast<size_t>(n));
    SubGraph sub = make_subgraph(g, nodes);
    for (ValueId in : sub.inputs)
      if (!available[static_cast<size_t>(in)])
        throw Error(ErrorKind::InvalidInput, "kernel '" + k.label + "' reads '" + g.value(in).name +
                                                 "' before any kernel computes it");
    for (ValueId out : sub.outputs) available[static_cast<size_t>(out)] = true;
    ExecStep step;
    step.kernel = spec->compile(g, sub, own);
    step.inputs = sub.inputs;
    step.outputs = sub.outputs;
    step.label = k.backend + ":" + k.label;
    if (k.nodes.size() == 1) {
      PlacedBodies placed;
      for (const ArtifactBodyPlan& b : bodies)
        if (b.node == k.nodes[0]) {
          const Graph& body = g.node(b.node).body(b.body);
          placed.add(&body, std::make_unique<Executor>(
                                body, plan_steps(body, b.kernels, b.bodies, backends, options, false)));
        }
      if (!placed.empty()) step.kernel = with_placed_bodies(std::move(step.kernel), std::move(placed));
    }
    steps.push_back(std::move(step));
  }
  for (ValueId out : g.outputs)
    if (!available[static_cast<size_t>(out)])
      throw Error(ErrorKind::InvalidInput, "graph output '" + g.value(out).name + "' is never computed");
  return steps;
}

}  // namespace

std::vector<ExecStep> artifact_steps(const Artifact& artifact,
                                     const std::vector<const BackendSpec*>& backends,
                                     const CompileOptions& options) {
  return plan_steps(artifact.graph, artifact.kernels, artifact.bodies, backends, options, true);
}

}  // namespace collage
