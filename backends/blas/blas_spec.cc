// The OpenBLAS backend: GEMM-shaped work. Gemm and MatMul run as cblas_sgemm,
// 1-D/2-D convolutions as im2col + sgemm (1x1 stride-1 convolutions skip
// im2col), 2-D ConvTranspose as sgemm + col2im, each optionally followed by an element-wise epilogue fused
// into the same pass over the output: bias/residual Add, then one activation. A Gemm or MatMul
// whose rows the run decides (a detector's proposals) runs alone, against a constant weight.
#include "backends/blas/blas_spec.h"

#include "backends/blas/blas_kernels.h"
#include "core/backend_api/conv_folding.h"

namespace collage {

namespace {

// Conv: 1-D/2-D, constant weights (and bias), explicit pads.
bool conv_ok(const Graph& g, const Node& n) {
  size_t rank = g.value(n.inputs[0]).shape.size();
  return (rank == 3 || rank == 4) && input_is_constant(g, n, 1) && input_absent_or_constant(g, n, 2) &&
         n.attr_string("auto_pad", "NOTSET") == "NOTSET";
}

// ConvTranspose: 2-D, constant weights (and bias), explicit pads (output_padding is in the output shape).
bool conv_transpose_ok(const Graph& g, const Node& n) {
  return g.value(n.inputs[0]).shape.size() == 4 && input_is_constant(g, n, 1) &&
         input_absent_or_constant(g, n, 2) && n.attr_string("auto_pad", "NOTSET") == "NOTSET" &&
         !n.has_attr("output_shape");
}

// Gemm with constant B and C: the usual fully connected layer.
bool gemm_ok(const Graph& g, const Node& n) {
  return input_is_constant(g, n, 1) && input_absent_or_constant(g, n, 2);
}

// MatMul of rank >= 2 operands where each side is either batched like the output or not at all;
// with shapes the run decides, a constant matrix as B.
bool matmul_ok(const Graph& g, const Node& n) {
  if (!g.value(n.inputs[0]).shape_known || !g.value(n.outputs[0]).shape_known)
    return input_is_constant(g, n, 1) && g.value(n.inputs[1]).shape.size() == 2;
  const Shape& a = g.value(n.inputs[0]).shape;
  const Shape& b = g.value(n.inputs[1]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  if (a.size() < 2 || b.size() < 2) return false;
  auto batch = [](const Shape& s) { return shape_size(s) / (s[s.size() - 1] * s[s.size() - 2]); };
  int64_t out_batch = batch(y);
  return (batch(a) == out_batch || batch(a) == 1) && (batch(b) == out_batch || batch(b) == 1) &&
         (a.size() == y.size() || batch(a) == 1) && (b.size() == y.size() || batch(b) == 1);
}

bool clip_const(const Graph& g, const Node& n) {
  return input_absent_or_constant(g, n, 1) && input_absent_or_constant(g, n, 2);
}

}  // namespace

const BackendSpec& blas_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "blas";
    s.version = blas::library_version();
    auto f32 = all_float32();
    PatternPtr conv = op("Conv")->where(f32)->where(conv_ok);
    PatternPtr gemm = op("Gemm")->where(f32)->where(gemm_ok);
    PatternPtr matmul = op("MatMul")->where(f32)->where(matmul_ok);
    PatternPtr matmul_bias = op("Add", {matmul, constant()});
    PatternPtr conv_bn = op("BatchNormalization", {conv, constant(), constant(), constant(), constant()})
                             ->where(foldable_batch_norm);  // folded
    PatternPtr deconv = op("ConvTranspose")->where(f32)->where(conv_transpose_ok);
    PatternPtr deconv_bn = op("BatchNormalization", {deconv, constant(), constant(), constant(), constant()})
                               ->where(foldable_batch_norm);  // folded
    for (PatternPtr head : {conv, conv_bn, deconv, deconv_bn, gemm, matmul, matmul_bias}) {
      PatternPtr residual = op("Add", {head, wildcard()});  // residual or bias operand
      for (PatternPtr body : {head, residual}) {
        s.patterns.push_back(body);
        s.patterns.push_back(op_any({"Relu", "Sigmoid", "Tanh", "LeakyRelu"}, {body}));
        s.patterns.push_back(op("Clip", {body})->where(clip_const));
      }
    }
    s.limits.max_nodes = 4;
    s.compile = &blas::compile;
    s.takes_dynamic_shapes = true;  // Gemm and MatMul only (the kernel refuses the rest)
    s.set_threads = &blas::set_threads;
    return s;
  }();
  return spec;
}

}  // namespace collage
