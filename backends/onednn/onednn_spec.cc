// The oneDNN backend (libdnnl 2.6, CPU engine): convolution (1-3D, grouped,
// depthwise, dilated), deconvolution, matmul/inner product, pooling, softmax,
// batch and layer normalisation, eltwise and binary ops. Fused groups are a
// head primitive plus post-ops: Conv+Relu, Conv+Add(residual)+Relu,
// MatMul+Add(bias)+GELU (the 5-node erf and 8-9-node tanh forms too), Conv+Sigmoid+Mul (swish), ...
// and the attention core with the layout nodes around it (onednn_attention.h).
#include "backends/onednn/onednn_spec.h"

#include "backends/onednn/onednn_kernels.h"
#include "backends/onednn/onednn_resize.h"
#include "backends/onednn/onednn_rnn.h"
#include "core/backend_api/transformer_fusion.h"

namespace collage {

namespace {

size_t rank_of(const Graph& g, ValueId v) { return g.value(v).shape.size(); }
bool single_output(const Node& n) {
  return n.outputs.size() == 1 || (n.outputs.size() > 1 && n.outputs[1] == kNoValue);
}

bool conv_ok(const Graph& g, const Node& n) {
  size_t r = rank_of(g, n.inputs[0]);
  return r >= 3 && r <= 5 && input_is_constant(g, n, 1) && input_absent_or_constant(g, n, 2);
}
bool matmul_ok(const Graph& g, const Node& n) {
  return rank_of(g, n.inputs[0]) >= 2 && rank_of(g, n.inputs[1]) >= 2;
}
// alpha is folded into a constant operand, beta into the constant C.
bool gemm_ok(const Graph& g, const Node& n) {
  bool some_constant = input_is_constant(g, n, 0) || input_is_constant(g, n, 1);
  return rank_of(g, n.inputs[0]) == 2 && rank_of(g, n.inputs[1]) == 2 && input_absent_or_constant(g, n, 2) &&
         (n.attr_float("alpha", 1.0f) == 1.0f || some_constant);
}
bool pool_ok(const Graph& g, const Node& n) {
  return single_output(n) && n.attr_int("storage_order", 0) == 0 && onednn::pool_supported(g, n);
}
bool norm_ok(const Graph& g, const Node& n) {
  if (!single_output(n)) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (!input_absent_or_constant(g, n, i)) return false;
  if (n.op_type == "LayerNormalization") {
    int64_t axis = n.attr_int("axis", -1);
    return axis == -1 || axis == static_cast<int64_t>(rank_of(g, n.inputs[0])) - 1;
  }
  return rank_of(g, n.inputs[0]) >= 2 && n.attr_int("training_mode", 0) == 0;
}
bool eltwise_ok(const Graph& g, const Node& n) {
  return rank_of(g, n.inputs[0]) <= 6 && onednn::eltwise_supported(g, n);
}
// One operand must have the result's shape (oneDNN broadcasts the other one).
bool binary_ok(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return false;
  const Shape& y = g.value(n.outputs[0]).shape;
  return y.size() <= 6 && (g.value(n.inputs[0]).shape == y || g.value(n.inputs[1]).shape == y);
}
// As a post-op the other operand must come from outside the chain.
bool binary_post_ok(const Graph& g, const Node& n) { return binary_ok(g, n) && n.inputs[0] != n.inputs[1]; }
// Post-ops write into the head's destination: a chain value feeding a binary
// post-op must already have the result's shape.
bool keeps_shape(const Graph& g, const Node& n) {
  const Value& v = g.value(n.outputs[0]);
  for (NodeId c : v.consumers) {
    const Node& b = g.node(c);
    if (onednn::binary_op(b.op_type) && g.value(b.outputs[0]).shape != v.shape) return false;
  }
  return true;
}
bool any_node(const Graph&, const Node&) { return true; }

const std::vector<std::string> kEltwise = {
    "Relu", "LeakyRelu", "Elu",        "Selu",     "Sigmoid", "HardSigmoid", "Tanh", "Exp",  "Log", "Sqrt",
    "Abs",  "Neg",       "Reciprocal", "Softplus", "Round",   "HardSwish",   "Gelu", "Clip", "Pow"};
const std::vector<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Max", "Min"};

// A chain pattern whose root node also satisfies `extra`.
using Chain = std::function<PatternPtr(NodePredicate extra)>;

Chain node(PatternPtr p) {
  return [p](NodePredicate extra) { return p->where(extra); };
}
Chain act(Chain in) {
  return [in](NodePredicate extra) {
    return op_any(kEltwise, {in(any_node)})->where(all_float32())->where(eltwise_ok)->where(extra);
  };
}
Chain bin(Chain in) {
  return [in](NodePredicate extra) {
    return alt({op_any(kBinary, {in(keeps_shape), wildcard()})
                    ->where(all_float32())
                    ->where(binary_post_ok)
                    ->where(extra),
                op_any({"Sub", "Div"}, {wildcard(), in(keeps_shape)})
                    ->where(all_float32())
                    ->where(binary_post_ok)
                    ->where(extra)});
  };
}
// x * Sigmoid(x) -> eltwise swish.
Chain swish(Chain in) {
  return [in](NodePredicate extra) {
    return op("Mul", {op("Sigmoid", {in(any_node)}), wildcard()})
        ->where(all_float32())
        ->where(onednn::block_root)
        ->where(extra);
  };
}
// 0.5 * x * (1 + Erf(x / sqrt(2))) as exported (three groupings of the Muls) -> eltwise gelu_erf;
Chain gelu(Chain in) {
  return [in](NodePredicate extra) {
    PatternPtr x = in(any_node);
    PatternPtr a = op("Add", {op("Erf", {op_any({"Div", "Mul"}, {x, constant()})}), constant()});
    // 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) -> eltwise gelu_tanh; x^3 as
    // Pow(x, 3) or x * (x * x).
    PatternPtr cube = alt({op("Pow", {wildcard(), constant()}), op("Mul", {wildcard(), op("Mul")})});
    PatternPtr t = op(
        "Add",
        {op("Tanh", {op("Mul", {op("Add", {x, op("Mul", {cube, constant()})}), constant()})}), constant()});
    std::vector<PatternPtr> forms;
    for (const PatternPtr& one_plus : {a, t})
      for (PatternPtr f : {op("Mul", {op("Mul", {wildcard(), one_plus}), constant()}),
                           op("Mul", {op("Mul", {wildcard(), constant()}), one_plus}),
                           op("Mul", {wildcard(), op("Mul", {one_plus, constant()})})})
        forms.push_back(f);
    for (PatternPtr& f : forms) f = f->where(all_float32())->where(onednn::block_root)->where(extra);
    return alt(forms);
  };
}

}  // namespace

const BackendSpec& onednn_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn";
    s.version = onednn::backend_version();
    auto f32 = all_float32();
    auto add = [&](const Chain& c) { s.patterns.push_back(c(any_node)); };
    PatternPtr conv = op("Conv")->where(f32)->where(conv_ok);
    std::vector<Chain> heads = {
        node(op_any({"Conv", "ConvTranspose"})->where(f32)->where(conv_ok)),
        // Conv + BatchNormalization: the BN is folded into the weights at compile time.
        node(op("BatchNormalization", {conv, constant(), constant(), constant(), constant()})
                 ->where(f32)
                 ->where(norm_ok)),
        node(op("MatMul")->where(f32)->where(matmul_ok)),
        node(op("Gemm")->where(f32)->where(gemm_ok)),
        node(op_any({"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
                 ->where(f32)
                 ->where(pool_ok)),
    };
    for (const Chain& h : heads)
      for (const Chain& c : {h, act(h), act(act(h)), bin(h), act(bin(h)), bin(bin(h)), act(bin(bin(h))),
                             swish(h), swish(bin(h)), gelu(h), gelu(bin(h))})
        add(c);
    // oneDNN 2.6 batch normalisation takes one (leaky) ReLU post-op; softmax and layer norm none.
    PatternPtr bn = op("BatchNormalization")->where(f32)->where(norm_ok);
    s.patterns.push_back(bn);
    s.patterns.push_back(op_any({"Relu", "LeakyRelu"}, {bn})->where(f32));
    s.patterns.push_back(op_any({"Softmax", "LogSoftmax"})->where(f32));
    s.patterns.push_back(op("LSTM")->where(f32)->where(onednn::lstm_supported));  // onednn_rnn.h
    s.patterns.push_back(op("Resize")->where(onednn::resize_supported));          // sizes may be int64
    // LayerNormalization or the decomposed chain (opset < 17 exports), optionally after
    // a residual Add (run as a binary primitive first: layer norm takes no pre-op).
    s.patterns.push_back(layer_norm_pattern(true));
    // The attention core, alone and with the layout nodes around it (onednn_attention.h).
    s.patterns.push_back(attention_pattern(false));
    s.patterns.push_back(attention_pattern(true));
    // Element-wise and binary primitives, with post-ops of their own.
    Chain elt = node(op_any(kEltwise)->where(f32)->where(eltwise_ok));
    Chain block_in = node(wildcard());
    Chain binary = node(op_any(kBinary)->where(f32)->where(binary_ok));
    for (const Chain& c : {elt, act(elt), bin(elt), swish(block_in), gelu(block_in), binary, act(binary),
                           bin(binary), gelu(binary)})
      add(c);
    s.limits.max_nodes = 8;           // MatMul + Add + the 5-node GELU
    s.limits.max_pattern_nodes = 16;  // attention with a packed projection's Slices: 15
    s.compile = &onednn::compile;
    s.set_threads = &onednn::set_threads;
    return s;
  }();
  return spec;
}

}  // namespace collage
