#include "backends/onednn/onednn_fusion.h"

#include <cfloat>
#include <cmath>
#include <map>
#include <set>

#include "core/backend_api/transformer_fusion.h"
#include "core/ir/error.h"

namespace collage::onednn {

namespace {

using A = dnnl::algorithm;

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "onednn: " + why); }

// The single float value of constant `v`, or NaN.
float scalar_constant(const Graph& g, ValueId v) {
  if (v == kNoValue) return NAN;
  const Value& val = g.value(v);
  if (!val.constant || val.constant->size() != 1) return NAN;
  return static_cast<float>(val.constant->to_double_vector()[0]);
}

// Only constants that round to the exact float the library uses: anything else
// would make the fused result differ from the graph's.
bool is_scalar(const Graph& g, ValueId v, float want) {
  float got = scalar_constant(g, v);
  return std::fabs(got - want) <=
         1e-3f * std::fabs(want);  // a float16 model's 0.5, sqrt(2)... (2^-11 relative) still name the op
}

// The producer of `v` if it is an `op` node with `arity` inputs.
const Node* producer(const Graph& g, ValueId v, const char* op, size_t arity = 2) {
  if (v == kNoValue) return nullptr;
  NodeId p = g.value(v).producer;
  if (p == kNoNode || g.node(p).op_type != op || g.node(p).inputs.size() != arity) return nullptr;
  return &g.node(p);
}

// The node's operands as (a, b) and (b, a) for commutative ops.
std::vector<std::pair<ValueId, ValueId>> orders(const Node& n) {
  std::vector<std::pair<ValueId, ValueId>> out = {{n.inputs[0], n.inputs[1]}};
  if (commutative(n.op_type)) out.emplace_back(n.inputs[1], n.inputs[0]);
  return out;
}

// `a` = Erf(x / sqrt(2)) + 1 (or Erf(x * 1/sqrt(2)) + 1): returns x and appends the three nodes.
ValueId erf_plus_one(const Graph& g, ValueId a, std::vector<NodeId>& nodes) {
  const Node* add = producer(g, a, "Add");
  if (!add) return kNoValue;
  for (auto [e, one] : orders(*add)) {
    const Node* erf = producer(g, e, "Erf", 1);
    if (!erf || !is_scalar(g, one, 1.0f)) continue;
    NodeId dp = g.value(erf->inputs[0]).producer;
    if (dp == kNoNode) continue;
    const Node& d = g.node(dp);
    if (d.inputs.size() != 2) continue;
    bool ok = (d.op_type == "Div" && is_scalar(g, d.inputs[1], static_cast<float>(M_SQRT2)));
    ValueId x = d.inputs[0];
    if (!ok && d.op_type == "Mul")
      for (auto [xx, c] : orders(d))
        if (is_scalar(g, c, static_cast<float>(M_SQRT1_2))) ok = true, x = xx;
    if (!ok) continue;
    nodes.insert(nodes.end(), {dp, g.value(e).producer, g.value(a).producer});
    return x;
  }
  return kNoValue;
}

// 0.5 * x * (1 + erf(x / sqrt(2))) in any of the three Mul groupings exporters emit.
std::optional<Block> gelu_erf_at(const Graph& g, NodeId root) {
  const Node& r = g.node(root);
  if (r.op_type != "Mul" || r.inputs.size() != 2) return std::nullopt;
  for (auto [p, q] : orders(r)) {
    const Node* inner = producer(g, p, "Mul");
    if (!inner) continue;
    NodeId inner_id = g.value(p).producer;
    for (auto [u, v] : orders(*inner)) {
      // (x * A) * 0.5, (x * 0.5) * A and x * (A * 0.5), with A = 1 + erf(x / sqrt(2)).
      struct Form {
        ValueId x, a, half;
      };
      for (Form f : {Form{u, v, q}, Form{u, q, v}, Form{q, u, v}}) {
        std::vector<NodeId> nodes;
        if (!is_scalar(g, f.half, 0.5f) || erf_plus_one(g, f.a, nodes) != f.x) continue;
        nodes.push_back(inner_id);
        nodes.push_back(root);
        return Block{{A::eltwise_gelu_erf}, f.x, nodes};
      }
    }
  }
  return std::nullopt;
}

// x * Sigmoid(x).
std::optional<Block> swish_at(const Graph& g, NodeId root) {
  const Node& r = g.node(root);
  if (r.op_type != "Mul" || r.inputs.size() != 2) return std::nullopt;
  for (auto [x, s] : orders(r)) {
    const Node* sig = producer(g, s, "Sigmoid", 1);
    if (sig && sig->inputs[0] == x) return Block{{A::eltwise_swish, 1.0f}, x, {g.value(s).producer, root}};
  }
  return std::nullopt;
}

}  // namespace

bool commutative(const std::string& op) { return op == "Add" || op == "Mul" || op == "Max" || op == "Min"; }

std::optional<std::vector<Eltwise>> eltwise_of(const Graph& g, const Node& n) {
  const std::string& op = n.op_type;
  using V = std::vector<Eltwise>;
  if (n.inputs.empty() || n.outputs.size() != 1) return std::nullopt;
  if (op == "Relu") return V{{A::eltwise_relu}};
  if (op == "LeakyRelu") return V{{A::eltwise_relu, n.attr_float("alpha", 0.01f)}};
  if (op == "Elu") return V{{A::eltwise_elu, n.attr_float("alpha", 1.0f)}};
  if (op == "Selu")
    return V{{A::eltwise_elu, n.attr_float("alpha", 1.67326319f)},
             {A::eltwise_linear, n.attr_float("gamma", 1.05070102f)}};
  if (op == "Sigmoid") return V{{A::eltwise_logistic}};
  if (op == "HardSigmoid")  // no hardsigmoid in oneDNN 2.6: clip(alpha * x + beta, 0, 1)
    return V{{A::eltwise_linear, n.attr_float("alpha", 0.2f), n.attr_float("beta", 0.5f)},
             {A::eltwise_clip_v2, 0.0f, 1.0f}};
  if (op == "Tanh") return V{{A::eltwise_tanh}};
  if (op == "Exp") return V{{A::eltwise_exp}};
  if (op == "Log") return V{{A::eltwise_log}};
  if (op == "Sqrt") return V{{A::eltwise_sqrt}};
  if (op == "Abs") return V{{A::eltwise_abs}};
  if (op == "Neg") return V{{A::eltwise_linear, -1.0f, 0.0f}};
  if (op == "Reciprocal") return V{{A::eltwise_pow, 1.0f, -1.0f}};
  if (op == "Softplus") return V{{A::eltwise_soft_relu}};
  if (op == "Round") return V{{A::eltwise_round}};  // round half to even, as ONNX
  if (op == "HardSwish") return V{{A::eltwise_hardswish}};
  if (op == "Gelu")
    return V{{n.attr_string("approximate", "none") == "tanh" ? A::eltwise_gelu_tanh : A::eltwise_gelu_erf}};
  if (op == "Pow") {
    float e = n.inputs.size() == 2 ? scalar_constant(g, n.inputs[1]) : NAN;
    if (std::isnan(e)) return std::nullopt;
    return V{{A::eltwise_pow, 1.0f, e}};
  }
  if (op == "Clip") {
    auto bound = [&](size_t i, float fallback) {
      return i >= n.inputs.size() || n.inputs[i] == kNoValue ? fallback : scalar_constant(g, n.inputs[i]);
    };
    float lo = bound(1, -FLT_MAX), hi = bound(2, FLT_MAX);
    if (std::isnan(lo) || std::isnan(hi)) return std::nullopt;
    return V{{A::eltwise_clip_v2, lo, hi}};
  }
  return std::nullopt;
}

std::optional<dnnl::algorithm> binary_of(const std::string& op) {
  if (op == "Add") return A::binary_add;
  if (op == "Sub") return A::binary_sub;
  if (op == "Mul") return A::binary_mul;
  if (op == "Div") return A::binary_div;
  if (op == "Max") return A::binary_max;
  if (op == "Min") return A::binary_min;
  return std::nullopt;
}

std::optional<Block> block_at(const Graph& g, NodeId root) {
  if (auto b = gelu_erf_at(g, root)) return b;
  if (auto t = gelu_at(g, root); t && t->tanh) return Block{{A::eltwise_gelu_tanh}, t->x, t->nodes};
  return swish_at(g, root);
}

std::vector<Unit> units_of(const Graph& g, const SubGraph& sub, size_t first) {
  std::set<NodeId> rest(sub.node_list.begin() + static_cast<std::ptrdiff_t>(first), sub.node_list.end());
  // Blocks first: their inner nodes (an Erf, a Div by sqrt(2)) are no post-ops on their own.
  std::map<NodeId, Block> blocks;
  std::set<NodeId> inner;
  for (NodeId id : rest) {
    auto b = block_at(g, id);
    if (!b) continue;
    bool all_in = true;
    for (NodeId m : b->nodes) all_in = all_in && rest.count(m);
    if (!all_in) continue;
    for (NodeId m : b->nodes) inner.insert(m);
    blocks[id] = *b;
  }
  // A block inside a larger block (x*Sigmoid(x) cannot be, but be safe): keep the outer one.
  std::vector<Unit> units;
  for (NodeId id : rest) {
    const Node& n = g.node(id);
    if (auto it = blocks.find(id); it != blocks.end()) {
      units.push_back({{it->second.e}, nullptr, it->second.x, n.outputs[0]});
    } else if (inner.count(id)) {
      continue;
    } else if (auto e = eltwise_of(g, n)) {
      units.push_back({*e, nullptr, n.inputs[0], n.outputs[0]});
    } else if (binary_of(n.op_type) && n.inputs.size() == 2) {
      units.push_back({{}, &n, kNoValue, n.outputs[0]});
    } else {
      refuse(n.op_type + " cannot be fused");
    }
  }
  return units;
}

const Tensor* bias_row(const Graph& g, const Node& add, ValueId product, int64_t cols, size_t rank) {
  if (add.op_type != "Add" || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) return nullptr;
  const Value& row = g.value(add.inputs[0] == product ? add.inputs[1] : add.inputs[0]);
  if (!row.constant || row.constant->dtype() != DType::Float32 || row.shape.empty() ||
      row.shape.back() != cols || shape_size(row.shape) != cols || row.shape.size() > rank)
    return nullptr;
  return &*row.constant;
}

}  // namespace collage::onednn
