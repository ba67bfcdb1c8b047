#include "backends/onnxruntime_int8/onnxruntime_int8.h"

#include "backends/onnxruntime/onnxruntime_backend.h"
#include "backends/onnxruntime/ort_kernel.h"
#include "backends/onnxruntime/ort_runtime.h"
#include "core/backend_api/int8_weights.h"

namespace collage {

namespace {

bool int8_matmul(const Graph& g, const Node& n) {
  return ort::runtime() && int8_weights_matmul(g, n) && ort::offered(g, n);
}

std::vector<PatternPtr> patterns() {
  PatternPtr head = op("MatMul")->where(all_float32())->where(int8_matmul);
  PatternPtr bias = op("Add", {head, constant()})->where(all_float32());
  std::vector<PatternPtr> out;
  for (PatternPtr body : {head, bias}) {
    out.push_back(body);
    out.push_back(op("Relu", {body})->where(all_float32()));
    out.push_back(op("Add", {body, wildcard()})->where(all_float32()));  // a residual
  }
  return out;
}

}  // namespace

const BackendSpec& onnxruntime_int8_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onnxruntime-int8";
    s.version = onnxruntime_backend().version + "+int8r2";
    s.precision = Precision::Int8;
    s.patterns = patterns();
    s.limits.max_nodes = 3;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
      return ort::compile_region(g, sub, o.threads, ort::Pool::RowBlocks, ort::Int8::Head);
    };
    s.unavailable = [] { return ort::unavailable_reason(); };
    return s;
  }();
  return spec;
}

}  // namespace collage
