// The oneDNN backend (libdnnl 2.6, CPU engine): convolution (1-3D, grouped,
// depthwise, dilated), deconvolution, matmul/inner product, pooling, softmax,
// batch and layer normalisation, eltwise and binary ops. Fused groups are a
// head primitive plus post-ops: Conv+Relu, Conv+Add(residual)+Relu,
// MatMul+Add(bias)+Gelu, Gemm+Clip, MaxPool+Relu, ...
#include "backends/onednn/onednn_spec.h"

#include "backends/onednn/onednn_kernels.h"

namespace collage {

namespace {

size_t rank_of(const Graph& g, ValueId v) { return g.value(v).shape.size(); }

bool conv_ok(const Graph& g, const Node& n) {
  size_t r = rank_of(g, n.inputs[0]);
  return r >= 3 && r <= 5 && input_is_constant(g, n, 1) && input_absent_or_constant(g, n, 2);
}
bool matmul_ok(const Graph& g, const Node& n) {
  return rank_of(g, n.inputs[0]) >= 2 && rank_of(g, n.inputs[1]) >= 2 &&
         rank_of(g, n.inputs[0]) == rank_of(g, n.outputs[0]);
}
bool gemm_ok(const Graph& g, const Node& n) {
  return n.attr_int("transA", 0) == 0 && n.attr_float("alpha", 1.0f) == 1.0f && n.attr_float("beta", 1.0f) == 1.0f &&
         input_is_constant(g, n, 1) && input_absent_or_constant(g, n, 2);
}
bool pool_ok(const Graph& g, const Node& n) {
  size_t r = rank_of(g, n.inputs[0]);
  // oneDNN 2.6 rejects average pooling whose ceil-mode windows overhang the padding.
  if (n.op_type == "AveragePool" && n.attr_int("ceil_mode", 0) != 0) return false;
  return r >= 3 && r <= 5 && n.outputs.size() == 1 && n.attr_int("storage_order", 0) == 0;
}
bool norm_ok(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (!input_absent_or_constant(g, n, i)) return false;
  if (n.op_type == "LayerNormalization") {
    int64_t axis = n.attr_int("axis", -1);
    return axis == -1 || axis == static_cast<int64_t>(rank_of(g, n.inputs[0])) - 1;
  }
  return rank_of(g, n.inputs[0]) >= 2;
}
bool eltwise_ok(const Graph& g, const Node& n) { return onednn::eltwise_supported(g, n); }
// The first operand (or the second, for commutative ops) must carry the output's shape.
bool binary_ok(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return false;
  const Shape& y = g.value(n.outputs[0]).shape;
  return g.value(n.inputs[0]).shape == y || (n.op_type != "Sub" && n.op_type != "Div" && g.value(n.inputs[1]).shape == y);
}

const std::vector<std::string> kEltwise = {"Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh", "Exp", "Log",
                                           "Sqrt", "Abs", "Neg", "HardSwish", "Gelu", "Clip"};
const std::vector<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Max", "Min"};

}  // namespace

const BackendSpec& onednn_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn";
    s.version = onednn::library_version();
    auto f32 = all_float32();
    PatternPtr eltwise = op_any(kEltwise)->where(f32)->where(eltwise_ok);
    PatternPtr binary = op_any(kBinary)->where(f32)->where(binary_ok);
    std::vector<PatternPtr> heads = {
        op_any({"Conv", "ConvTranspose"})->where(f32)->where(conv_ok),
        op("MatMul")->where(f32)->where(matmul_ok),
        op("Gemm")->where(f32)->where(gemm_ok),
        op_any({"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})->where(f32)->where(pool_ok),
    };
    auto act = [&](PatternPtr in) { return op_any(kEltwise, {in})->where(f32)->where(eltwise_ok); };
    auto bin = [&](PatternPtr in) { return op_any(kBinary, {in, wildcard()})->where(f32)->where(binary_ok); };
    // Conv + BatchNormalization: the BN is folded into the weights at compile time.
    PatternPtr conv = op("Conv")->where(f32)->where(conv_ok);
    heads.push_back(op("BatchNormalization", {conv, constant(), constant(), constant(), constant()})->where(f32)->where(norm_ok));
    for (const PatternPtr& h : heads) {
      for (PatternPtr p : {h, act(h), bin(h), act(bin(h)), bin(bin(h)), act(bin(bin(h)))}) s.patterns.push_back(p);
    }
    s.patterns.push_back(op_any({"Softmax", "LogSoftmax"})->where(f32));
    s.patterns.push_back(op_any({"BatchNormalization", "LayerNormalization"})->where(f32)->where(norm_ok));
    s.patterns.push_back(eltwise);
    s.patterns.push_back(binary);
    s.patterns.push_back(act(binary));
    s.limits.max_nodes = 4;
    s.compile = &onednn::compile;
    s.set_threads = &onednn::set_threads;
    return s;
  }();
  return spec;
}

}  // namespace collage
