#include "backends/stream_gemm_int8/stream_gemm_int8.h"

#include "backends/stream_gemm/product_group.h"
#include "backends/stream_gemm_int8/int8_gemm.h"
#include "core/backend_api/int8_weights.h"
#include "core/backend_api/shared_constants.h"

namespace collage {

namespace {

using stream_gemm_int8::PackedInt8Weights;

bool inner_ok(int64_t k) { return k >= 1 && k <= stream_gemm_int8::kMaxK; }

bool matmul_ok(const Graph& g, const Node& n) {
  return stream_gemm_int8::supported() && int8_weights_matmul(g, n) && stream_gemm::matmul_product(g, n) &&
         inner_ok(g.value(n.inputs[1]).shape[0]);
}

bool gemm_ok(const Graph& g, const Node& n) {
  if (!stream_gemm_int8::supported() || !int8_weights_gemm(g, n) || !stream_gemm::gemm_product(g, n))
    return false;
  const Shape& w = g.value(n.inputs[1]).shape;
  return inner_ok(n.attr_int("transB", 0) != 0 ? w[1] : w[0]);
}

class Int8GemmKernel : public Kernel {
 public:
  Int8GemmKernel(const Graph& g, const SubGraph& sub, int threads)
      : threads_(threads), group_(g, sub, "stream-gemm-int8") {
    if (!stream_gemm_int8::supported())
      throw Error(ErrorKind::Unsupported,
                  std::string("stream-gemm-int8: ") + stream_gemm_int8::unsupported_reason());
    const int64_t k = group_.k(), n = group_.n();
    if (!inner_ok(k))
      throw Error(ErrorKind::Unsupported, "stream-gemm-int8: an inner dimension of " + std::to_string(k));
    auto make = [&] {
      const QuantizedWeights q = quantize_node_weights(g, g.node(group_.head()));
      return std::make_shared<const PackedInt8Weights>(
          stream_gemm_int8::pack_int8_weights(q.q.data(), q.scale.data(), k, n));
    };
    if (SharedConstants* shared = SharedConstants::current()) {
      const std::string layout = std::string("stream-gemm-int8 panels") + (group_.transposed() ? " T" : "") +
                                 (group_.alpha() != 1.0f ? " alpha=" + std::to_string(group_.alpha()) : "");
      w_ = std::static_pointer_cast<const PackedInt8Weights>(
          shared->find_or_add(group_.weights(), layout, make));
    } else {
      w_ = make();
    }
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, group_.out_shape());
    stream_gemm_int8::gemm(inputs[static_cast<size_t>(group_.a_input())]->data<float>(), group_.m(), w_->k,
                           *w_, y.data<float>(), w_->n, group_.epilogue(inputs), threads_);
    return {y};
  }

 private:
  int threads_;
  stream_gemm::ProductGroup group_;
  std::shared_ptr<const PackedInt8Weights> w_;
};

}  // namespace

const BackendSpec& stream_gemm_int8_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "stream-gemm-int8";
    s.version =
        "3 (per-tensor activations, 7-bit per-column weights, a rational erf; avx512-vnni 6x64 tiles over u8 "
        "activations, avx2 3x16 tiles over 7-bit ones)";
    s.precision = Precision::Int8;
    s.patterns = stream_gemm::product_patterns(matmul_ok, gemm_ok);
    s.limits.max_nodes = 8;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
      return std::make_unique<Int8GemmKernel>(g, sub, o.threads);
    };
    s.unavailable = [] { return std::string(stream_gemm_int8::unsupported_reason()); };
    return s;
  }();
  return spec;
}

}  // namespace collage
