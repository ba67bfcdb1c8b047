#include "backends/onnxruntime_int8_region/onnxruntime_int8_region.h"

#include "backends/onnxruntime/onnxruntime_backend.h"
#include "backends/onnxruntime/ort_kernel.h"
#include "backends/onnxruntime/ort_runtime.h"

namespace collage {

const BackendSpec& onnxruntime_int8_region_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onnxruntime-int8-region";
    // The weights' form, as onnxruntime-int8; "r2" as onnxruntime-region's.
    s.version = onnxruntime_backend().version + "+int8r1+r2";
    s.kind = BackendKind::GraphLevel;
    s.precision = Precision::Int8;
    s.supports_node = [](const Graph& g, const Node& n) { return ort::runtime() && ort::offered(g, n); };
    s.limits.max_nodes = 1 << 20;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
      return ort::compile_region(g, sub, o.threads, ort::spinning(o.sole_kernel),
                                 ort::Int8::EveryWeightsMatMul);
    };
    s.unavailable = [] { return ort::unavailable_reason(); };
    return s;
  }();
  return spec;
}

}  // namespace collage
