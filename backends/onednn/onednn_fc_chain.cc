#include "backends/onednn/onednn_fc_chain.h"

#include <algorithm>

#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_fusion.h"
#include "core/backend_api/int8_weights.h"  // product_weights
#include "core/backend_api/pattern.h"

namespace collage::onednn {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Row-major [K, N] weights of the head, alpha folded in.
Tensor head_weights(const Graph& g, const Node& n, int64_t& k, int64_t& cols, const std::string& who) {
  const Value& b = g.value(n.inputs.at(1));
  if (!b.constant || b.shape.size() != 2)
    throw Error(ErrorKind::Unsupported, who + ": the weights must be a constant 2-D tensor");
  const std::vector<float> dense = product_weights(g, n, k, cols);
  Tensor w(DType::Float32, {k, cols});
  std::copy(dense.begin(), dense.end(), w.data<float>());
  return w;
}

}  // namespace

bool fully_connected(const Graph& g, const Node& n) {
  if (!input_is_constant(g, n, 1) || g.value(n.inputs[1]).shape.size() != 2 || input_is_constant(g, n, 0))
    return false;
  if (n.op_type == "MatMul") return g.value(n.inputs[0]).shape.size() >= 2;
  return g.value(n.inputs[0]).shape.size() == 2 && n.attr_int("transA", 0) == 0 &&
         input_absent_or_constant(g, n, 2);
}

std::vector<PatternPtr> fully_connected_patterns() {
  PatternPtr head = op_any({"MatMul", "Gemm"})->where(all_float32())->where(fully_connected);
  PatternPtr bias = op("Add", {head, constant()});
  std::vector<PatternPtr> out;
  for (PatternPtr body : {head, bias}) {
    out.push_back(body);
    out.push_back(op("Relu", {body}));
    out.push_back(op("Add", {body, wildcard()}));  // a residual
  }
  return out;
}

memory::desc FcChain::out_desc() const { return memory::desc({m, n}, dt::f32, tag::ab); }

void FcChain::bind(KernelInputs inputs, std::unordered_map<int, memory>& args) {
  for (Runtime& r : runtime) {
    r.mem.set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(r.input)]->raw()));
    args[r.arg] = r.mem;
  }
}

FcChain fc_chain(const Graph& g, const SubGraph& sub, const std::string& who, bool leading_factor) {
  auto refuse = [&who](const std::string& why) { throw Error(ErrorKind::Unsupported, who + ": " + why); };
  auto input_index = [&](ValueId v) {
    auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
    if (it == sub.inputs.end()) refuse("'" + g.value(v).name + "' must be a runtime input");
    return static_cast<int>(it - sub.inputs.begin());
  };
  for (NodeId id : sub.node_list)
    for (ValueId v : g.node(id).inputs)
      if (v != kNoValue && g.value(v).dtype != DType::Float32) refuse("non-float32 tensors");
  const Node& n = g.node(sub.node_list.at(0));
  if (n.op_type != "MatMul" && n.op_type != "Gemm") refuse("the head must be a MatMul or Gemm");
  if (n.op_type == "Gemm" && n.attr_int("transA", 0) != 0) refuse("Gemm with transA");
  const Value& a = g.value(n.inputs.at(0));
  if (a.constant || a.shape.size() < 2) refuse("the activations must be a runtime tensor of rank >= 2");
  FcChain c;
  c.weights = head_weights(g, n, c.k, c.n, who);
  if (a.shape.back() != c.k) refuse("the operands' inner dimensions differ");
  c.m = shape_size(a.shape) / c.k;
  c.a_input = input_index(n.inputs[0]);
  c.out_shape = g.value(sub.outputs.at(0)).shape;
  if (shape_size(c.out_shape) != c.m * c.n) refuse("the group must keep the product's shape");

  const memory::desc row({1, c.n}, dt::f32, tag::ab), full = c.out_desc();
  if (leading_factor) {
    const memory::desc scalar({1, 1}, dt::f32, tag::ab);
    c.factor = memory(scalar, cpu());
    *static_cast<float*>(c.factor.get_data_handle()) = 1.0f;
    c.constants.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(c.ops.len()) | DNNL_ARG_SRC_1, c.factor);
    c.ops.append_binary(dnnl::algorithm::binary_mul, scalar);
  }
  auto constant_row = [&](const Tensor& t, float factor) {
    memory m(row, cpu());
    float* p = static_cast<float*>(m.get_data_handle());
    const float* s = t.data<float>();
    for (int64_t j = 0; j < c.n; ++j) p[j] = factor * s[t.size() == 1 ? 0 : j];
    return m;
  };
  if (n.op_type == "Gemm" && n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
    const Value& cv = g.value(n.inputs[2]);
    if (!cv.constant || (cv.constant->size() != c.n && cv.constant->size() != 1))
      refuse("Gemm's C must be [N] or a scalar");
    c.constants.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(c.ops.len()) | DNNL_ARG_SRC_1,
                             constant_row(*cv.constant, n.attr_float("beta", 1.0f)));
    c.ops.append_binary(dnnl::algorithm::binary_add, row);
  }
  ValueId current = n.outputs.at(0);
  for (const Unit& u : units_of(g, sub, 1)) {
    if (!u.binary) {
      if (u.in != current) refuse("an element-wise op off the chain");
      for (const Eltwise& e : u.stages) c.ops.append_eltwise(1.0f, e.alg, e.alpha, e.beta);
      current = u.out;
      continue;
    }
    const Node& b = *u.binary;
    if (b.inputs.size() != 2 || (b.inputs[0] == current) == (b.inputs[1] == current))
      refuse(b.op_type + " must combine the chain with another value");
    if (b.inputs[0] != current && (b.op_type == "Sub" || b.op_type == "Div"))
      refuse(b.op_type + " with the chain as its second operand");
    ValueId other = b.inputs[0] == current ? b.inputs[1] : b.inputs[0];
    const Value& ov = g.value(other);
    const int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(c.ops.len()) | DNNL_ARG_SRC_1;
    const dnnl::algorithm alg = *binary_of(b.op_type);
    if (ov.constant && (ov.constant->size() == c.n || ov.constant->size() == 1) &&
        (ov.shape.empty() || ov.shape.back() == ov.constant->size())) {
      c.constants.emplace_back(arg, constant_row(*ov.constant, 1.0f));
      c.ops.append_binary(alg, row);
    } else if (!ov.constant && ov.shape == c.out_shape) {
      c.runtime.push_back({arg, input_index(other), memory(full, cpu(), DNNL_MEMORY_NONE)});
      c.ops.append_binary(alg, full);
    } else {
      refuse(b.op_type + " operand is neither a per-column constant nor of the output's shape");
    }
    if (g.value(b.outputs.at(0)).shape != c.out_shape) refuse("the chain is broadcast to a larger shape");
    current = b.outputs[0];
  }
  if (sub.outputs.size() != 1 || current != sub.outputs[0])
    refuse("the group must be one chain with one output");
  return c;
}

}  // namespace collage::onednn
