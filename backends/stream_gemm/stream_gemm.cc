#include "backends/stream_gemm/stream_gemm.h"

#include <algorithm>

#include "backends/stream_gemm/packed_gemm.h"
#include "backends/stream_gemm/product_group.h"
#include "core/backend_api/shared_constants.h"
#include "core/backend_api/transformer_fusion.h"

namespace collage {

namespace {

using stream_gemm::PackedWeights;

// MatMul / Gemm heads where the CPU runs the kernel.
bool matmul_ok(const Graph& g, const Node& n) {
  return stream_gemm::supported() && stream_gemm::matmul_product(g, n);
}
bool gemm_ok(const Graph& g, const Node& n) {
  return stream_gemm::supported() && stream_gemm::gemm_product(g, n);
}

class StreamGemmKernel : public Kernel {
 public:
  StreamGemmKernel(const Graph& g, const SubGraph& sub, int threads)
      : threads_(threads), group_(g, sub, "stream-gemm") {
    if (!stream_gemm::supported())
      throw Error(ErrorKind::Unsupported, "stream-gemm: this CPU lacks AVX2 or FMA");
    const bool trans = group_.transposed();
    const float alpha = group_.alpha();
    const Tensor& w = group_.weights();
    const int64_t k = group_.k(), n = group_.n();
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
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, group_.out_shape());
    stream_gemm::gemm(inputs[static_cast<size_t>(group_.a_input())]->data<float>(), group_.m(), w_->k, *w_,
                      y.data<float>(), w_->n, group_.epilogue(inputs), threads_);
    return {y};
  }

 private:
  int threads_;
  stream_gemm::ProductGroup group_;
  std::shared_ptr<const PackedWeights> w_;
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
        "6 (6x16 avx2+fma or 6x32 avx512 tiles, prefetching panels, rows in L2-sized chunks, leading adds in "
        "the kernel, an avx512 epilogue, a rational erf)";
    s.patterns = stream_gemm::product_patterns(matmul_ok, gemm_ok);
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
