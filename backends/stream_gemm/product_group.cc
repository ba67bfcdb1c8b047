#include "backends/stream_gemm/product_group.h"

#include <algorithm>

#include "backends/stream_gemm/stream_gemm.h"
#include "core/backend_api/transformer_fusion.h"

namespace collage::stream_gemm {

namespace {

bool constant_matrix(const Graph& g, ValueId v) {
  return v != kNoValue && g.value(v).constant && g.value(v).dtype == DType::Float32 &&
         g.value(v).shape.size() == 2;
}

// At least one row: the kernels take any number, in chunks.
bool has_rows(const Shape& a, int64_t k) { return k > 0 && shape_size(a) / k >= 1; }

}  // namespace

bool matmul_product(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2 || !constant_matrix(g, n.inputs[1])) return false;
  const Shape& a = g.value(n.inputs[0]).shape;
  return a.size() >= 2 && a.back() == g.value(n.inputs[1]).shape[0] && has_rows(a, a.back());
}

bool gemm_product(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || n.attr_int("transA", 0) != 0 || !constant_matrix(g, n.inputs[1]) ||
      !input_absent_or_constant(g, n, 2))
    return false;
  const Shape& a = g.value(n.inputs[0]).shape;
  return a.size() == 2 && has_rows(a, a[1]);
}

std::vector<PatternPtr> product_patterns(ProductPredicate matmul_ok, ProductPredicate gemm_ok) {
  auto f32 = all_float32();
  PatternPtr matmul = op("MatMul")->where(f32)->where(matmul_ok);
  PatternPtr gemm = op("Gemm")->where(f32)->where(gemm_ok);
  std::vector<PatternPtr> out;
  for (PatternPtr head : {matmul, gemm}) {
    PatternPtr bias = op("Add", {head, constant()})->where(bias_add_ok);
    for (PatternPtr body : {head, bias}) {
      out.push_back(body);
      out.push_back(op("Relu", {body}));
      out.push_back(op("Add", {body, wildcard()})->where(residual_add_ok));
    }
  }
  out.push_back(gelu_block(matmul_ok));
  return out;
}

ProductGroup::ProductGroup(const Graph& g, const SubGraph& sub, const std::string& who) : who_(who) {
  auto refuse = [&](const std::string& why) { throw Error(ErrorKind::Unsupported, who_ + ": " + why); };
  if (sub.outputs.size() != 1) refuse("one output expected");
  NodeId head = kNoNode;
  for (NodeId id : sub.node_list)
    if (g.node(id).op_type == "MatMul" || g.node(id).op_type == "Gemm") {
      if (head != kNoNode) refuse("more than one product in the group");
      head = id;
    }
  if (head == kNoNode) refuse("no MatMul or Gemm in the group");
  head_ = head;
  const Node& h = g.node(head);
  if (h.op_type == "MatMul" ? !matmul_product(g, h) : !gemm_product(g, h))
    refuse("node '" + h.name + "' is not a product of runtime activations and constant 2-D weights");
  out_shape_ = g.value(sub.outputs[0]).shape;
  a_input_ = input_index(g, sub, h.inputs[0]);
  weights_ = *g.value(h.inputs[1]).constant;
  const bool gemm = h.op_type == "Gemm";
  transposed_ = gemm && h.attr_int("transB", 0) != 0;
  alpha_ = gemm ? h.attr_float("alpha", 1.0f) : 1.0f;
  k_ = transposed_ ? weights_.dim(1) : weights_.dim(0);
  n_ = transposed_ ? weights_.dim(0) : weights_.dim(1);
  if (gemm && h.inputs.size() > 2 && h.inputs[2] != kNoValue) {
    if (!row_constant(g, h.inputs[2], n_)) refuse("Gemm's C is not one value per column");
    add_row(*g.value(h.inputs[2]).constant, h.attr_float("beta", 1.0f));
  }
  ValueId current = h.outputs[0];
  if (auto b = gelu_of(g, sub)) {
    if (b->matmul != head || b->bias_add == kNoNode) refuse("GELU without its bias Add and MatMul");
    add_operand(g, sub, b->bias);
    steps_.push_back({b->tanh ? EpilogueStep::Kind::GeluTanh : EpilogueStep::Kind::GeluErf});
    return;
  }
  for (NodeId id : sub.node_list) {
    if (id == head) continue;
    const Node& n = g.node(id);
    if (n.op_type == "Relu" && n.inputs[0] == current) {
      steps_.push_back({EpilogueStep::Kind::Relu});
    } else if (n.op_type == "Add" && (n.inputs[0] == current || n.inputs[1] == current)) {
      add_operand(g, sub, n.inputs[0] == current ? n.inputs[1] : n.inputs[0]);
    } else {
      refuse("node '" + n.name + "' (" + n.op_type + ") is not an epilogue of the product");
    }
    current = n.outputs[0];
  }
  if (current != sub.outputs[0]) refuse("the group is not a single chain");
}

std::vector<EpilogueStep> ProductGroup::epilogue(KernelInputs inputs) const {
  std::vector<EpilogueStep> out;
  out.reserve(steps_.size());
  for (const Step& s : steps_) {
    if (s.row >= 0)
      out.push_back({s.kind, rows_[static_cast<size_t>(s.row)].data(), 0});
    else if (s.constant >= 0)
      out.push_back({s.kind, constants_[static_cast<size_t>(s.constant)].data<float>(), n_});
    else if (s.input >= 0)
      out.push_back({s.kind, inputs[static_cast<size_t>(s.input)]->data<float>(), n_});
    else
      out.push_back({s.kind});
  }
  return out;
}

int ProductGroup::input_index(const Graph& g, const SubGraph& sub, ValueId v) const {
  auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
  if (it == sub.inputs.end())
    throw Error(ErrorKind::Unsupported, who_ + ": '" + g.value(v).name + "' must be a runtime input");
  return static_cast<int>(it - sub.inputs.begin());
}

void ProductGroup::add_row(const Tensor& t, float scale) {
  std::vector<float>& row = rows_.emplace_back(static_cast<size_t>(n_));
  const float* p = t.data<float>();
  for (int64_t j = 0; j < n_; ++j) row[static_cast<size_t>(j)] = scale * (t.size() == 1 ? p[0] : p[j]);
  steps_.push_back({EpilogueStep::Kind::AddRow, static_cast<int>(rows_.size() - 1)});
}

void ProductGroup::add_operand(const Graph& g, const SubGraph& sub, ValueId v) {
  if (row_constant(g, v, n_)) return add_row(*g.value(v).constant, 1.0f);
  auto refuse = [&](const std::string& why) { throw Error(ErrorKind::Unsupported, who_ + ": " + why); };
  if (g.value(v).shape != out_shape_) refuse("an Add operand neither per column nor of the output's shape");
  if (g.value(v).dtype != DType::Float32) refuse("a non-float Add operand");
  if (g.value(v).constant) {
    constants_.push_back(*g.value(v).constant);
    steps_.push_back({EpilogueStep::Kind::AddFull, -1, static_cast<int>(constants_.size() - 1)});
  } else {
    steps_.push_back({EpilogueStep::Kind::AddFull, -1, -1, input_index(g, sub, v)});
  }
}

}  // namespace collage::stream_gemm
