// The XNNPACK backend (operator API, Debian's 2022 snapshot, which has no
// version call, hence the package version): NHWC convolution incl. depthwise
// and fully connected with a fused output clamp (Relu, Clip), 2-D pooling,
// broadcasting Add/Mul (+clamp), and Relu/Clip alone. The NCHW<->NHWC
// conversion is inside each kernel and part of its measured cost.
#include "backends/xnnpack/xnnpack_spec.h"

#include "backends/xnnpack/xnnpack_kernels.h"
#include "core/backend_api/conv_folding.h"

namespace collage {

namespace {

size_t rank0(const Graph& g, const Node& n) { return g.value(n.inputs[0]).shape.size(); }

bool conv_ok(const Graph& g, const Node& n) {
  return rank0(g, n) == 4 && input_is_constant(g, n, 1) && input_absent_or_constant(g, n, 2);
}
bool gemm_ok(const Graph& g, const Node& n) {
  return n.attr_int("transA", 0) == 0 && n.attr_float("alpha", 1.0f) == 1.0f &&
         n.attr_float("beta", 1.0f) == 1.0f && input_is_constant(g, n, 1) &&
         input_absent_or_constant(g, n, 2) &&
         (n.inputs.size() < 3 || n.inputs[2] == kNoValue || g.value(n.inputs[2]).shape.size() <= 1);
}
bool matmul_ok(const Graph& g, const Node& n) {
  return rank0(g, n) >= 2 && input_is_constant(g, n, 1) && g.value(n.inputs[1]).shape.size() == 2;
}
bool bias_ok(const Graph& g, const Node& n) {  // Add of a per-output-channel constant
  for (ValueId v : n.inputs)
    if (g.value(v).constant) return g.value(v).shape.size() <= 1;
  return false;
}
bool pool_ok(const Graph& g, const Node& n) {
  if (rank0(g, n) != 4 || n.outputs.size() != 1 || n.attr_string("auto_pad", "NOTSET") != "NOTSET")
    return false;
  if (n.op_type ==
      "AveragePool") {  // XNNPACK averages without padding semantics to match: claim unpadded only
    for (int64_t p : n.attr_ints("pads", {0, 0, 0, 0}))
      if (p != 0) return false;
    return n.attr_int("ceil_mode", 0) == 0;
  }
  return n.attr_int("storage_order", 0) == 0;
}
bool runtime_binary(const Graph& g, const Node& n) {
  return n.inputs.size() == 2 && !g.value(n.inputs[0]).constant && !g.value(n.inputs[1]).constant;
}
bool clip_const(const Graph& g, const Node& n) {
  return input_absent_or_constant(g, n, 1) && input_absent_or_constant(g, n, 2);
}

}  // namespace

const BackendSpec& xnnpack_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "xnnpack";
    s.version = "0.0~git20220216";
    auto f32 = all_float32();
    auto clamp = [&](PatternPtr in) {
      return alt({op("Relu", {in})->where(f32), op("Clip", {in})->where(f32)->where(clip_const)});
    };
    PatternPtr conv = op("Conv")->where(f32)->where(conv_ok);
    PatternPtr gemm = op("Gemm")->where(f32)->where(gemm_ok);
    PatternPtr matmul = op("MatMul")->where(f32)->where(matmul_ok);
    PatternPtr matmul_bias = op("Add", {matmul, constant()})->where(bias_ok);
    PatternPtr pool = op_any({"MaxPool", "AveragePool", "GlobalAveragePool"})->where(f32)->where(pool_ok);
    PatternPtr binary = op_any({"Add", "Mul"})->where(f32)->where(runtime_binary);
    PatternPtr conv_bn = op("BatchNormalization", {conv, constant(), constant(), constant(), constant()})
                             ->where(foldable_batch_norm);  // folded
    for (PatternPtr head : {conv, conv_bn, gemm, matmul, matmul_bias, pool, binary}) {
      s.patterns.push_back(head);
      s.patterns.push_back(clamp(head));
    }
    s.patterns.push_back(clamp(wildcard()));
    s.limits.max_nodes = 3;
    s.compile = &xnnpack::compile;
    s.set_threads = &xnnpack::set_threads;
    return s;
  }();
  return spec;
}

}  // namespace collage
