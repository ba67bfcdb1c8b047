#include "backends/onnxruntime_region/onnxruntime_region.h"

#include "backends/onnxruntime/onnxruntime_backend.h"
#include "backends/onnxruntime/ort_kernel.h"
#include "backends/onnxruntime/ort_runtime.h"

namespace collage {

const BackendSpec& onnxruntime_region_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onnxruntime-region";
    // "+r2": OpenMP's idle workers are stopped before a region runs at 2+ threads (ort_kernel.cc);
    // fitness measured before that is not reused.
    s.version = onnxruntime_backend().version + "+r2";
    s.kind = BackendKind::GraphLevel;
    s.supports_node = [](const Graph& g, const Node& n) { return ort::runtime() && ort::offered(g, n); };
    s.limits.max_nodes = 1 << 20;  // a region may be the whole graph
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
      return ort::compile_region(g, sub, o.threads,
                                 ort::spinning(o.sole_kernel));  // long stretches of ORT's own ops
    };
    s.unavailable = [] { return ort::unavailable_reason(); };
    return s;
  }();
  return spec;
}

}  // namespace collage
