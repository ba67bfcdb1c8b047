#include "backends/stream_gemm/stream_gemm.h"

#include <algorithm>

#include "backends/stream_gemm/packed_gemm.h"
#include "core/backend_api/shared_constants.h"
#include "core/backend_api/transformer_fusion.h"

namespace collage {

namespace {

using stream_gemm::bias_add_ok;
using stream_gemm::EpilogueStep;
using stream_gemm::gelu_block;
using stream_gemm::PackedWeights;
using stream_gemm::residual_add_ok;
using stream_gemm::row_constant;

[[noreturn]] void refuse(const std::string& why) {
  throw Error(ErrorKind::Unsupported, "stream-gemm: " + why);
}

bool constant_matrix(const Graph& g, ValueId v) {
  return v != kNoValue && g.value(v).constant && g.value(v).dtype == DType::Float32 &&
         g.value(v).shape.size() == 2;
}

// Any number of rows: the kernel takes them in chunks that fit in L2.
bool has_rows(const Shape& a, int64_t k) { return k > 0 && shape_size(a) / k >= 1; }

// MatMul(A, W): W constant [k, n], A of rank >= 2 whose rows flatten to m x k.
bool matmul_ok(const Graph& g, const Node& n) {
  if (!stream_gemm::supported() || n.inputs.size() != 2 || !constant_matrix(g, n.inputs[1])) return false;
  const Shape& a = g.value(n.inputs[0]).shape;
  return a.size() >= 2 && a.back() == g.value(n.inputs[1]).shape[0] && has_rows(a, a.back());
}

// Gemm(A, W, C) with A not transposed, W and C constant.
bool gemm_ok(const Graph& g, const Node& n) {
  if (!stream_gemm::supported() || n.inputs.size() < 2 || n.attr_int("transA", 0) != 0 ||
      !constant_matrix(g, n.inputs[1]) || !input_absent_or_constant(g, n, 2))
    return false;
  const Shape& a = g.value(n.inputs[0]).shape;
  return a.size() == 2 && has_rows(a, a[1]);
}

class StreamGemmKernel : public Kernel {
 public:
  StreamGemmKernel(const Graph& g, const SubGraph& sub, int threads) : threads_(threads) {
    if (!stream_gemm::supported()) refuse("this CPU lacks AVX2 or FMA");
    if (sub.outputs.size() != 1) refuse("one output expected");
    NodeId head = kNoNode;
    for (NodeId id : sub.node_list)
      if (g.node(id).op_type == "MatMul" || g.node(id).op_type == "Gemm") {
        if (head != kNoNode) refuse("more than one product in the group");
        head = id;
      }
    if (head == kNoNode) refuse("no MatMul or Gemm in the group");
    const Node& h = g.node(head);
    out_shape_ = g.value(sub.outputs[0]).shape;
    a_input_ = input_index(g, sub, h.inputs[0]);
    setup_weights(g, h);
    ValueId current = h.outputs[0];
    if (auto b = gelu_of(g, sub)) {
      if (b->matmul != head || b->bias_add == kNoNode) refuse("GELU without its bias Add and MatMul");
      add_operand(g, sub, b->bias);
      push({b->tanh ? EpilogueStep::Kind::GeluTanh : EpilogueStep::Kind::GeluErf});
      return;
    }
    for (NodeId id : sub.node_list) {
      if (id == head) continue;
      const Node& n = g.node(id);
      if (n.op_type == "Relu" && n.inputs[0] == current) {
        push({EpilogueStep::Kind::Relu});
      } else if (n.op_type == "Add" && (n.inputs[0] == current || n.inputs[1] == current)) {
        add_operand(g, sub, n.inputs[0] == current ? n.inputs[1] : n.inputs[0]);
      } else {
        refuse("node '" + n.name + "' (" + n.op_type + ") is not an epilogue of the product");
      }
      current = n.outputs[0];
    }
    if (current != sub.outputs[0]) refuse("the group is not a single chain");
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    std::vector<EpilogueStep> steps = steps_;
    for (size_t i = 0; i < steps.size(); ++i)
      if (runtime_[i] >= 0) steps[i].operand = inputs[static_cast<size_t>(runtime_[i])]->data<float>();
    const int64_t n = w_->n, m = n ? shape_size(out_shape_) / n : 0;
    stream_gemm::gemm(inputs[static_cast<size_t>(a_input_)]->data<float>(), m, w_->k, *w_, y.data<float>(), n,
                      steps, threads_);
    return {y};
  }

 private:
  static int input_index(const Graph& g, const SubGraph& sub, ValueId v) {
    auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
    if (it == sub.inputs.end()) refuse("'" + g.value(v).name + "' must be a runtime input");
    return static_cast<int>(it - sub.inputs.begin());
  }

  void setup_weights(const Graph& g, const Node& h) {
    const Tensor& w = *g.value(h.inputs[1]).constant;
    const bool gemm = h.op_type == "Gemm", trans = gemm && h.attr_int("transB", 0) != 0;
    const float alpha = gemm ? h.attr_float("alpha", 1.0f) : 1.0f;
    const int64_t k = trans ? w.dim(1) : w.dim(0), n = trans ? w.dim(0) : w.dim(1);
    auto make = [&] {
      const float* src = w.data<float>();
      std::vector<float> scaled;
      if (alpha != 1.0f) {  // folded into the packed weights once
        scaled.assign(src, src + w.size());
        for (float& x : scaled) x *= alpha;
        src = scaled.data();
      }
      return std::make_shared<const PackedWeights>(stream_gemm::pack_weights(src, k, n, w.dim(1), trans));
    };
    if (SharedConstants* shared = SharedConstants::current()) {
      const std::string layout = std::string("stream-gemm panels") + (trans ? " T" : "") +
                                 (alpha != 1.0f ? " alpha=" + std::to_string(alpha) : "");
      w_ = std::static_pointer_cast<const PackedWeights>(shared->find_or_add(w, layout, make));
    } else {
      w_ = make();
    }
    if (gemm && h.inputs.size() > 2 && h.inputs[2] != kNoValue) {
      const float beta = h.attr_float("beta", 1.0f);
      if (!row_constant(g, h.inputs[2], n)) refuse("Gemm's C is not one value per column");
      add_row(*g.value(h.inputs[2]).constant, n, beta);
    }
  }

  void add_row(const Tensor& t, int64_t n, float scale) {
    std::vector<float>& row = rows_.emplace_back(static_cast<size_t>(n));
    const float* p = t.data<float>();
    for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] = scale * (t.size() == 1 ? p[0] : p[j]);
    push({EpilogueStep::Kind::AddRow, row.data(), 0});
  }

  void push(EpilogueStep step, int runtime_input = -1) {
    steps_.push_back(step);
    runtime_.push_back(runtime_input);
  }

  // The other operand of an Add after the product: a per-column constant, or a full-shape tensor.
  void add_operand(const Graph& g, const SubGraph& sub, ValueId v) {
    const int64_t n = w_->n;
    if (row_constant(g, v, n)) return add_row(*g.value(v).constant, n, 1.0f);
    if (g.value(v).shape != out_shape_) refuse("an Add operand neither per column nor of the output's shape");
    if (g.value(v).dtype != DType::Float32) refuse("a non-float Add operand");
    if (g.value(v).constant) {
      constants_.push_back(*g.value(v).constant);
      push({EpilogueStep::Kind::AddFull, constants_.back().data<float>(), n});
    } else {
      push({EpilogueStep::Kind::AddFull, nullptr, n}, input_index(g, sub, v));
    }
  }

  int threads_;
  Shape out_shape_;
  int a_input_ = 0;
  std::shared_ptr<const PackedWeights> w_;
  std::vector<EpilogueStep> steps_;
  std::vector<int> runtime_;              // per step: the kernel input it reads at run time, or -1
  std::vector<std::vector<float>> rows_;  // moving a row keeps its buffer: steps_ point into them
  std::vector<Tensor> constants_;
};

}  // namespace

namespace stream_gemm {

bool row_constant(const Graph& g, ValueId v, int64_t n) {
  if (v == kNoValue || !g.value(v).constant || g.value(v).dtype != DType::Float32) return false;
  const Shape& s = g.value(v).shape;
  const int64_t size = shape_size(s);
  return size == 1 || (size == n && s.back() == n);
}

bool residual_add_ok(const Graph& g, const Node& n) {
  const Shape& y = g.value(n.outputs[0]).shape;
  return g.value(n.inputs[0]).shape == y && g.value(n.inputs[1]).shape == y;
}

PatternPtr gelu_block(bool (*product_ok)(const Graph&, const Node&)) {
  PatternPtr any = gelu_pattern(true, true);
  return custom([any, product_ok](const Graph& g, NodeId root) {
    std::vector<IndexSet> out;
    for (const IndexSet& s : any->match(g, root)) {
      bool ok = true;
      for (size_t id = 0; id < g.nodes.size(); ++id)
        if (s.contains(id) && g.nodes[id].op_type == "MatMul") ok = ok && product_ok(g, g.nodes[id]);
      if (ok) out.push_back(s);
    }
    return out;
  });
}

bool bias_add_ok(const Graph& g, const Node& n) {
  const Shape& y = g.value(n.outputs[0]).shape;
  return !y.empty() && (row_constant(g, n.inputs[0], y.back()) || row_constant(g, n.inputs[1], y.back()));
}

}  // namespace stream_gemm

const BackendSpec& stream_gemm_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "stream-gemm";
    s.version =
        "4 (6x16 avx2+fma or 6x32 avx512 tiles, prefetching panels, rows in L2-sized chunks, leading adds in "
        "the kernel)";
    auto f32 = all_float32();
    PatternPtr matmul = op("MatMul")->where(f32)->where(matmul_ok);
    PatternPtr gemm = op("Gemm")->where(f32)->where(gemm_ok);
    for (PatternPtr head : {matmul, gemm}) {
      PatternPtr bias = op("Add", {head, constant()})->where(bias_add_ok);
      for (PatternPtr body : {head, bias}) {
        s.patterns.push_back(body);
        s.patterns.push_back(op("Relu", {body}));
        s.patterns.push_back(op("Add", {body, wildcard()})->where(residual_add_ok));
      }
    }
    s.patterns.push_back(gelu_block(matmul_ok));
    s.limits.max_nodes = 8;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
      return std::make_unique<StreamGemmKernel>(g, sub, o.threads);
    };
    s.unavailable = [] {
      return stream_gemm::supported() ? std::string() : std::string("this CPU lacks AVX2 or FMA");
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
