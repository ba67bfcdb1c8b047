// Placeholder: the xnnpack backend's patterns and kernels are being written.
#include "backends/xnnpack/xnnpack_spec.h"

namespace collage {

const BackendSpec& xnnpack_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "xnnpack";
    s.version = "0";
    s.compile = [](const Graph&, const SubGraph&, const CompileOptions&) -> std::unique_ptr<Kernel> {
      throw Error(ErrorKind::Unsupported, "xnnpack: no kernels yet");
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
