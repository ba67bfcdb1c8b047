// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (exported training and
// evaluation graphs): inputs [N, C] or [N, C, d1..dk], integer targets [N] or
// [N, d1..dk], optional per-class weights, reduction none / sum / mean (mean
// divides by the summed weights of the targets not ignored), ignore_index.
// float32 and float64, accumulated in double.
#include <cmath>
#include <limits>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

struct LossShape {
  int64_t n = 0, c = 0, inner = 1;  // inner: the product of d1..dk
};

LossShape loss_shape(const Node& node, const Tensor& x, const Tensor& target) {
  if (x.rank() < 2) invalid(node, "input must be [N, C] or [N, C, d1, ...]");
  if (target.dtype() != DType::Int64 && target.dtype() != DType::Int32)
    invalid(node, std::string("target must be int32 or int64, not ") + dtype_name(target.dtype()));
  if (target.rank() != x.rank() - 1) invalid(node, "target must have rank " + std::to_string(x.rank() - 1));
  LossShape s{x.dim(0), x.dim(1), 1};
  if (target.dim(0) != s.n) invalid(node, "target's batch differs from the input's");
  for (int64_t d = 2; d < x.rank(); ++d) {
    if (target.dim(d - 1) != x.dim(d)) invalid(node, "target's spatial dims differ from the input's");
    s.inner *= x.dim(d);
  }
  return s;
}

// log_prob[n, c, i] -> loss per (n, i), reduced as asked.
Tensor nll(const Node& node, const std::vector<double>& log_prob, const LossShape& s, const Tensor& target,
           const Tensor* weight, DType dtype, TensorAllocator& alloc) {
  const std::string reduction = node.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    invalid(node, "reduction must be none, sum or mean, not '" + reduction + "'");
  const bool has_ignore = node.has_attr("ignore_index");
  const int64_t ignore = node.attr_int("ignore_index", 0);
  std::vector<double> w;
  if (weight) {
    if (weight->rank() != 1 || weight->dim(0) != s.c) invalid(node, "weight must be [C]");
    w = weight->to_double_vector();
  }
  const std::vector<int64_t> t = target.to_int64_vector();
  std::vector<double> loss(t.size());
  double total = 0, weights = 0;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t i = 0; i < s.inner; ++i) {
      const size_t at = static_cast<size_t>(n * s.inner + i);
      const int64_t cls = t[at];
      if (has_ignore && cls == ignore) continue;  // loss 0, weight 0
      if (cls < 0 || cls >= s.c) invalid(node, "target class " + std::to_string(cls) + " is out of range");
      const double wt = w.empty() ? 1.0 : w[static_cast<size_t>(cls)];
      loss[at] = -log_prob[static_cast<size_t>((n * s.c + cls) * s.inner + i)] * wt;
      total += loss[at];
      weights += wt;
    }
  Shape out_shape;
  if (reduction == "none") out_shape = target.shape();
  Tensor y = alloc.allocate(dtype, out_shape);
  auto put = [&](int64_t k, double v) {
    if (dtype == DType::Float64)
      y.data<double>()[k] = v;
    else
      y.data<float>()[k] = static_cast<float>(v);
  };
  if (reduction == "none")
    for (size_t k = 0; k < loss.size(); ++k) put(static_cast<int64_t>(k), loss[k]);
  else
    put(0, reduction == "sum" ? total : total / weights);  // 0/0 = NaN when everything is ignored
  return y;
}

void require_real(const Node& node, const Tensor& x) {
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
    unsupported(node,
                std::string("input has type ") + dtype_name(x.dtype()) + "; supported: float32, float64");
}

std::vector<Tensor> negative_log_likelihood_loss(const Node& node, KernelInputs inputs,
                                                 TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& target = input(node, inputs, 1);
  require_real(node, x);
  LossShape s = loss_shape(node, x, target);
  return {nll(node, x.to_double_vector(), s, target, optional_input(inputs, 2), x.dtype(), alloc)};
}

std::vector<Tensor> softmax_cross_entropy_loss(const Node& node, KernelInputs inputs,
                                               TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& target = input(node, inputs, 1);
  require_real(node, x);
  LossShape s = loss_shape(node, x, target);
  // log_softmax over C, max-shifted.
  std::vector<double> v = x.to_double_vector(), log_prob(v.size());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t c) { return static_cast<size_t>((n * s.c + c) * s.inner + i); };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < s.c; ++c) m = std::max(m, v[at(c)]);
      double sum = 0;
      for (int64_t c = 0; c < s.c; ++c) sum += std::exp(v[at(c)] - m);
      const double lse = m + std::log(sum);
      for (int64_t c = 0; c < s.c; ++c) log_prob[at(c)] = v[at(c)] - lse;
    }
  std::vector<Tensor> out = {nll(node, log_prob, s, target, optional_input(inputs, 2), x.dtype(), alloc)};
  if (node.outputs.size() > 1) {
    Tensor lp = alloc.allocate(x.dtype(), x.shape());
    for (size_t k = 0; k < log_prob.size(); ++k) {
      if (x.dtype() == DType::Float64)
        lp.data<double>()[k] = log_prob[k];
      else
        lp.data<float>()[k] = static_cast<float>(log_prob[k]);
    }
    out.push_back(lp);
  }
  return out;
}

}  // namespace

void register_loss_ops(OpTable& table) {
  table["NegativeLogLikelihoodLoss"] = negative_log_likelihood_loss;
  table["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy_loss;
}

}  // namespace collage::native
