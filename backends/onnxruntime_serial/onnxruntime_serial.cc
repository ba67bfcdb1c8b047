#include "backends/onnxruntime_serial/onnxruntime_serial.h"

#include "backends/onnxruntime/onnxruntime_backend.h"
#include "backends/onnxruntime/ort_kernel.h"
#include "backends/onnxruntime/ort_runtime.h"

namespace collage {

const BackendSpec& onnxruntime_serial_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s = onnxruntime_backend();  // the same ops, groups and version
    s.name = "onnxruntime-serial";
    s.min_threads = 2;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
      return ort::compile_region(g, sub, 1, ort::Pool::Blocking);  // no pool: nothing to wake
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
