#include "backends/strassen/strassen.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "backends/stream_gemm/packed_gemm.h"
#include "backends/stream_gemm/stream_gemm.h"
#include "core/backend_api/shared_constants.h"
#include "core/backend_api/transformer_fusion.h"

namespace collage {

namespace {

using stream_gemm::bias_add_ok;
using stream_gemm::EpilogueStep;
using stream_gemm::PackedWeights;
using stream_gemm::residual_add_ok;
using stream_gemm::row_constant;

constexpr int64_t kMinHalf = 64;  // below this a half-size product runs far from the peak
constexpr int64_t kMinRows = 16;  // fewer rows stream the weights: 7/4 of them would cost more

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "strassen: " + why); }

bool float_constant(const Graph& g, ValueId v) {
  return v != kNoValue && g.value(v).constant && g.value(v).dtype == DType::Float32;
}

// K and N of the product's weights ([K, N] as the product reads them), or nullopt when the
// node is not a product this backend takes.
std::optional<std::array<int64_t, 2>> product_dims(const Graph& g, const Node& n) {
  if (!stream_gemm::supported() || n.inputs.size() < 2 || !float_constant(g, n.inputs[1]) ||
      g.value(n.inputs[1]).shape.size() != 2 || g.value(n.inputs[0]).constant)
    return std::nullopt;
  const Shape& w = g.value(n.inputs[1]).shape;
  const Shape& a = g.value(n.inputs[0]).shape;
  int64_t k = w[0], cols = w[1];
  if (n.op_type == "Gemm") {
    if (n.attr_int("transA", 0) != 0 || a.size() != 2) return std::nullopt;
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue &&
        !row_constant(g, n.inputs[2], n.attr_int("transB", 0) ? k : cols))
      return std::nullopt;
    if (n.attr_int("transB", 0) != 0) std::swap(k, cols);
  } else if (n.op_type != "MatMul" || n.inputs.size() != 2 || a.size() < 2) {
    return std::nullopt;
  }
  if (a.back() != k || k % 2 != 0 || k / 2 < kMinHalf || cols / 2 < kMinHalf || shape_size(a) / k < kMinRows)
    return std::nullopt;
  return std::array<int64_t, 2>{k, cols};
}

bool product_ok(const Graph& g, const Node& n) { return product_dims(g, n).has_value(); }

class StrassenKernel : public Kernel {
 public:
  StrassenKernel(const Graph& g, const SubGraph& sub, int threads) : threads_(threads) {
    if (!stream_gemm::supported()) refuse("this CPU lacks AVX2 or FMA");
    if (sub.outputs.size() != 1) refuse("one output expected");
    const Node& head = g.node(sub.node_list.front());
    a_input_ = input_index(g, sub, head.inputs[0]);
    const auto dims = product_dims(g, head);
    if (!dims)
      refuse("node '" + head.name +
             "' is not a product of constant weights with an even K and halves of 64 or more");
    k_ = (*dims)[0];
    n_ = (*dims)[1];
    out_shape_ = g.value(sub.outputs[0]).shape;
    m_ = shape_size(out_shape_) / n_;
    m2_ = (m_ + 1) / 2;
    mb_ = m_ - m2_;
    bias_.assign(static_cast<size_t>(n_), 0.0f);
    pack(g, head);
    ValueId current = head.outputs[0];
    if (auto gelu = gelu_of(g, sub)) {
      if (gelu->matmul != sub.node_list.front() || gelu->bias_add == kNoNode)
        refuse("GELU without its bias Add and product");
      if (!row_constant(g, gelu->bias, n_)) refuse("GELU's Add adds no bias row");
      add_bias(*g.value(gelu->bias).constant, 1.0f);
      activation_ = gelu->tanh ? EpilogueStep::Kind::GeluTanh : EpilogueStep::Kind::GeluErf;
      current = sub.outputs[0];
    } else {
      for (size_t i = 1; i < sub.node_list.size(); ++i) {
        const Node& n = g.node(sub.node_list[i]);
        const bool residual = residual_input_ >= 0 || residual_constant_;
        if (n.op_type == "Relu" && n.inputs[0] == current && !activation_ && !residual) {
          activation_ = EpilogueStep::Kind::Relu;
        } else if (n.op_type == "Add" && !activation_ && !residual &&
                   (n.inputs[0] == current || n.inputs[1] == current)) {
          const ValueId other = n.inputs[0] == current ? n.inputs[1] : n.inputs[0];
          if (i == 1 && row_constant(g, other, n_)) {
            add_bias(*g.value(other).constant, 1.0f);
          } else if (g.value(other).shape == out_shape_ && g.value(other).dtype == DType::Float32) {
            if (g.value(other).constant)
              residual_constant_ = *g.value(other).constant;
            else
              residual_input_ = input_index(g, sub, other);
          } else {
            refuse("node '" + n.name + "' adds neither a bias row nor a residual of the output's shape");
          }
        } else {
          refuse("node '" + n.name + "' (" + n.op_type +
                 ") is not the product's bias Add, residual Add or activation");
        }
        current = n.outputs[0];
      }
    }
    if (current != sub.outputs[0]) refuse("the group is not a single chain");
    for (std::vector<float>* s : {&s1_, &s2_, &s3_, &s4_})
      s->assign(static_cast<size_t>(m2_ * (k_ / 2)), 0.0f);
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    const float* a = inputs[static_cast<size_t>(a_input_)]->data<float>();
    const float* res = residual_input_ >= 0 ? inputs[static_cast<size_t>(residual_input_)]->data<float>()
                       : residual_constant_ ? residual_constant_->data<float>()
                                            : nullptr;
    float* c = y.data<float>();
    const int64_t k = k_, n = n_, k2 = k_ / 2, n2 = n_ / 2, m2 = m2_, mb = mb_;
    const int t = threads_;
    form_sums(a);
    const float *a11 = a, *a12 = a + k2, *a22 = a + m2 * k + k2;
    float *c11 = c, *c12 = c + n2, *c21 = c + m2 * n, *c22 = c + m2 * n + n2;
    auto full = [&](const float* operand) {
      return std::vector<EpilogueStep>{{EpilogueStep::Kind::AddFull, operand, n}};
    };
    // A quarter's last product adds its bias, then the activation or the residual's quarter.
    auto last_of = [&](int64_t row, int64_t col) {
      std::vector<EpilogueStep> steps{{EpilogueStep::Kind::AddRow, bias_.data() + col * n2, 0}};
      if (activation_) steps.push_back({*activation_});
      if (res) steps.push_back({EpilogueStep::Kind::AddFull, res + row * m2 * n + col * n2, n});
      return steps;
    };
    // Winograd's form: U2 = M1 + M6, U3 = U2 + M7, U4 = U2 + M5, and
    // C11 = M1 + M2, C12 = U4 + M3, C21 = U3 - M4, C22 = U3 + M5.
    stream_gemm::gemm(a11, m2, k, (*w_)[0], c11, n, {}, t);                 // C11 = M1
    stream_gemm::gemm(s2_.data(), m2, k2, (*w_)[5], c12, n, full(c11), t);  // C12 = U2
    if (mb > 0) {
      stream_gemm::gemm(s3_.data(), mb, k2, (*w_)[6], c21, n, full(c12), t);  // C21 = U3
      stream_gemm::gemm(s1_.data(), mb, k2, (*w_)[4], c22, n, full(c21), t);  // C22 = U3 + M5
    }
    // U4 = U2 + M5 = C12 + (C22 - C21); past the bottom half's rows M5's row is zero. C22 is
    // final here: its bias and activation too.
#pragma omp parallel for num_threads(t) if (t > 1)
    for (int64_t r = 0; r < mb; ++r) {
      float* u = c12 + r * n;
      float* lower = c22 + r * n;
      const float* u3 = c21 + r * n;
      for (int64_t j = 0; j < n2; ++j) {
        u[j] += lower[j] - u3[j];
        lower[j] += bias_[static_cast<size_t>(n2 + j)];
      }
      if (res)
        for (int64_t j = 0; j < n2; ++j) lower[j] += res[(m2 + r) * n + n2 + j];
      if (activation_) stream_gemm::activate(*activation_, lower, n2);
    }
    stream_gemm::gemm(s4_.data(), m2, k2, (*w_)[2], c12, n, last_of(0, 1), t, true);      // C12 = U4 + M3
    if (mb > 0) stream_gemm::gemm(a22, mb, k, (*w_)[3], c21, n, last_of(1, 0), t, true);  // C21 = U3 - M4
    stream_gemm::gemm(a12, m2, k, (*w_)[1], c11, n, last_of(0, 0), t, true);              // C11 = M1 + M2
    if (n % 2 != 0) {  // the last column of an odd N: a plain product, with its bias and what follows
      std::vector<EpilogueStep> steps{{EpilogueStep::Kind::AddRow, bias_.data() + 2 * n2, 0}};
      if (activation_) steps.push_back({*activation_});
      if (res) steps.push_back({EpilogueStep::Kind::AddFull, res + 2 * n2, n});
      stream_gemm::gemm(a, m_, k, (*w_)[7], c + 2 * n2, n, steps, t);
    }
    return {y};
  }

 private:
  static int input_index(const Graph& g, const SubGraph& sub, ValueId v) {
    auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
    if (it == sub.inputs.end()) refuse("'" + g.value(v).name + "' must be a runtime input");
    return static_cast<int>(it - sub.inputs.begin());
  }

  // S1 = A21 + A22, S2 = S1 - A11, S3 = A11 - A21, S4 = A12 - S2 (A21, A22 zero past their rows).
  void form_sums(const float* a) {
    const int64_t k = k_, k2 = k_ / 2, m2 = m2_, mb = mb_;
#pragma omp parallel for num_threads(threads_) if (threads_ > 1)
    for (int64_t r = 0; r < m2; ++r) {
      const float* a11 = a + r * k;
      const float* a12 = a11 + k2;
      const float* a21 = r < mb ? a + (m2 + r) * k : nullptr;
      float *s1 = s1_.data() + r * k2, *s2 = s2_.data() + r * k2, *s3 = s3_.data() + r * k2,
            *s4 = s4_.data() + r * k2;
      for (int64_t j = 0; j < k2; ++j) {
        const float lower = a21 ? a21[j] : 0.0f, lower_right = a21 ? a21[k2 + j] : 0.0f;
        s1[j] = lower + lower_right;
        s2[j] = s1[j] - a11[j];
        s3[j] = a11[j] - lower;
        s4[j] = a12[j] - s2[j];
      }
    }
  }

  // W as [K, N] row-major (Gemm's transB and alpha applied); its quarters combined as
  // {B11, B21, B22, -T4, T1, T2, T3}: T1 = B12 - B11, T2 = B22 - T1, T3 = B22 - B12,
  // T4 = T2 - B21 (the quarters of its first N - N % 2 columns), and for an odd N its last column
  // packed alone. Shared with the other shape buckets' kernels of the same weights. Gemm's C
  // (times beta) becomes the bias.
  void pack(const Graph& g, const Node& h) {
    const Tensor& src = *g.value(h.inputs[1]).constant;
    const bool gemm = h.op_type == "Gemm", trans = gemm && h.attr_int("transB", 0) != 0;
    const float alpha = gemm ? h.attr_float("alpha", 1.0f) : 1.0f;
    const int64_t k = k_, n = n_;
    auto make = [&]() -> std::shared_ptr<const void> {
      std::vector<float> w(static_cast<size_t>(k * n));
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j)
          w[static_cast<size_t>(p * n + j)] = alpha * src.data<float>()[trans ? j * k + p : p * n + j];
      const int64_t k2 = k / 2, n2 = n / 2;
      auto quarter = [&](int64_t row, int64_t col) {
        std::vector<float> q(static_cast<size_t>(k2 * n2));
        for (int64_t p = 0; p < k2; ++p)
          std::copy_n(w.data() + (row * k2 + p) * n + col * n2, n2, q.data() + p * n2);
        return q;
      };
      auto combine = [](const std::vector<float>& x, float sign, const std::vector<float>& y) {
        std::vector<float> out(x.size());
        for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] + sign * y[i];
        return out;
      };
      const std::vector<float> b11 = quarter(0, 0), b12 = quarter(0, 1), b21 = quarter(1, 0),
                               b22 = quarter(1, 1);
      const std::vector<float> t1 = combine(b12, -1, b11), t2 = combine(b22, -1, t1),
                               t3 = combine(b22, -1, b12);
      const std::vector<float> neg_t4 = combine(b21, -1, t2);  // -(T2 - B21)
      auto packed = std::make_shared<std::vector<PackedWeights>>();
      for (const std::vector<float>* q : {&b11, &b21, &b22, &neg_t4, &t1, &t2, &t3})
        packed->push_back(stream_gemm::pack_weights(q->data(), k2, n2, n2, false));
      if (n % 2 != 0) packed->push_back(stream_gemm::pack_weights(w.data() + 2 * n2, k, 1, n, false));
      return packed;
    };
    if (SharedConstants* shared = SharedConstants::current()) {
      const std::string layout = std::string("strassen quarters") + (trans ? " T" : "") +
                                 (alpha != 1.0f ? " alpha=" + std::to_string(alpha) : "");
      w_ = std::static_pointer_cast<const std::vector<PackedWeights>>(shared->find_or_add(src, layout, make));
    } else {
      w_ = std::static_pointer_cast<const std::vector<PackedWeights>>(make());
    }
    if (gemm && h.inputs.size() > 2 && h.inputs[2] != kNoValue)
      add_bias(*g.value(h.inputs[2]).constant, h.attr_float("beta", 1.0f));
  }

  void add_bias(const Tensor& t, float scale) {
    const float* p = t.data<float>();
    for (int64_t j = 0; j < n_; ++j) bias_[static_cast<size_t>(j)] += scale * (t.size() == 1 ? p[0] : p[j]);
  }

  int threads_;
  int64_t k_ = 0, n_ = 0, m_ = 0, m2_ = 0,
          mb_ = 0;  // m2_: the top half's rows (the larger), mb_: the bottom's
  Shape out_shape_;
  std::shared_ptr<const std::vector<PackedWeights>>
      w_;                                         // the seven packed combinations (+ an odd N's last column)
  std::vector<float> bias_;                       // zero when the group has none: one epilogue either way
  std::optional<EpilogueStep::Kind> activation_;  // Relu or a GELU after the bias, if the group has one
  int a_input_ = 0;                               // which kernel input is A
  int residual_input_ = -1;                       // which is the residual added last (-1: none or constant)
  std::optional<Tensor> residual_constant_;       // a constant residual
  std::vector<float> s1_, s2_, s3_, s4_;          // sums of A's quarters, m2_ x k/2 each
};

}  // namespace

const BackendSpec& strassen_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "strassen";
    s.version = "5 (one Winograd-form level over stream-gemm's kernels and epilogue)";
    auto f32 = all_float32();
    for (const char* op_type : {"MatMul", "Gemm"}) {
      PatternPtr head = op(op_type)->where(f32)->where(product_ok);
      PatternPtr bias = op("Add", {head, constant()})->where(bias_add_ok);
      for (PatternPtr body : {head, bias}) {
        s.patterns.push_back(body);
        s.patterns.push_back(op("Relu", {body}));
        s.patterns.push_back(op("Add", {body, wildcard()})->where(residual_add_ok));
      }
    }
    s.patterns.push_back(stream_gemm::gelu_block(product_ok));
    s.limits.max_nodes = 8;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
      return std::make_unique<StrassenKernel>(g, sub, o.threads);
    };
    s.unavailable = [] {
      return stream_gemm::supported() ? std::string() : std::string("this CPU lacks AVX2 or FMA");
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
