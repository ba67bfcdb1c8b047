// A backend states what it can run (patterns and pattern rules) and compiles
// candidate sub-graphs into kernels. Backends register by name; adding one is
// a folder under backends/ plus one line in backends/registry.cc.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "core/pattern.h"
#include "core/pattern_rule.h"
#include "core/subgraph.h"

namespace collage {

enum class BackendKind { OpLevel, GraphLevel };

struct CompileOptions {
  int threads = 1;  // applied to every library's thread pool (see README: threads)
};

// Compiles a sub-graph for its exact shapes. The kernel's inputs are
// `subgraph.inputs` in order, its outputs `subgraph.outputs`; constants are read
// from the graph at compile time (weights are reordered once, here).
// Throws Error(Unsupported) when the library cannot build it.
using CompileFn =
    std::function<std::unique_ptr<Kernel>(const Graph&, const SubGraph&, const CompileOptions&)>;

struct BackendSpec {
  std::string name;
  std::string version;
  std::string device = "cpu";
  BackendKind kind = BackendKind::OpLevel;
  std::vector<PatternPtr> patterns;  // candidate labels come from the matched ops ("Conv+Add+Relu")
  std::vector<std::shared_ptr<const PatternRule>> rules;
  GroupLimits limits;
  CompileFn compile;
  // Graph-level backends: may this node be part of a region the backend runs whole?
  std::function<bool(const Graph&, const Node&)> supports_node;
  // Sets the library's thread count (process-wide for OpenMP/OpenBLAS); may be empty.
  std::function<void(int threads)> set_threads;
};

}  // namespace collage
