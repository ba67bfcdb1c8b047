// Placeholder: the onednn backend's patterns and kernels are being written.
#include "backends/onednn/onednn_spec.h"

namespace collage {

const BackendSpec& onednn_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn";
    s.version = "0";
    s.compile = [](const Graph&, const SubGraph&, const CompileOptions&) -> std::unique_ptr<Kernel> {
      throw Error(ErrorKind::Unsupported, "onednn: no kernels yet");
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
