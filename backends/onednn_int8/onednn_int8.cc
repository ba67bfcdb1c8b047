#include "backends/onednn_int8/onednn_int8.h"

#include "backends/onednn/onednn_fc_chain.h"
#include "backends/onednn/onednn_kernels.h"
#include "backends/onednn_int8/int8_matmul.h"

namespace collage {

const BackendSpec& onednn_int8_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn-int8";
    s.version = onednn::backend_version() + "+int8r1";
    s.precision = Precision::Int8;
    PatternPtr head = op_any({"MatMul", "Gemm"})->where(all_float32())->where(onednn::fully_connected);
    PatternPtr bias = op("Add", {head, constant()});
    for (PatternPtr body : {head, bias}) {
      s.patterns.push_back(body);
      s.patterns.push_back(op("Relu", {body}));
      s.patterns.push_back(op("Add", {body, wildcard()}));  // a residual
    }
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
