// Hardmax, LRN, MeanVarianceNormalization and GroupNormalization: float32, computed in double.
// Hardmax before opset 13 works on the input coerced to 2-D at `axis` (rows of
// everything from `axis` on); from 13 on along `axis` alone.
#include <cmath>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

Tensor float_like(const Tensor& x, const std::vector<double>& v, TensorAllocator& alloc) {
  Tensor y = alloc.allocate(DType::Float32, x.shape());
  float* out = y.data<float>();
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<float>(v[i]);
  return y;
}

std::vector<Tensor> hardmax(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_float(node, x, "input");
  if (x.rank() == 0) invalid(node, "input must have rank 1 or more");
  const bool legacy = node.opset < 13;
  const int64_t axis = normalize_axis(node, node.attr_int("axis", legacy ? 1 : -1), x.rank());
  // Rows of `n` elements `inner` apart: the axis alone (13+), or all dims from the axis (before).
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis)
      outer *= x.dim(d);
    else if (d == axis || legacy)
      n *= x.dim(d);
    else
      inner *= x.dim(d);
  }
  const std::vector<double> v = x.to_double_vector();
  std::vector<double> y(v.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < n; ++j)
        if (v[static_cast<size_t>((o * n + j) * inner + i)] >
            v[static_cast<size_t>((o * n + best) * inner + i)])
          best = j;
      if (n > 0) y[static_cast<size_t>((o * n + best) * inner + i)] = 1.0;
    }
  return {float_like(x, y, alloc)};
}

// y = x / (bias + alpha / size · Σ x² over the channel window)^beta.
std::vector<Tensor> lrn(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_float(node, x, "input");
  if (x.rank() < 3) invalid(node, "input must be [N, C, D1, ...]");
  const int64_t size = node.attr_int("size", 0);
  if (size < 1) invalid(node, "size must be a positive integer");
  const double alpha = node.attr_float("alpha", 1e-4f), beta = node.attr_float("beta", 0.75f),
               bias = node.attr_float("bias", 1.0f);
  const int64_t c_count = x.dim(1), inner = x.size() / (x.dim(0) * std::max<int64_t>(c_count, 1));
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  const std::vector<double> v = x.to_double_vector();
  std::vector<double> y(v.size());
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t c = 0; c < c_count; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(c_count - 1, c + hi); ++k) {
          double e = v[static_cast<size_t>((n * c_count + k) * inner + i)];
          sq += e * e;
        }
        const size_t at = static_cast<size_t>((n * c_count + c) * inner + i);
        y[at] = v[at] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
      }
  return {float_like(x, y, alloc)};
}

// (x − E[x]) / (√(E[x²] − E[x]²) + 1e-9) over `axes` (default N, H, W), as ONNX's function body.
std::vector<Tensor> mean_variance_normalization(const Node& node, KernelInputs inputs,
                                                TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_float(node, x, "input");
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
  for (int64_t a : node.attr_ints("axes", {0, 2, 3}))
    reduced[static_cast<size_t>(normalize_axis(node, a, x.rank()))] = true;
  const auto xs = strides_of(x.shape());
  Shape kept;
  for (int64_t d = 0; d < x.rank(); ++d) kept.push_back(reduced[static_cast<size_t>(d)] ? 1 : x.dim(d));
  const auto ks = strides_of(kept);
  const int64_t groups = shape_size(kept);
  const std::vector<double> v = x.to_double_vector();
  std::vector<double> sum(static_cast<size_t>(groups)), sq(static_cast<size_t>(groups));
  std::vector<size_t> group_of(v.size());
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t g = 0;
    for (int64_t d = 0; d < x.rank(); ++d)
      if (!reduced[static_cast<size_t>(d)])
        g += ((i / xs[static_cast<size_t>(d)]) % x.dim(d)) * ks[static_cast<size_t>(d)];
    group_of[static_cast<size_t>(i)] = static_cast<size_t>(g);
    sum[static_cast<size_t>(g)] += v[static_cast<size_t>(i)];
    sq[static_cast<size_t>(g)] += v[static_cast<size_t>(i)] * v[static_cast<size_t>(i)];
  }
  const double count = groups ? static_cast<double>(x.size()) / static_cast<double>(groups) : 1.0;
  std::vector<double> y(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const double mean = sum[group_of[i]] / count, var = sq[group_of[i]] / count - mean * mean;
    y[i] = (v[i] - mean) / (std::sqrt(std::max(var, 0.0)) + 1e-9);
  }
  return {float_like(x, y, alloc)};
}

// GroupNormalization: per (sample, group of C / num_groups channels) mean and variance,
// then scale and bias per channel (opset 21) or per group (opset 18).
std::vector<Tensor> group_normalization(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& scale = input(node, inputs, 1);
  const Tensor& bias = input(node, inputs, 2);
  require_float(node, x, "X");
  if (x.rank() < 2) invalid(node, "X must be [N, C, ...]");
  const int64_t groups = node.attr_int("num_groups", 0), c = x.dim(1);
  if (groups < 1 || c % groups != 0) invalid(node, "num_groups must divide the channel count");
  const bool per_channel = node.opset >= 21;
  const int64_t params = per_channel ? c : groups;
  if (scale.size() != params || bias.size() != params)
    invalid(node, "scale and bias must hold " + std::to_string(params) + " values");
  const double eps = node.attr_float("epsilon", 1e-5f);
  const int64_t n = x.dim(0), inner = x.size() / std::max<int64_t>(n * c, 1),
                per_group = (c / groups) * inner;
  const std::vector<double> v = x.to_double_vector(), sc = scale.to_double_vector(),
                            bi = bias.to_double_vector();
  std::vector<double> y(v.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const size_t base = static_cast<size_t>((b * groups + g) * per_group);
      double mean = 0, var = 0;
      for (int64_t i = 0; i < per_group; ++i) mean += v[base + static_cast<size_t>(i)];
      mean /= static_cast<double>(per_group);
      for (int64_t i = 0; i < per_group; ++i)
        var += (v[base + static_cast<size_t>(i)] - mean) * (v[base + static_cast<size_t>(i)] - mean);
      var /= static_cast<double>(per_group);
      const double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < per_group; ++i) {
        const int64_t ch = g * (c / groups) + i / inner;
        const size_t k = static_cast<size_t>(per_channel ? ch : g);
        y[base + static_cast<size_t>(i)] = (v[base + static_cast<size_t>(i)] - mean) * inv * sc[k] + bi[k];
      }
    }
  return {float_like(x, y, alloc)};
}

}  // namespace

void register_local_norm_ops(OpTable& table) {
  table["GroupNormalization"] = group_normalization;
  table["Hardmax"] = hardmax;
  table["LRN"] = lrn;
  table["MeanVarianceNormalization"] = mean_variance_normalization;
}

}  // namespace collage::native
