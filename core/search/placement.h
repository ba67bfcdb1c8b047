// A placement: which backend runs which (fused) sub-graph, in execution order.
// Exported as versioned JSON (docs/placement-format.md) and importable back.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/backend_api/backend.h"
#include "core/backend_api/kernel_signature.h"  // model_fingerprint
#include "core/ir/kernel_group.h"
#include "core/runtime/executor.h"
#include "core/search/pins.h"
#include "core/tuning/cost.h"

namespace collage {

// A kernel group with the cost the search placed it at. A `Cost` rather than a number so
// "no cost" (a placement file without one, a hand-built placement) is a status, not a 0
// that sums and draws like a very fast kernel: valid() holds median_ms (the placement
// keeps only the median: what its file stores), otherwise the status is NotMeasured.
struct PlacedKernel : KernelGroup {
  Cost cost = no_placed_cost();

  // The cost of a kernel the placement has no measurement for (status NotMeasured).
  static Cost no_placed_cost() { return Cost::invalid("no cost in the placement", CostStatus::NotMeasured); }
};

struct BodyPlacement;

struct Placement {
  static constexpr int kFormatVersion = 1;
  std::string model_fingerprint;
  std::map<std::string, std::string> backend_versions;
  int threads = 1;
  std::string device;
  double epsilon_ms = 0;
  double predicted_ms = 0;            // the search's estimate: the kernels' costs plus epsilon_ms each
  std::vector<PlacedKernel> kernels;  // execution order
  Pins pins;
  // The accuracy budget (core/ir/accuracy.h) it was tuned and verified under: "" for an fp32
  // placement. Every later check of it (export, explorer) holds it to the same budget.
  std::string accuracy;
  // Control-flow nodes' bodies, each placed as a graph of its own (none: node by node natively).
  std::vector<BodyPlacement> bodies;
};

// The placement of one body (`body`: the attribute, e.g. "else_branch") of the control-flow
// node named `node`, tuned on the body as a graph of its own.
struct BodyPlacement {
  std::string node;
  std::string body;
  Placement placement;
};

// The node `name` of `graph` and its body `body`; InvalidInput naming what is missing.
const Graph& placed_body(const Graph& graph, const std::string& node, const std::string& body);

// The summed cost of `kernels` plus `epsilon_ms` per kernel; nullopt when one has no cost
// (counting it as 0 would predict a faster placement than there is).
std::optional<double> summed_cost_ms(const std::vector<PlacedKernel>& kernels, double epsilon_ms = 0);

// Kernels and their summed predicted cost per backend name.
struct BackendShare {
  int kernels = 0;
  int without_cost = 0;     // kernels with no cost, left out of predicted_ms
  double predicted_ms = 0;  // the kernels with a cost
};
std::map<std::string, BackendShare> time_per_backend(const Placement& placement);
// "13 kernels (blas 1, native 12), predicted 0.005 ms a run".
std::string placement_summary(const Placement& placement);
// The placement of body `body` of the node named `node`, or null when that body has none.
const Placement* find_body_placement(const Placement& placement, const std::string& node,
                                     const std::string& body);

std::string placement_to_json(const Placement& placement, const Graph& graph);

// The same kernel: backend and node set (its cost and label aside).
bool same_kernel(const PlacedKernel& a, const PlacedKernel& b);
// The same kernels in the same order: what both run, whatever their predicted figures.
bool same_kernels(const Placement& a, const Placement& b);
// The file's structure without the model (`collage diff` without --model): format, version,
// fingerprint, settings and kernels in file order (node ids >= 0 and ascending, none in two
// kernels, none empty); backends, coverage and pins (which name nodes) are not checked.
// InvalidInput naming the problem. The same reader as placement_from_json.
Placement placement_structure_from_json(const std::string& text);
// Validates against `graph` and `backends`: unknown node ids, fingerprint mismatch,
// overlapping or missing coverage, unknown backend, cyclic kernel order — each an
// InvalidInput error naming the problem.
Placement placement_from_json(const std::string& text, const Graph& graph,
                              const std::vector<const BackendSpec*>& backends);

// Compiles every kernel of the placement into executor steps; a control node with placed
// bodies runs them through their placements' steps (core/runtime/placed_bodies.h).
std::vector<ExecStep> placement_steps(const Graph& graph, const Placement& placement,
                                      const std::vector<const BackendSpec*>& backends,
                                      const CompileOptions& options);

}  // namespace collage
