#include "backends/onednn_int8/onednn_int8.h"

#include "backends/onednn/onednn_kernels.h"
#include "backends/onednn_int8/int8_matmul.h"

namespace collage {

namespace {

// Activations [.., K] times constant [K, N] weights: the fully connected layers of every
// transformer and classifier head.
bool fully_connected(const Graph& g, const Node& n) {
  if (!input_is_constant(g, n, 1) || g.value(n.inputs[1]).shape.size() != 2 || input_is_constant(g, n, 0))
    return false;
  if (n.op_type == "MatMul") return g.value(n.inputs[0]).shape.size() >= 2;
  return g.value(n.inputs[0]).shape.size() == 2 && n.attr_int("transA", 0) == 0 &&
         input_absent_or_constant(g, n, 2);
}

}  // namespace

const BackendSpec& onednn_int8_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn-int8";
    s.version = onednn::backend_version() + "+int8r1";
    s.precision = Precision::Int8;
    PatternPtr head = op_any({"MatMul", "Gemm"})->where(all_float32())->where(fully_connected);
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
