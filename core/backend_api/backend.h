// A backend states what it can run (patterns and pattern rules) and compiles
// candidate sub-graphs into kernels. Backends register by name; adding one is
// a folder under backends/ plus one collage_backend() line in backends/CMakeLists.txt.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend_api/pattern.h"
#include "core/backend_api/pattern_rule.h"
#include "core/ir/error.h"
#include "core/ir/kernel.h"
#include "core/ir/subgraph.h"

namespace collage {

enum class BackendKind { OpLevel, GraphLevel };

// The arithmetic a backend's kernels compute in. Reduced-precision backends take part in a
// search only under the user's accuracy budget (core/ir/accuracy.h).
enum class Precision { Float32, Int8, BFloat16 };
inline const char* precision_name(Precision p) {
  return p == Precision::Int8 ? "int8" : p == Precision::BFloat16 ? "bf16" : "fp32";
}

struct CompileOptions {
  int threads = 1;  // applied to every library's thread pool (docs/backends.md: threads)
  // The kernel is all a run does (a placement of one kernel, not a body's): no other pool's
  // kernels run between its runs, so its own pool may stay awake from one run to the next.
  bool sole_kernel = false;
  // Timed in turns with other placements in one process (contests, fitness): no kernel is a sole
  // kernel, for a pool that stays awake after its run would take the cores of the next placement's
  // turn. A whole-graph ONNX Runtime region's spinning workers made oneDNN's whole graph run 2x
  // slower for 20-30 ms after each of its turns (RegNetY-800MF, 2 threads, AVX2 kind).
  bool beside_others = false;
};

// The options for one placement's kernels: `outer` (a whole run's placement, not a control
// node's body, which runs among the outer graph's kernels), of `kernels` kernels and with or
// without placed bodies. Shared by the in-process executor and the artifact loader.
inline CompileOptions placement_options(CompileOptions options, bool outer, size_t kernels, bool has_bodies) {
  options.sole_kernel = outer && kernels == 1 && !has_bodies && !options.beside_others;
  return options;
}

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
  Precision precision = Precision::Float32;
  std::vector<PatternPtr> patterns;  // candidate labels come from the matched ops ("Conv+Add+Relu")
  std::vector<std::shared_ptr<const PatternRule>> rules;
  GroupLimits limits;
  CompileFn compile;
  // Whether its single-node kernels take shapes known only at run time (values the import left
  // dynamic, ImportOptions::dynamic_shapes). A node touching such a value is offered to these
  // backends only, and alone.
  bool takes_dynamic_shapes = false;
  // The fewest threads a placement must have for this backend to take part: 2 for a variant
  // that runs its kernels on the calling thread alone, which at 1 thread would repeat its
  // library's candidates (backends_for_threads()).
  int min_threads = 1;
  // Graph-level backends: may this node be part of a region the backend runs whole?
  std::function<bool(const Graph&, const Node&)> supports_node;
  // Sets the library's thread count (process-wide for OpenMP/OpenBLAS); may be empty.
  std::function<void(int threads)> set_threads;
  // Why this CPU cannot run the backend's kernels ("" or empty: it can). A backend that needs
  // an instruction set the CPU lacks (bf16 dot products, ...) is unavailable with this reason:
  // listed as such, left out of every default selection and of candidate enumeration, and
  // refused with the reason when named explicitly. Asked each time (oneDNN's view of the CPU
  // follows ONEDNN_MAX_CPU_ISA), so keep it cheap.
  std::function<std::string()> unavailable;
};

// "" when the CPU can run `backend`, else why not (BackendSpec::unavailable).
inline std::string unavailable_reason(const BackendSpec& backend) {
  return backend.unavailable ? backend.unavailable() : std::string();
}

// The one place a thread count reaches the libraries: every backend's set_threads.
// OpenMP's count is a setting of the calling thread, so call it on the thread that
// compiles and runs (a GUI's worker, not the GUI thread). set_backend_threads()
// (backends/registry.h) applies it to every backend compiled in.
inline void apply_threads(const std::vector<const BackendSpec*>& backends, int threads) {
  if (threads < 1) throw Error(ErrorKind::InvalidInput, "thread count must be at least 1");
  for (const BackendSpec* b : backends)
    if (b->set_threads) b->set_threads(threads);
}

// The backends among `backends` that take part in a search of `threads` threads (min_threads).
inline std::vector<const BackendSpec*> backends_for_threads(const std::vector<const BackendSpec*>& backends,
                                                            int threads) {
  std::vector<const BackendSpec*> out;
  for (const BackendSpec* b : backends)
    if (threads >= b->min_threads) out.push_back(b);
  return out;
}

}  // namespace collage
