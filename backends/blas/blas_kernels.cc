#include "backends/blas/blas_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/backend_api/conv_folding.h"

namespace collage::blas {

namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "blas: " + why); }

// One element-wise step after the GEMM: activation or Add of an operand
// expanded to the output's shape (constant at compile time, or a runtime input).
struct EpilogueStep {
  enum class Kind { Add, Relu, Clip, LeakyRelu, Sigmoid, Tanh } kind = Kind::Relu;
  float a = 0, b = 0;           // Clip bounds / LeakyRelu alpha
  std::vector<float> constant;  // expanded Add operand
  int runtime_input = -1;       // Add operand from the kernel's inputs (same shape as output)
};

const Tensor& constant_of(const Graph& g, ValueId v) {
  if (v == kNoValue || !g.value(v).constant) refuse("expected a constant input");
  return *g.value(v).constant;
}

// Broadcast a constant to `shape`, flat.
std::vector<float> expand(const Tensor& t, const Shape& shape) {
  if (t.dtype() != DType::Float32) refuse("non-float constant");
  std::vector<float> out(static_cast<size_t>(shape_size(shape)));
  Shape padded(shape.size() - std::min(shape.size(), t.shape().size()), 1);
  padded.insert(padded.end(), t.shape().begin(), t.shape().end());
  if (padded.size() != shape.size()) refuse("constant of higher rank than the output");
  std::vector<int64_t> own(shape.size(), 1), out_strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) {
    own[d - 1] = own[d] * padded[d];
    out_strides[d - 1] = out_strides[d] * shape[d];
  }
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t idx = (static_cast<int64_t>(i) / out_strides[d]) % shape[d];
      if (padded[d] != 1 && padded[d] != shape[d]) refuse("constant does not broadcast to the output");
      src += (padded[d] == 1 ? 0 : idx) * own[d];
    }
    out[i] = t.data<float>()[src];
  }
  return out;
}

class BlasKernel : public Kernel {
 public:
  enum class Head { Gemm, MatMul, Conv, ConvTranspose };

  BlasKernel(const Graph& g, const SubGraph& sub) : sub_(sub) {
    const Node& head = g.node(sub.node_list[0]);
    input_index_of(g, sub, head.inputs[0]);  // validates the data input is a kernel input
    if (!g.value(head.inputs[0]).shape_known || !g.value(sub.outputs.at(0)).shape_known) {
      setup_rows_decided_at_run_time(g, sub, head);
      return;
    }
    out_shape_ = g.value(sub.outputs.at(0)).shape;
    if (sub.outputs.size() != 1) refuse("one output expected");
    if (head.op_type == "Gemm")
      setup_gemm(g, head);
    else if (head.op_type == "MatMul")
      setup_matmul(g, head);
    else if (head.op_type == "Conv")
      setup_conv(g, head);
    else if (head.op_type == "ConvTranspose")
      setup_conv_transpose(g, head);
    else
      refuse("unsupported head op " + head.op_type);
    ValueId current = g.node(sub.node_list[first_epilogue_ - 1]).outputs[0];
    for (size_t i = first_epilogue_; i < sub.node_list.size(); ++i)
      current = add_epilogue(g, g.node(sub.node_list[i]), current);
    if (current != sub.outputs[0]) refuse("the group is not a single chain");
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    const Tensor& x = *inputs[static_cast<size_t>(data_input_)];
    if (rows_at_run_time_) return {run_rows_decided_at_run_time(x, alloc)};
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    float* out = y.data<float>();
    switch (head_) {
      case Head::Gemm:
        run_gemm(x, inputs, out);
        break;
      case Head::MatMul:
        run_matmul(x, inputs, out);
        break;
      case Head::Conv:
        run_conv(x, out);
        break;
      case Head::ConvTranspose:
        run_conv_transpose(x, out);
        break;
    }
    apply_epilogue(inputs, out, y.size());
    return {y};
  }

 private:
  int input_index_of(const Graph& g, const SubGraph& sub, ValueId v) {
    auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
    if (it == sub.inputs.end()) refuse("input '" + g.value(v).name + "' must be a runtime input");
    return static_cast<int>(it - sub.inputs.begin());
  }

  // A Gemm or MatMul whose rows (proposals, kept boxes) the run decides: x [.., K] times a constant
  // [K, N] weight plus a constant bias row. It runs alone (candidates never group a dynamic node), so
  // there is no epilogue.
  void setup_rows_decided_at_run_time(const Graph& g, const SubGraph& sub, const Node& n) {
    if (sub.node_list.size() != 1) refuse("a node whose shapes the run decides runs alone");
    if (n.op_type != "Gemm" && n.op_type != "MatMul")
      refuse(n.op_type + " with shapes decided at run time (only Gemm and MatMul with constant weights)");
    rows_at_run_time_ = true;
    head_ = n.op_type == "Gemm" ? Head::Gemm : Head::MatMul;
    data_input_ = input_index_of(g, sub, n.inputs[0]);
    if (head_ == Head::Gemm && n.attr_int("transA", 0) != 0) refuse("transA with rows decided at run time");
    trans_b_ = head_ == Head::Gemm && n.attr_int("transB", 0) != 0;
    alpha_ = head_ == Head::Gemm ? n.attr_float("alpha", 1.0f) : 1.0f;
    const Tensor& w = constant_of(g, n.inputs[1]);
    if (w.rank() != 2 || w.dtype() != DType::Float32) refuse("a float32 matrix weight");
    weight_.assign(w.data<float>(), w.data<float>() + w.size());
    k_ = trans_b_ ? w.dim(1) : w.dim(0);
    n_ = trans_b_ ? w.dim(0) : w.dim(1);
    if (head_ == Head::Gemm && n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
      const Tensor& c = constant_of(g, n.inputs[2]);
      if (c.size() != n_ && c.size() != 1) refuse("a bias that is not one row");
      std::vector<float> row = expand(c, {1, n_});
      const float beta = n.attr_float("beta", 1.0f);
      for (float& v : row) v *= beta;
      init_ = std::move(row);
    }
  }

  Tensor run_rows_decided_at_run_time(const Tensor& x, TensorAllocator& alloc) const {
    const bool gemm = head_ == Head::Gemm;
    if (x.rank() < 2 || (gemm && x.rank() != 2) || x.shape().back() != k_)
      throw Error(ErrorKind::InvalidInput, std::string("blas: ") + (gemm ? "Gemm" : "MatMul") + " input " +
                                               shape_to_string(x.shape()) + " does not fit its weight's " +
                                               std::to_string(k_) + " rows");
    Shape out_shape = x.shape();
    out_shape.back() = n_;
    const int64_t m = x.size() / k_;
    Tensor y = alloc.allocate(DType::Float32, out_shape);
    float* out = y.data<float>();
    for (int64_t r = 0; r < m && !init_.empty(); ++r)
      std::memcpy(out + r * n_, init_.data(), static_cast<size_t>(n_) * sizeof(float));
    if (m > 0)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b_ ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                  static_cast<int>(n_), static_cast<int>(k_), alpha_, x.data<float>(), static_cast<int>(k_),
                  weight_.data(), static_cast<int>(trans_b_ ? k_ : n_), init_.empty() ? 0.0f : 1.0f, out,
                  static_cast<int>(n_));
    return y;
  }

  void setup_gemm(const Graph& g, const Node& n) {
    head_ = Head::Gemm;
    data_input_ = input_index_of(g, sub_, n.inputs[0]);
    trans_a_ = n.attr_int("transA", 0) != 0;
    trans_b_ = n.attr_int("transB", 0) != 0;
    alpha_ = n.attr_float("alpha", 1.0f);
    const Tensor& w = constant_of(g, n.inputs[1]);
    weight_.assign(w.data<float>(), w.data<float>() + w.size());
    const Shape& a = g.value(n.inputs[0]).shape;
    m_ = trans_a_ ? a[1] : a[0];
    k_ = trans_a_ ? a[0] : a[1];
    n_ = trans_b_ ? w.dim(0) : w.dim(1);
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
      std::vector<float> c = expand(constant_of(g, n.inputs[2]), {m_, n_});
      float beta = n.attr_float("beta", 1.0f);
      for (float& v : c) v *= beta;
      init_ = std::move(c);
    }
  }

  void setup_matmul(const Graph& g, const Node& n) {
    head_ = Head::MatMul;
    data_input_ = input_index_of(g, sub_, n.inputs[0]);
    const Shape& a = g.value(n.inputs[0]).shape;
    const Value& bv = g.value(n.inputs[1]);
    if (a.size() < 2 || bv.shape.size() < 2) refuse("1-D MatMul operands");
    m_ = a[a.size() - 2];
    k_ = a.back();
    n_ = bv.shape.back();
    batch_ = shape_size(out_shape_) / (m_ * n_);
    a_batch_ = shape_size(a) / (m_ * k_);
    b_batch_ = shape_size(bv.shape) / (k_ * n_);
    // Only plain batching (one side broadcast as a whole) is claimed by the spec.
    if ((a_batch_ != batch_ && a_batch_ != 1) || (b_batch_ != batch_ && b_batch_ != 1))
      refuse("partial batch broadcast");
    if (bv.constant)
      weight_.assign(bv.constant->data<float>(), bv.constant->data<float>() + bv.constant->size());
    else
      b_input_ = input_index_of(g, sub_, n.inputs[1]);
  }

  void setup_conv(const Graph& g, const Node& n) {
    head_ = Head::Conv;
    data_input_ = input_index_of(g, sub_, n.inputs[0]);
    const Shape& x = g.value(n.inputs[0]).shape;
    FoldedConv folded = fold_conv(g, sub_);  // a following BatchNormalization folds into W and b
    first_epilogue_ = folded.nodes_used;
    const Tensor& w = folded.weight;
    bool one_d = x.size() == 3;
    if (x.size() != 4 && !one_d) refuse("only 1-D and 2-D convolutions");
    if (n.attr_string("auto_pad", "NOTSET") != "NOTSET")
      refuse("auto_pad (the spec only claims explicit pads)");
    // 1-D convolutions run as 2-D ones of unit height.
    auto lift = [&](std::vector<int64_t> v, int64_t unit) {
      if (one_d) v.insert(v.begin(), unit);
      return v;
    };
    std::vector<int64_t> unit = one_d ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 1};
    std::vector<int64_t> strides = lift(n.attr_ints("strides", unit), 1),
                         dils = lift(n.attr_ints("dilations", unit), 1);
    std::vector<int64_t> pads =
        n.attr_ints("pads", one_d ? std::vector<int64_t>{0, 0} : std::vector<int64_t>{0, 0, 0, 0});
    if (one_d) pads = {0, pads.at(0), 0, pads.at(1)};
    c_ = x[1];
    h_ = one_d ? 1 : x[2];
    w_ = x.back();
    group_ = n.attr_int("group", 1);
    m_ = w.dim(0);
    kh_ = one_d ? 1 : w.dim(2);
    kw_ = w.shape().back();
    sh_ = strides[0], sw_ = strides[1], dh_ = dils[0], dw_ = dils[1];
    pt_ = pads[0], pl_ = pads[1];
    oh_ = one_d ? 1 : out_shape_[2];
    ow_ = out_shape_.back();
    weight_.assign(w.data<float>(), w.data<float>() + w.size());
    direct_ = kh_ == 1 && kw_ == 1 && sh_ == 1 && sw_ == 1 && pt_ == 0 && pl_ == 0 && oh_ == h_ && ow_ == w_;
    if (folded.bias) init_ = expand(folded.bias->reshaped({m_, 1}), {out_shape_[0], m_, oh_ * ow_});
  }

  // ConvTranspose (2-D) as ONNX Runtime computes it: one GEMM per group gives every
  // input pixel's contribution to a kernel window (Wᵀ · X), col2im adds the windows
  // into the output. A following inference BatchNormalization folds into W and b.
  void setup_conv_transpose(const Graph& g, const Node& n) {
    head_ = Head::ConvTranspose;
    data_input_ = input_index_of(g, sub_, n.inputs[0]);
    const Shape& x = g.value(n.inputs[0]).shape;
    FoldedConv folded = fold_conv(g, sub_);  // a following BatchNormalization folds into W and b
    first_epilogue_ = folded.nodes_used;
    const Tensor& w = folded.weight;
    if (x.size() != 4 || w.rank() != 4) refuse("only 2-D ConvTranspose");
    if (n.attr_string("auto_pad", "NOTSET") != "NOTSET")
      refuse("auto_pad (the spec only claims explicit pads)");
    group_ = n.attr_int("group", 1);
    c_ = x[1], h_ = x[2], w_ = x[3];
    m_ = w.dim(1) * group_;
    kh_ = w.dim(2), kw_ = w.dim(3);
    auto strides = n.attr_ints("strides", {1, 1}), dils = n.attr_ints("dilations", {1, 1}),
         pads = n.attr_ints("pads", {0, 0, 0, 0});
    if (strides.size() != 2 || dils.size() != 2 || pads.size() != 4 || group_ < 1 || c_ % group_ != 0)
      refuse("ConvTranspose attributes");
    sh_ = strides[0], sw_ = strides[1], dh_ = dils[0], dw_ = dils[1], pt_ = pads[0], pl_ = pads[1];
    oh_ = out_shape_[2], ow_ = out_shape_[3];
    weight_.assign(w.data<float>(), w.data<float>() + w.size());
    init_.assign(static_cast<size_t>(shape_size(out_shape_)), 0.0f);
    if (folded.bias) init_ = expand(folded.bias->reshaped({m_, 1}), {out_shape_[0], m_, oh_ * ow_});
  }

  void run_conv_transpose(const Tensor& x, float* out) const {
    const int64_t cg = c_ / group_, mg = m_ / group_, rows = mg * kh_ * kw_, pix = h_ * w_;
    std::vector<float> col(static_cast<size_t>(rows * pix));  // per run: kernels may run concurrently
    std::memcpy(out, init_.data(), init_.size() * sizeof(float));
    for (int64_t bn = 0; bn < out_shape_[0]; ++bn)
      for (int64_t g = 0; g < group_; ++g) {
        // col[rows, pix] = W_gᵀ [rows, cg] · X_g [cg, pix]; W_g is stored [cg, rows].
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(rows), static_cast<int>(pix),
                    static_cast<int>(cg), 1.0f, weight_.data() + g * cg * rows, static_cast<int>(rows),
                    x.data<float>() + (bn * c_ + g * cg) * pix, static_cast<int>(pix), 0.0f, col.data(),
                    static_cast<int>(pix));
        for (int64_t m = 0; m < mg; ++m) {
          float* dst = out + (bn * m_ + g * mg + m) * oh_ * ow_;
          for (int64_t ki = 0; ki < kh_; ++ki)
            for (int64_t kj = 0; kj < kw_; ++kj) {
              const float* row = col.data() + ((m * kh_ + ki) * kw_ + kj) * pix;
              for (int64_t iy = 0; iy < h_; ++iy) {
                int64_t oy = iy * sh_ - pt_ + ki * dh_;
                if (oy < 0 || oy >= oh_) continue;
                for (int64_t ix = 0; ix < w_; ++ix) {
                  int64_t ox = ix * sw_ - pl_ + kj * dw_;
                  if (ox >= 0 && ox < ow_) dst[oy * ow_ + ox] += row[iy * w_ + ix];
                }
              }
            }
        }
      }
  }

  ValueId add_epilogue(const Graph& g, const Node& n, ValueId current) {
    EpilogueStep s;
    const std::string& op = n.op_type;
    if (op == "Add") {
      s.kind = EpilogueStep::Kind::Add;
      ValueId other = n.inputs[0] == current ? n.inputs[1] : n.inputs[0];
      if (n.inputs[0] != current && n.inputs[1] != current) refuse("Add not on the chain");
      if (g.value(other).constant) {
        s.constant = expand(*g.value(other).constant, out_shape_);
      } else {
        if (g.value(other).shape != out_shape_) refuse("residual operand must have the output's shape");
        s.runtime_input = input_index_of(g, sub_, other);
      }
    } else if (op == "Relu") {
      s.kind = EpilogueStep::Kind::Relu;
    } else if (op == "Clip") {
      s.kind = EpilogueStep::Kind::Clip;
      s.a = n.inputs.size() > 1 && n.inputs[1] != kNoValue
                ? constant_of(g, n.inputs[1]).to_double_vector().at(0)
                : -INFINITY;
      s.b = n.inputs.size() > 2 && n.inputs[2] != kNoValue
                ? constant_of(g, n.inputs[2]).to_double_vector().at(0)
                : INFINITY;
    } else if (op == "LeakyRelu") {
      s.kind = EpilogueStep::Kind::LeakyRelu;
      s.a = n.attr_float("alpha", 0.01f);
    } else if (op == "Sigmoid") {
      s.kind = EpilogueStep::Kind::Sigmoid;
    } else if (op == "Tanh") {
      s.kind = EpilogueStep::Kind::Tanh;
    } else {
      refuse("unsupported epilogue op " + op);
    }
    if (n.inputs[0] != current && op != "Add") refuse(op + " not on the chain");
    steps_.push_back(std::move(s));
    return n.outputs[0];
  }

  void run_gemm(const Tensor& a, KernelInputs, float* out) const {
    if (!init_.empty()) std::memcpy(out, init_.data(), init_.size() * sizeof(float));
    cblas_sgemm(CblasRowMajor, trans_a_ ? CblasTrans : CblasNoTrans, trans_b_ ? CblasTrans : CblasNoTrans,
                static_cast<int>(m_), static_cast<int>(n_), static_cast<int>(k_), alpha_, a.data<float>(),
                static_cast<int>(a.dim(1)), weight_.data(), static_cast<int>(trans_b_ ? k_ : n_),
                init_.empty() ? 0.0f : 1.0f, out, static_cast<int>(n_));
  }

  void run_matmul(const Tensor& a, KernelInputs inputs, float* out) const {
    const float* b = b_input_ >= 0 ? inputs[static_cast<size_t>(b_input_)]->data<float>() : weight_.data();
    for (int64_t t = 0; t < batch_; ++t)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m_), static_cast<int>(n_),
                  static_cast<int>(k_), 1.0f, a.data<float>() + (a_batch_ == 1 ? 0 : t) * m_ * k_,
                  static_cast<int>(k_), b + (b_batch_ == 1 ? 0 : t) * k_ * n_, static_cast<int>(n_), 0.0f,
                  out + t * m_ * n_, static_cast<int>(n_));
  }

  void run_conv(const Tensor& x, float* out) const {
    const int64_t cg = c_ / group_, mg = m_ / group_, kk = cg * kh_ * kw_, pix = oh_ * ow_;
    const int64_t batches = out_shape_[0];
    std::vector<float> col(direct_ ? 0
                                   : static_cast<size_t>(kk * pix));  // per run: kernels may run concurrently
    if (!init_.empty()) std::memcpy(out, init_.data(), init_.size() * sizeof(float));
    for (int64_t bn = 0; bn < batches; ++bn)
      for (int64_t g = 0; g < group_; ++g) {
        const float* in = x.data<float>() + (bn * c_ + g * cg) * h_ * w_;
        const float* cols = in;
        if (!direct_) {
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t ki = 0; ki < kh_; ++ki)
              for (int64_t kj = 0; kj < kw_; ++kj) {
                float* row = col.data() + ((c * kh_ + ki) * kw_ + kj) * pix;
                for (int64_t oy = 0; oy < oh_; ++oy) {
                  int64_t iy = oy * sh_ - pt_ + ki * dh_;
                  float* dst = row + oy * ow_;
                  if (iy < 0 || iy >= h_) {
                    std::fill(dst, dst + ow_, 0.0f);
                    continue;
                  }
                  const float* src = in + (c * h_ + iy) * w_;
                  for (int64_t ox = 0; ox < ow_; ++ox) {
                    int64_t ix = ox * sw_ - pl_ + kj * dw_;
                    dst[ox] = ix >= 0 && ix < w_ ? src[ix] : 0.0f;
                  }
                }
              }
          cols = col.data();
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(mg), static_cast<int>(pix),
                    static_cast<int>(kk), 1.0f, weight_.data() + g * mg * kk, static_cast<int>(kk), cols,
                    static_cast<int>(pix), init_.empty() ? 0.0f : 1.0f, out + (bn * m_ + g * mg) * pix,
                    static_cast<int>(pix));
      }
  }

  void apply_epilogue(KernelInputs inputs, float* out, int64_t size) const {
    if (steps_.empty()) return;
    std::vector<const float*> runtime(steps_.size(), nullptr);
    for (size_t s = 0; s < steps_.size(); ++s)
      if (steps_[s].runtime_input >= 0)
        runtime[s] = inputs[static_cast<size_t>(steps_[s].runtime_input)]->data<float>();
    for (int64_t i = 0; i < size; ++i) {
      float v = out[i];
      for (size_t s = 0; s < steps_.size(); ++s) {
        const EpilogueStep& st = steps_[s];
        switch (st.kind) {
          case EpilogueStep::Kind::Add:
            v += runtime[s] ? runtime[s][i] : st.constant[static_cast<size_t>(i)];
            break;
          case EpilogueStep::Kind::Relu:
            v = v > 0 ? v : 0;
            break;
          case EpilogueStep::Kind::Clip:
            v = std::min(std::max(v, st.a), st.b);
            break;
          case EpilogueStep::Kind::LeakyRelu:
            v = v >= 0 ? v : v * st.a;
            break;
          case EpilogueStep::Kind::Sigmoid:
            v = 1.0f / (1.0f + std::exp(-v));
            break;
          case EpilogueStep::Kind::Tanh:
            v = std::tanh(v);
            break;
        }
      }
      out[i] = v;
    }
  }

  SubGraph sub_;
  Head head_ = Head::Gemm;
  Shape out_shape_;
  int data_input_ = 0, b_input_ = -1;
  size_t first_epilogue_ = 1;  // node index where the epilogue starts (2 after a folded BatchNormalization)
  bool trans_a_ = false, trans_b_ = false, direct_ = false;
  bool rows_at_run_time_ = false;  // setup_rows_decided_at_run_time
  float alpha_ = 1.0f;
  int64_t m_ = 0, n_ = 0, k_ = 0, batch_ = 1, a_batch_ = 1, b_batch_ = 1;
  int64_t c_ = 0, h_ = 0, w_ = 0, group_ = 1, kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, pt_ = 0,
          pl_ = 0;
  int64_t oh_ = 0, ow_ = 0;
  std::vector<float> weight_, init_;
  std::vector<EpilogueStep> steps_;
};

}  // namespace

std::unique_ptr<Kernel> compile(const Graph& graph, const SubGraph& sub, const CompileOptions&) {
  for (ValueId v : sub.inputs)
    if (graph.value(v).dtype != DType::Float32) refuse("non-float32 input");
  return std::make_unique<BlasKernel>(graph, sub);
}

std::string library_version() {
  std::istringstream config(openblas_get_config());  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  std::string name, version;
  config >> name >> version;
  return version.empty() ? "unknown" : version;
}

void set_threads(int threads) { openblas_set_num_threads(threads); }

}  // namespace collage::blas
