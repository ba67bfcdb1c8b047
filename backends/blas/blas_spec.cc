// Placeholder: the blas backend's patterns and kernels are being written.
#include "backends/blas/blas_spec.h"

namespace collage {

const BackendSpec& blas_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "blas";
    s.version = "0";
    s.compile = [](const Graph&, const SubGraph&, const CompileOptions&) -> std::unique_ptr<Kernel> {
      throw Error(ErrorKind::Unsupported, "blas: no kernels yet");
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
