#include "backends/onednn_int8/onednn_int8.h"

#include "backends/onednn/onednn_fc_chain.h"
#include "backends/onednn/onednn_kernels.h"
#include "backends/onednn_int8/int8_matmul.h"

namespace collage {

const BackendSpec& onednn_int8_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn-int8";
    s.version = onednn::backend_version() + "+int8r2";
    s.precision = Precision::Int8;
    s.patterns = onednn::fully_connected_patterns();
    s.limits.max_nodes = 3;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) {
      return onednn_int8::compile_int8_matmul(g, sub);
    };
    s.set_threads = &onednn::set_threads;
    return s;
  }();
  return spec;
}

}  // namespace collage
