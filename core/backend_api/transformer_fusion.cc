#include "core/backend_api/transformer_fusion.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace collage {

namespace {

// The node producing `v` if it has op type `op` (and `arity` inputs when given).
const Node* producer(const Graph& g, ValueId v, const char* op, size_t arity = 0) {
  if (v == kNoValue) return nullptr;
  NodeId p = g.value(v).producer;
  if (p == kNoNode || g.node(p).op_type != op) return nullptr;
  if (arity && g.node(p).inputs.size() != arity) return nullptr;
  return &g.node(p);
}
NodeId producer_id(const Graph& g, ValueId v) { return v == kNoValue ? kNoNode : g.value(v).producer; }

std::optional<float> scalar_of(const Graph& g, ValueId v) {
  if (v == kNoValue) return std::nullopt;
  const Value& val = g.value(v);
  if (!val.constant || val.constant->size() != 1 || val.constant->dtype() != DType::Float32)
    return std::nullopt;
  return static_cast<float>(val.constant->to_double_vector()[0]);
}
bool is_scalar(const Graph& g, ValueId v, float want) {
  auto got = scalar_of(g, v);
  return got && std::fabs(*got - want) <= 1e-3f * std::fabs(want);  // float16-rounded constants (2^-11) too
}

bool f32(const Graph& g, ValueId v) { return v != kNoValue && g.value(v).dtype == DType::Float32; }

// Operand orders of a two-input node: (a, b), and (b, a) for Add/Mul.
std::vector<std::pair<ValueId, ValueId>> orders(const Node& n) {
  if (n.inputs.size() != 2) return {};
  std::vector<std::pair<ValueId, ValueId>> out = {{n.inputs[0], n.inputs[1]}};
  if (n.op_type == "Add" || n.op_type == "Mul") out.emplace_back(n.inputs[1], n.inputs[0]);
  return out;
}

// The only reader of `v` (which is no graph output), or kNoNode.
NodeId sole_consumer(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.is_graph_output || val.consumers.size() != 1) return kNoNode;
  return val.consumers[0];
}

// ReduceMean over exactly the last axis, keeping it (axes as attribute before opset 18, else input).
bool mean_over_last(const Graph& g, const Node* n) {
  if (!n || n->inputs.empty() || n->attr_int("keepdims", 1) == 0 || !f32(g, n->inputs[0])) return false;
  std::vector<int64_t> axes = n->attr_ints("axes");
  if (!n->has_attr("axes")) {
    if (n->inputs.size() < 2 || n->inputs[1] == kNoValue || !g.value(n->inputs[1]).constant) return false;
    axes = g.value(n->inputs[1]).constant->to_int64_vector();
  }
  auto rank = static_cast<int64_t>(g.value(n->inputs[0]).shape.size());
  return axes.size() == 1 && rank >= 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

// A constant that broadcasts along the last axis only (shape [D], [1..1, D] or a scalar).
bool row_constant(const Graph& g, ValueId v, int64_t d) {
  if (v == kNoValue || !g.value(v).constant || !f32(g, v)) return false;
  const Shape& s = g.value(v).shape;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] != 1) return false;
  return s.empty() || s.back() == d || s.back() == 1;
}

// Add(a, b) with both operands of `shape`: a residual (or any full-shape sum).
bool full_add(const Graph& g, const Node* add, const Shape& shape) {
  return add && add->inputs.size() == 2 && f32(g, add->inputs[0]) && f32(g, add->inputs[1]) &&
         g.value(add->inputs[0]).shape == shape && g.value(add->inputs[1]).shape == shape;
}

// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), ending at a Div.
std::optional<LayerNormBlock> ln_core(const Graph& g, const Node& div) {
  if (div.op_type != "Div" || div.inputs.size() != 2) return std::nullopt;
  const Node* sub = producer(g, div.inputs[0], "Sub", 2);
  if (!sub) return std::nullopt;
  ValueId x = sub->inputs[0];
  const Node* m1 = producer(g, sub->inputs[1], "ReduceMean");
  if (!mean_over_last(g, m1) || m1->inputs[0] != x) return std::nullopt;
  const Node* sqrt = producer(g, div.inputs[1], "Sqrt", 1);
  const Node* add = sqrt ? producer(g, sqrt->inputs[0], "Add", 2) : nullptr;
  if (!add) return std::nullopt;
  for (auto [var, eps] : orders(*add)) {
    auto e = scalar_of(g, eps);
    const Node* m2 = producer(g, var, "ReduceMean");
    if (!e || !mean_over_last(g, m2)) continue;
    const Node* sq = producer(g, m2->inputs[0], "Pow", 2);
    if (sq && !(sq->inputs[0] == div.inputs[0] && is_scalar(g, sq->inputs[1], 2.0f))) sq = nullptr;
    if (!sq) {
      sq = producer(g, m2->inputs[0], "Mul", 2);
      if (sq && !(sq->inputs[0] == div.inputs[0] && sq->inputs[1] == div.inputs[0])) sq = nullptr;
    }
    if (!sq) continue;
    LayerNormBlock b;
    b.x = x;
    b.epsilon = *e;
    b.decomposed = true;
    b.nodes = {g.value(sub->inputs[1]).producer,  g.value(div.inputs[0]).producer,
               g.value(m2->inputs[0]).producer,   g.value(var).producer,
               g.value(sqrt->inputs[0]).producer, g.value(div.inputs[1]).producer,
               g.value(div.outputs[0]).producer};
    return b;
  }
  return std::nullopt;
}

}  // namespace

// ---- layer normalisation ------------------------------------------------------------------
std::optional<LayerNormBlock> layer_norm_at(const Graph& g, NodeId root) {
  const Node& r = g.node(root);
  if (r.outputs.empty() || r.outputs[0] == kNoValue || !f32(g, r.outputs[0])) return std::nullopt;
  std::optional<LayerNormBlock> b;
  if (r.op_type == "LayerNormalization") {
    for (size_t i = 1; i < r.outputs.size(); ++i)
      if (r.outputs[i] != kNoValue) return std::nullopt;
    if (r.inputs.size() < 2 || !f32(g, r.inputs[0])) return std::nullopt;
    const Shape& xs = g.value(r.inputs[0]).shape;
    int64_t axis = r.attr_int("axis", -1);
    if (xs.empty() || (axis != -1 && axis != static_cast<int64_t>(xs.size()) - 1)) return std::nullopt;
    LayerNormBlock l;
    l.x = r.inputs[0];
    l.gamma = r.inputs[1];
    if (r.inputs.size() > 2) l.beta = r.inputs[2];
    if (!row_constant(g, l.gamma, xs.back()) || (l.beta != kNoValue && !row_constant(g, l.beta, xs.back())))
      return std::nullopt;
    l.epsilon = r.attr_float("epsilon", 1e-5f);
    l.nodes = {root};
    b = l;
  } else if (r.op_type == "Div") {
    b = ln_core(g, r);
  } else if (r.op_type == "Mul" || r.op_type == "Add") {
    // Mul(core, gamma) or Add(Mul(core, gamma), beta).
    for (auto [in, c] : orders(r)) {
      NodeId p = producer_id(g, in);
      if (p == kNoNode) continue;
      const Node& pn = g.node(p);
      if (r.op_type == "Mul" ? pn.op_type != "Div" : pn.op_type != "Mul") continue;
      auto inner = layer_norm_at(g, p);
      if (!inner || !inner->decomposed || (r.op_type == "Add" && inner->gamma == kNoValue)) continue;
      if (sole_consumer(g, in) != root) continue;
      const Shape& xs = g.value(inner->x).shape;
      if (!row_constant(g, c, xs.back())) continue;
      (r.op_type == "Mul" ? inner->gamma : inner->beta) = c;
      inner->nodes.push_back(root);
      b = inner;
      break;
    }
  }
  if (!b) return std::nullopt;
  if (g.value(r.outputs[0]).shape != g.value(b->x).shape) return std::nullopt;  // no broadcast growth
  // Intermediate values must stay inside (the block has one output).
  for (NodeId n : b->nodes)
    if (n != root)
      for (ValueId o : g.node(n).outputs)
        for (NodeId c : g.value(o).consumers)
          if (std::find(b->nodes.begin(), b->nodes.end(), c) == b->nodes.end()) return std::nullopt;
  return b;
}

std::optional<LayerNormBlock> layer_norm_of(const Graph& g, const SubGraph& sub) {
  if (sub.outputs.size() != 1) return std::nullopt;
  NodeId root = g.value(sub.outputs[0]).producer;
  auto b = layer_norm_at(g, root);
  if (!b) return std::nullopt;
  IndexSet want(g.nodes.size());
  for (NodeId n : b->nodes) want.add(static_cast<size_t>(n));
  NodeId add = producer_id(g, b->x);
  if (add != kNoNode && sub.nodes.contains(static_cast<size_t>(add))) {
    if (!full_add(g, producer(g, b->x, "Add"), g.value(b->x).shape)) return std::nullopt;
    b->residual = add;
    want.add(static_cast<size_t>(add));
  }
  if (!(want == sub.nodes)) return std::nullopt;
  return b;
}

PatternPtr layer_norm_pattern(bool residual) {
  return custom([residual](const Graph& g, NodeId root) {
    std::vector<IndexSet> out;
    auto b = layer_norm_at(g, root);
    if (!b) return out;
    // Only the largest block: not when an affine Mul/Add right after extends it.
    NodeId next = sole_consumer(g, g.node(root).outputs[0]);
    if (next != kNoNode && layer_norm_at(g, next)) return out;
    IndexSet s(g.nodes.size());
    for (NodeId n : b->nodes) s.add(static_cast<size_t>(n));
    out.push_back(s);
    const Node* add = producer(g, b->x, "Add");
    if (residual && full_add(g, add, g.value(b->x).shape)) {
      s.add(static_cast<size_t>(g.value(b->x).producer));
      out.push_back(s);
    }
    return out;
  });
}

// ---- GELU -------------------------------------------------------------------------------------
namespace {

// x^3 as Pow(x, 3), x * (x * x) or (x * x) * x: returns x.
ValueId cube_of(const Graph& g, ValueId v, std::vector<NodeId>& nodes) {
  if (const Node* p = producer(g, v, "Pow", 2)) {
    if (!is_scalar(g, p->inputs[1], 3.0f)) return kNoValue;
    nodes.push_back(producer_id(g, v));
    return p->inputs[0];
  }
  const Node* m = producer(g, v, "Mul", 2);
  if (!m) return kNoValue;
  for (auto [a, sq] : orders(*m)) {
    const Node* s = producer(g, sq, "Mul", 2);
    if (s && s->inputs[0] == a && s->inputs[1] == a) {
      nodes.insert(nodes.end(), {producer_id(g, sq), producer_id(g, v)});
      return a;
    }
  }
  return kNoValue;
}

// `a` = 1 + erf(x / sqrt(2)) (or x * 1/sqrt(2)), or 1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)):
// returns x and appends the nodes.
ValueId one_plus(const Graph& g, ValueId a, bool tanh, std::vector<NodeId>& nodes) {
  const Node* add = producer(g, a, "Add", 2);
  if (!add) return kNoValue;
  for (auto [e, one] : orders(*add)) {
    if (!is_scalar(g, one, 1.0f)) continue;
    std::vector<NodeId> found;
    ValueId x = kNoValue;
    if (!tanh) {
      const Node* erf = producer(g, e, "Erf", 1);
      if (!erf) continue;
      NodeId dp = producer_id(g, erf->inputs[0]);
      if (dp == kNoNode || g.node(dp).inputs.size() != 2) continue;
      const Node& d = g.node(dp);
      if (d.op_type == "Div" && is_scalar(g, d.inputs[1], static_cast<float>(M_SQRT2))) x = d.inputs[0];
      if (d.op_type == "Mul")
        for (auto [xx, c] : orders(d))
          if (is_scalar(g, c, static_cast<float>(M_SQRT1_2))) x = xx;
      if (x == kNoValue) continue;
      found = {dp, producer_id(g, e)};
    } else {
      const Node* th = producer(g, e, "Tanh", 1);
      const Node* outer = th ? producer(g, th->inputs[0], "Mul", 2) : nullptr;
      if (!outer) continue;
      for (auto [u, c] : orders(*outer)) {
        if (!is_scalar(g, c, static_cast<float>(std::sqrt(2.0 / M_PI)))) continue;
        const Node* sum = producer(g, u, "Add", 2);
        if (!sum) continue;
        for (auto [xx, t] : orders(*sum)) {
          const Node* k = producer(g, t, "Mul", 2);
          if (!k) continue;
          for (auto [cube, c2] : orders(*k)) {
            std::vector<NodeId> cn;
            if (!is_scalar(g, c2, 0.044715f) || cube_of(g, cube, cn) != xx) continue;
            found = cn;
            found.insert(found.end(), {producer_id(g, t), producer_id(g, u), producer_id(g, th->inputs[0]),
                                       producer_id(g, e)});
            x = xx;
            break;
          }
          if (x != kNoValue) break;
        }
        if (x != kNoValue) break;
      }
      if (x == kNoValue) continue;
    }
    found.push_back(producer_id(g, a));
    nodes.insert(nodes.end(), found.begin(), found.end());
    return x;
  }
  return kNoValue;
}

bool bias_ok(const Graph& g, ValueId bias, const Shape& xs) {
  if (!f32(g, bias)) return false;
  const Shape& s = g.value(bias).shape;
  if (s == xs) return true;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] != 1) return false;
  return s.size() <= xs.size() && !xs.empty() && (s.empty() || s.back() == xs.back() || s.back() == 1);
}

}  // namespace

std::optional<GeluBlock> gelu_at(const Graph& g, NodeId root) {
  const Node& r = g.node(root);
  if (r.op_type != "Mul" || r.inputs.size() != 2 || !f32(g, r.outputs[0])) return std::nullopt;
  for (bool tanh : {false, true})
    for (auto [p, q] : orders(r)) {
      const Node* inner = producer(g, p, "Mul", 2);
      if (!inner) continue;
      for (auto [u, v] : orders(*inner)) {
        // (x * A) * 0.5, (x * 0.5) * A and x * (A * 0.5), A = 1 + erf(..) or 1 + tanh(..).
        struct Form {
          ValueId x, a, half;
        };
        for (Form f : {Form{u, v, q}, Form{u, q, v}, Form{q, u, v}}) {
          std::vector<NodeId> nodes;
          if (!is_scalar(g, f.half, 0.5f) || one_plus(g, f.a, tanh, nodes) != f.x) continue;
          nodes.push_back(producer_id(g, p));
          nodes.push_back(root);
          std::sort(nodes.begin(), nodes.end());
          nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
          if (!f32(g, f.x) || g.value(f.x).shape != g.value(r.outputs[0]).shape) continue;
          bool closed = true;  // intermediate values stay inside
          for (NodeId n : nodes)
            if (n != root)
              for (NodeId c : g.value(g.node(n).outputs[0]).consumers)
                closed = closed && std::binary_search(nodes.begin(), nodes.end(), c);
          if (!closed) continue;
          GeluBlock b;
          b.tanh = tanh;
          b.x = f.x;
          b.nodes = nodes;
          return b;
        }
      }
    }
  return std::nullopt;
}

namespace {
// Extends `b` with the Add(h, bias) producing x and, if `with_matmul`, the MatMul producing h.
bool extend_gelu(const Graph& g, GeluBlock& b, bool with_matmul, const IndexSet* within) {
  const Node* add = producer(g, b.x, "Add", 2);
  if (!add || g.value(b.x).is_graph_output) return false;
  for (NodeId c : g.value(b.x).consumers)
    if (!std::binary_search(b.nodes.begin(), b.nodes.end(), c)) return false;
  const Shape& xs = g.value(b.x).shape;
  for (auto [h, bias] : orders(*add)) {
    if (!f32(g, h) || g.value(h).shape != xs || !bias_ok(g, bias, xs)) continue;
    NodeId mm = producer_id(g, h);
    bool take_mm = mm != kNoNode && g.node(mm).op_type == "MatMul" && sole_consumer(g, h) != kNoNode &&
                   (within ? within->contains(static_cast<size_t>(mm)) : with_matmul);
    if (with_matmul && !take_mm && !within) continue;
    if (take_mm) {
      const Node& m = g.node(mm);
      if (!f32(g, m.inputs[0]) || !f32(g, m.inputs[1]) || g.value(m.inputs[0]).shape.size() < 2 ||
          g.value(m.inputs[1]).shape.size() < 2)
        continue;
      b.matmul = mm;
    }
    b.bias_add = producer_id(g, b.x);
    b.h = h;
    b.bias = bias;
    return true;
  }
  return false;
}
}  // namespace

std::optional<GeluBlock> gelu_of(const Graph& g, const SubGraph& sub) {
  if (sub.outputs.size() != 1) return std::nullopt;
  auto b = gelu_at(g, g.value(sub.outputs[0]).producer);
  if (!b) return std::nullopt;
  NodeId add = producer_id(g, b->x);
  if (add != kNoNode && sub.nodes.contains(static_cast<size_t>(add)) &&
      !extend_gelu(g, *b, false, &sub.nodes))
    return std::nullopt;
  IndexSet want(g.nodes.size());
  for (NodeId n : b->nodes) want.add(static_cast<size_t>(n));
  if (b->bias_add != kNoNode) want.add(static_cast<size_t>(b->bias_add));
  if (b->matmul != kNoNode) want.add(static_cast<size_t>(b->matmul));
  if (!(want == sub.nodes)) return std::nullopt;
  return b;
}

PatternPtr gelu_pattern(bool with_bias, bool with_matmul) {
  return custom([with_bias, with_matmul](const Graph& g, NodeId root) {
    std::vector<IndexSet> out;
    auto b = gelu_at(g, root);
    if (!b || (with_bias && !extend_gelu(g, *b, with_matmul, nullptr))) return out;
    IndexSet s(g.nodes.size());
    for (NodeId n : b->nodes) s.add(static_cast<size_t>(n));
    if (b->bias_add != kNoNode) s.add(static_cast<size_t>(b->bias_add));
    if (b->matmul != kNoNode) s.add(static_cast<size_t>(b->matmul));
    out.push_back(s);
    return out;
  });
}

// ---- attention ---------------------------------------------------------------------------------
namespace {

std::vector<int64_t> perm_of(const Graph& g, const Node& t) {
  auto rank = static_cast<int64_t>(g.value(t.inputs[0]).shape.size());
  std::vector<int64_t> def;
  for (int64_t i = rank - 1; i >= 0; --i) def.push_back(i);
  std::vector<int64_t> p = t.attr_ints("perm", def);
  for (int64_t& a : p)
    if (a < 0) a += rank;
  return p;
}

// The strides of `to` viewing a tensor of shape `from` and `strides` without copying, or nullopt
// (the rule of torch's view(): each run of contiguous dims of `from` splits or merges on its own).
std::optional<std::vector<int64_t>> reshaped_strides(const Shape& from, const std::vector<int64_t>& strides,
                                                     const Shape& to) {
  if (shape_size(from) != shape_size(to) || shape_size(from) == 0) return std::nullopt;
  if (from.empty()) return std::vector<int64_t>(to.size(), 1);
  std::vector<int64_t> out(to.size(), 1);
  auto view_d = static_cast<int64_t>(to.size()) - 1;
  int64_t base = strides.back(), tensor_numel = 1, view_numel = 1;
  for (auto d = static_cast<int64_t>(from.size()) - 1; d >= 0; --d) {
    tensor_numel *= from[static_cast<size_t>(d)];
    bool chunk_ends = d == 0 || (from[static_cast<size_t>(d - 1)] != 1 &&
                                 strides[static_cast<size_t>(d - 1)] != tensor_numel * base);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || to[static_cast<size_t>(view_d)] == 1)) {
      out[static_cast<size_t>(view_d)] = view_numel * base;
      view_numel *= to[static_cast<size_t>(view_d)];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      base = strides[static_cast<size_t>(d - 1)];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

std::optional<std::vector<int64_t>> constant_ints(const Graph& g, const Node& n, size_t i) {
  if (i >= n.inputs.size() || n.inputs[i] == kNoValue || !g.value(n.inputs[i]).constant) return std::nullopt;
  return g.value(n.inputs[i]).constant->to_int64_vector();
}

// A Slice with constant starts/ends/axes/steps and positive steps, applied to view `o`.
bool slice_view(const Graph& g, const Node& n, AttentionOperand& o) {
  auto starts = constant_ints(g, n, 1), ends = constant_ints(g, n, 2);
  if (!starts || !ends || starts->size() != ends->size()) return false;
  const auto rank = static_cast<int64_t>(o.shape.size());
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  for (auto [index, into] : {std::pair{size_t{3}, &axes}, std::pair{size_t{4}, &steps}}) {
    if (index >= n.inputs.size() || n.inputs[index] == kNoValue) continue;
    auto given = constant_ints(g, n, index);
    if (!given || given->size() != starts->size()) return false;
    *into = *given;
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i], step = steps[i];
    if (axis < 0 || axis >= rank || step <= 0) return false;
    auto a = static_cast<size_t>(axis);
    const int64_t dim = o.shape[a];
    auto clamp = [dim](int64_t x) { return std::clamp(x < 0 ? x + dim : x, int64_t{0}, dim); };
    int64_t start = clamp((*starts)[i]), end = clamp((*ends)[i]);
    if (end <= start) return false;
    o.offset += start * o.strides[a];
    o.shape[a] = (end - start + step - 1) / step;
    o.strides[a] *= step;
  }
  return true;
}

// The input a view or scale node reads its operand from (a scale's other input is a nonzero
// scalar constant), or kNoValue when `n` is neither.
ValueId operand_input(const Graph& g, const Node& n, bool scalable) {
  if (n.inputs.empty() || n.inputs[0] == kNoValue) return kNoValue;
  if (n.op_type == "Transpose" || n.op_type == "Reshape" || n.op_type == "Slice" || n.op_type == "Split")
    return n.inputs[0];
  if (!scalable || (n.op_type != "Div" && n.op_type != "Mul")) return kNoValue;
  for (auto [x, c] : orders(n)) {
    auto v = scalar_of(g, c);
    if (v && *v != 0.0f && std::isfinite(*v) && (n.op_type == "Mul" || x == n.inputs[0])) return x;
  }
  return kNoValue;
}

// Split's output `out` of view `o`: a slice along its axis (sizes from the input, else equal parts).
bool split_view(const Graph& g, const Node& n, ValueId out, AttentionOperand& o) {
  const auto rank = static_cast<int64_t>(o.shape.size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  auto a = static_cast<size_t>(axis);
  const size_t parts = n.outputs.size();
  std::vector<int64_t> sizes;
  if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) {
    auto given = constant_ints(g, n, 1);
    if (!given || given->size() != parts) return false;
    sizes = *given;
  } else {
    if (o.shape[a] % static_cast<int64_t>(parts) != 0) return false;
    sizes.assign(parts, o.shape[a] / static_cast<int64_t>(parts));
  }
  int64_t start = 0;
  for (size_t i = 0; i < parts; ++i) {
    if (n.outputs[i] == out) {
      o.offset += start * o.strides[a];
      o.shape[a] = sizes[i];
      return true;
    }
    start += sizes[i];
  }
  return false;
}

// Folds node `n` (reading view `o`, its output `out_value` read next) into `o` and `scale`; false
// when that output is no strided view.
bool apply_step(const Graph& g, const Node& n, ValueId out_value, AttentionOperand& o, float& scale) {
  const Shape& out = g.value(out_value).shape;
  if (std::any_of(out.begin(), out.end(), [](int64_t d) { return d < 0; })) return false;  // not known yet
  if (n.op_type == "Transpose") {
    std::vector<int64_t> p = perm_of(g, n);
    if (p.size() != o.shape.size()) return false;
    AttentionOperand t = o;
    for (size_t i = 0; i < p.size(); ++i) {
      if (p[i] < 0 || p[i] >= static_cast<int64_t>(p.size())) return false;
      t.shape[i] = o.shape[static_cast<size_t>(p[i])];
      t.strides[i] = o.strides[static_cast<size_t>(p[i])];
    }
    o = t;
  } else if (n.op_type == "Reshape") {
    auto st = reshaped_strides(o.shape, o.strides, out);
    if (!st) return false;
    o.shape = out;
    o.strides = *st;
  } else if (n.op_type == "Slice") {
    if (!slice_view(g, n, o)) return false;
  } else if (n.op_type == "Split") {
    if (!split_view(g, n, out_value, o)) return false;
  } else {  // a scale by a scalar constant (operand_input found it)
    ValueId x = operand_input(g, n, true);
    auto c = scalar_of(g, n.inputs[0] == x ? n.inputs[1] : n.inputs[0]);
    if (!c) return false;
    scale *= n.op_type == "Div" ? 1.0f / *c : *c;
  }
  return o.shape == out;
}

// The operand `v` of a product as a strided view of the tensor before the Transposes, Reshapes,
// Slices and (if `scalable`) scalar Div/Mul that `take` lets the block absorb; the longest chain
// that stays a view wins. Adds the absorbed nodes to `nodes` and their scale factors to `scale`.
bool operand_view(const Graph& g, ValueId v, const std::function<bool(NodeId)>& take, bool scalable,
                  AttentionOperand& o, float& scale, std::vector<NodeId>& nodes) {
  std::vector<NodeId> chain;  // nearest the product first
  std::vector<ValueId> outs;  // the output of chain[i] read next
  ValueId base = v;
  for (int i = 0; i < 8; ++i) {
    NodeId p = producer_id(g, base);
    if (p == kNoNode || !take(p)) break;
    ValueId in = operand_input(g, g.node(p), scalable);
    if (in == kNoValue) break;
    chain.push_back(p);
    outs.push_back(base);
    base = in;
  }
  for (;; chain.pop_back(), outs.pop_back()) {
    AttentionOperand t;
    t.value = chain.empty() ? v : operand_input(g, g.node(chain.back()), scalable);
    t.shape = g.value(t.value).shape;
    t.strides = row_major_strides(t.shape);
    float s = 1.0f;
    bool ok = chain.empty() || std::none_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; });
    for (size_t k = chain.size(); ok && k-- > 0;) ok = apply_step(g, g.node(chain[k]), outs[k], t, s);
    if (ok) {
      o = t;
      scale *= s;
      nodes.insert(nodes.end(), chain.begin(), chain.end());
      return true;
    }
    if (chain.empty()) return false;
  }
}

// Reads the block ending at `root`; `take(node)` says whether an optional layout node joins.
std::optional<AttentionBlock> parse_attention(const Graph& g, NodeId root,
                                              const std::function<bool(NodeId)>& take) {
  AttentionBlock b;
  NodeId n = root;
  if (g.node(n).op_type == "Reshape") {
    NodeId p = producer_id(g, g.node(n).inputs[0]);
    if (p == kNoNode || !take(n)) return std::nullopt;
    b.reshape = true;
    b.nodes.push_back(n);
    n = p;
  }
  if (g.node(n).op_type == "Transpose") {
    if (!take(n) || g.node(n).inputs.empty()) return std::nullopt;
    b.out_perm = perm_of(g, g.node(n));
    b.nodes.push_back(n);
    n = producer_id(g, g.node(n).inputs[0]);
    if (n == kNoNode) return std::nullopt;
  }
  const Node& pv = g.node(n);
  if (pv.op_type != "MatMul" || pv.inputs.size() != 2) return std::nullopt;
  b.pv = n;
  b.nodes.push_back(n);
  const Node* sm = producer(g, pv.inputs[0], "Softmax", 1);
  if (!sm) return std::nullopt;
  const Shape& ss = g.value(sm->inputs[0]).shape;
  int64_t axis = sm->attr_int("axis", -1);
  if (ss.size() < 2 || (axis != -1 && axis != static_cast<int64_t>(ss.size()) - 1)) return std::nullopt;
  b.softmax = producer_id(g, pv.inputs[0]);
  b.nodes.push_back(b.softmax);
  ValueId t = sm->inputs[0];
  // Optional mask Add, optional scale, then MatMul(Q, K^T).
  auto scores_at = [&](ValueId s, AttentionBlock& out) -> bool {
    NodeId p = producer_id(g, s);
    if (p == kNoNode) return false;
    const Node& sn = g.node(p);
    if ((sn.op_type == "Div" || sn.op_type == "Mul") && sn.inputs.size() == 2) {
      for (auto [a, c] : orders(sn)) {
        auto v = scalar_of(g, c);
        if (!v || (sn.op_type == "Div" && a != sn.inputs[0]) || *v == 0.0f) continue;
        const Node* mm = producer(g, a, "MatMul", 2);
        if (!mm) continue;
        out.scale = sn.op_type == "Div" ? 1.0f / *v : *v;
        out.qk = producer_id(g, a);
        out.nodes.insert(out.nodes.end(), {p, out.qk});
        return true;
      }
      return false;
    }
    if (sn.op_type == "MatMul" && sn.inputs.size() == 2) {
      out.qk = p;
      out.nodes.push_back(p);
      return true;
    }
    return false;
  };
  bool found = false;
  if (const Node* add = producer(g, t, "Add", 2)) {
    for (auto [s, m] : orders(*add)) {
      AttentionBlock trial = b;
      if (!f32(g, m) || !scores_at(s, trial)) continue;
      trial.mask = m;
      trial.nodes.push_back(producer_id(g, t));
      b = trial;
      found = true;
      break;
    }
  }
  // torch's masked_fill as exporters write it: Where(constant condition, a fill no score reaches,
  // scores). Adding the fill where the condition holds gives the same softmax: the sum rounds to
  // the fill (-inf stays -inf), so masked entries weigh 0 and a fully masked row is uniform.
  if (const Node* where = producer(g, t, "Where", 3); !found && where) {
    const Value& cond = g.value(where->inputs[0]);
    auto fill = scalar_of(g, where->inputs[1]);
    AttentionBlock trial = b;
    if (cond.constant && cond.constant->dtype() == DType::Bool && fill && *fill <= -1e30f &&
        scores_at(where->inputs[2], trial)) {
      Tensor mask(DType::Float32, cond.shape);
      std::vector<double> c = cond.constant->to_double_vector();
      for (size_t i = 0; i < c.size(); ++i) mask.data<float>()[i] = c[i] != 0.0 ? *fill : 0.0f;
      trial.mask_constant = mask;
      trial.nodes.push_back(producer_id(g, t));
      b = trial;
      found = true;
    }
  }
  if (!found && !scores_at(t, b)) return std::nullopt;
  const Node& qk = g.node(b.qk);
  float scale = b.scale;
  if (!operand_view(g, qk.inputs[0], take, true, b.q, scale, b.nodes) ||
      !operand_view(g, qk.inputs[1], take, true, b.k, scale, b.nodes) ||
      !operand_view(g, pv.inputs[1], take, false, b.v, scale, b.nodes))
    return std::nullopt;
  b.scale = scale;
  for (ValueId v : {b.q.value, b.k.value, b.v.value, pv.outputs[0]})
    if (!f32(g, v) || g.value(v).shape.size() < 2) return std::nullopt;
  if (g.value(qk.outputs[0]).shape != ss) return std::nullopt;  // the mask may not broadcast the scores
  // Where the context [.., Sq, Dv] lands in the block's output: through the Transpose after it.
  const Shape& ctx = g.value(pv.outputs[0]).shape;
  b.context_strides = row_major_strides(ctx);
  if (!b.out_perm.empty()) {
    if (b.out_perm.size() != ctx.size()) return std::nullopt;
    Shape ys;
    for (int64_t p : b.out_perm) ys.push_back(ctx[static_cast<size_t>(p)]);
    std::vector<int64_t> yst = row_major_strides(ys);
    for (size_t i = 0; i < ctx.size(); ++i) b.context_strides[static_cast<size_t>(b.out_perm[i])] = yst[i];
  }
  std::sort(b.nodes.begin(), b.nodes.end());
  b.nodes.erase(std::unique(b.nodes.begin(), b.nodes.end()), b.nodes.end());
  // Intermediate values stay inside (a Split feeding Q, K and V joins once, all its outputs read here).
  for (NodeId id : b.nodes)
    if (id != root)
      for (ValueId out : g.node(id).outputs)
        if (out != kNoValue)
          for (NodeId c : g.value(out).consumers)
            if (!std::binary_search(b.nodes.begin(), b.nodes.end(), c)) return std::nullopt;
  return b;
}

}  // namespace

std::optional<AttentionBlock> attention_at(const Graph& g, NodeId root, bool with_layout) {
  auto take = [&](NodeId n) {
    if (!with_layout) return false;
    if (n == root) return true;
    return sole_consumer(g, g.node(n).outputs[0]) != kNoNode;
  };
  return parse_attention(g, root, take);
}

std::optional<AttentionBlock> attention_of(const Graph& g, const SubGraph& sub) {
  if (sub.outputs.size() != 1) return std::nullopt;
  auto b = parse_attention(g, g.value(sub.outputs[0]).producer,
                           [&](NodeId n) { return sub.nodes.contains(static_cast<size_t>(n)); });
  if (!b) return std::nullopt;
  IndexSet want(g.nodes.size());
  for (NodeId n : b->nodes) want.add(static_cast<size_t>(n));
  if (!(want == sub.nodes)) return std::nullopt;
  return b;
}

PatternPtr attention_pattern(bool with_layout) {
  return custom([with_layout](const Graph& g, NodeId root) {
    std::vector<IndexSet> out;
    const Node& r = g.node(root);
    if (r.outputs.empty() || r.outputs[0] == kNoValue) return out;
    if (with_layout) {
      // The largest block only: not when a Transpose/Reshape after it could join.
      NodeId next = sole_consumer(g, r.outputs[0]);
      if (next != kNoNode) {
        const std::string& op = g.node(next).op_type;
        if ((op == "Transpose" && r.op_type == "MatMul") ||
            (op == "Reshape" && (r.op_type == "Transpose" || r.op_type == "MatMul")))
          if (attention_at(g, next, true)) return out;
      }
    } else if (r.op_type != "MatMul") {
      return out;
    }
    auto b = attention_at(g, root, with_layout);
    if (!b) return out;
    IndexSet s(g.nodes.size());
    for (NodeId n : b->nodes) s.add(static_cast<size_t>(n));
    out.push_back(s);
    return out;
  });
}

}  // namespace collage
