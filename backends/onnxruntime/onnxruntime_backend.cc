#include "backends/onnxruntime/onnxruntime_backend.h"

#include "backends/onnxruntime/ort_kernel.h"
#include "backends/onnxruntime/ort_runtime.h"

namespace collage {

const BackendSpec& onnxruntime_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onnxruntime";
    const ort::Runtime* r = ort::runtime();
    // The cost key: ORT's version, and whether its sessions share one allocator (ort_allocator.h),
    // which moves a kernel's time by a few percent.
    s.version = "3 (ONNX Runtime " + (r ? r->version : std::string("not loaded")) +
                (r && r->env_allocator ? ", one allocator" : "") + ")";
    s.rules.push_back(std::make_shared<TvmStyleRule>(
        [](const Graph& g, const Node& n) { return ort::runtime() && ort::offered(g, n); }));
    s.limits.max_nodes = 8;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
      return ort::compile_region(g, sub, o.threads, ort::Pool::RowBlocks);  // OpenMP kernels run beside it
    };
    s.unavailable = [] { return ort::unavailable_reason(); };
    return s;
  }();
  return spec;
}

}  // namespace collage
