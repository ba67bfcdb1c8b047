// BatchNormalization (inference and training mode), LayerNormalization, InstanceNormalization,
// Softmax and LogSoftmax (opset-13 semantics: one axis; the importer rewrites older forms).
#include <algorithm>
#include <cmath>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

// Inference: Y from the given mean/var. training_mode=1 (opset 14+): Y from the batch statistics
// (population variance over all axes but 1), and optional outputs
// running_mean/var = input * momentum + batch * (1 - momentum).
std::vector<Tensor> batch_norm(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const bool training = node.attr_int("training_mode", 0) != 0;
  if (node.opset < 14 && node.outputs.size() > 1)
    unsupported(node,
                "training outputs before opset 14 (mean, var, saved_mean, saved_var) are not supported");
  if (!training && node.outputs.size() > 1)
    invalid(node, "running_mean/running_var outputs need training_mode=1");
  const Tensor& x = input(node, inputs, 0);
  require_float(node, x, "X");
  if (x.rank() < 2) invalid(node, "input must have rank >= 2");
  int64_t c = x.dim(1);
  const Tensor* params[4];
  for (size_t i = 0; i < 4; ++i) {
    params[i] = &input(node, inputs, i + 1);
    require_float(node, *params[i], "parameter");
    if (params[i]->size() != c)
      invalid(node, "parameter " + std::to_string(i + 1) + " must have " + std::to_string(c) + " values");
  }
  float eps = node.attr_float("epsilon", 1e-5f);
  Tensor y = alloc.allocate(DType::Float32, x.shape());
  int64_t inner = x.size() / std::max<int64_t>(x.dim(0) * c, 1);
  const float *scale = params[0]->data<float>(), *bias = params[1]->data<float>(),
              *mean = params[2]->data<float>(), *var = params[3]->data<float>();
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  std::vector<float> use_mean(mean, mean + c), use_var(var, var + c);
  if (training) {
    const double count = static_cast<double>(x.dim(0) * inner);
    if (count == 0) invalid(node, "training mode needs a non-empty batch");
    for (int64_t ch = 0; ch < c; ++ch) {
      double sum = 0, sq = 0;
      for (int64_t n = 0; n < x.dim(0); ++n) {
        const float* in = xp + (n * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) sum += in[i];
      }
      const double m = sum / count;
      for (int64_t n = 0; n < x.dim(0); ++n) {
        const float* in = xp + (n * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) sq += (in[i] - m) * (in[i] - m);
      }
      use_mean[static_cast<size_t>(ch)] = static_cast<float>(m);
      use_var[static_cast<size_t>(ch)] = static_cast<float>(sq / count);
    }
  }
  for (int64_t n = 0; n < x.dim(0); ++n)
    for (int64_t ch = 0; ch < c; ++ch) {
      const size_t k = static_cast<size_t>(ch);
      float a = scale[ch] / std::sqrt(use_var[k] + eps), b = bias[ch] - use_mean[k] * a;
      const float* in = xp + (n * c + ch) * inner;
      float* out = yp + (n * c + ch) * inner;
      for (int64_t i = 0; i < inner; ++i) out[i] = in[i] * a + b;
    }
  std::vector<Tensor> outs = {y};
  if (node.outputs.size() > 1) {
    const float momentum = node.attr_float("momentum", 0.9f);
    for (const auto& [given, batch] : {std::pair{mean, &use_mean}, std::pair{var, &use_var}}) {
      Tensor r = alloc.allocate(DType::Float32, {c});
      for (int64_t ch = 0; ch < c; ++ch)
        r.data<float>()[ch] = given[ch] * momentum + (*batch)[static_cast<size_t>(ch)] * (1.0f - momentum);
      outs.push_back(r);
    }
  }
  return outs;
}

// Normalises each row of `inner` elements: y = (x - mean) / sqrt(var + eps) * scale + bias.
std::vector<Tensor> layer_norm(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& scale = input(node, inputs, 1);
  const Tensor* bias = optional_input(inputs, 2);
  require_float(node, x, "X");
  int64_t axis = normalize_axis(node, node.attr_int("axis", -1), x.rank());
  float eps = node.attr_float("epsilon", 1e-5f);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? outer : inner) *= x.dim(d);
  Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  auto check_param = [&](const Tensor& p, const char* what) {
    require_float(node, p, what);
    if (broadcast_shapes(node, norm_shape, p.shape()) != norm_shape)
      invalid(node, std::string(what) + " of shape " + shape_to_string(p.shape()) +
                        " does not broadcast to " + shape_to_string(norm_shape));
  };
  check_param(scale, "Scale");
  if (bias && bias->size() > 0) check_param(*bias, "B");
  auto ss = broadcast_strides(scale.shape(), norm_shape);
  std::vector<int64_t> bs;
  if (bias && bias->size() > 0) bs = broadcast_strides(bias->shape(), norm_shape);
  auto ns = strides_of(norm_shape);
  // Parameter offsets per inner element (handles broadcast parameters).
  std::vector<float> sc(static_cast<size_t>(inner)), bi(static_cast<size_t>(inner), 0.0f);
  for (int64_t i = 0; i < inner; ++i) {
    int64_t so = 0, bo = 0;
    for (size_t d = 0; d < norm_shape.size(); ++d) {
      int64_t idx = (i / ns[d]) % norm_shape[d];
      so += idx * ss[d];
      if (!bs.empty()) bo += idx * bs[d];
    }
    sc[static_cast<size_t>(i)] = scale.data<float>()[so];
    if (!bs.empty()) bi[static_cast<size_t>(i)] = bias->data<float>()[bo];
  }
  Tensor y = alloc.allocate(DType::Float32, x.shape());
  Shape stat_shape = x.shape();
  for (int64_t d = axis; d < x.rank(); ++d) stat_shape[static_cast<size_t>(d)] = 1;
  bool want_mean = node.outputs.size() > 1 && node.outputs[1] != kNoValue;
  bool want_inv = node.outputs.size() > 2 && node.outputs[2] != kNoValue;
  Tensor mean_t = want_mean ? alloc.allocate(DType::Float32, stat_shape) : Tensor();
  Tensor inv_t = want_inv ? alloc.allocate(DType::Float32, stat_shape) : Tensor();
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t r = 0; r < outer; ++r) {
    const float* in = xp + r * inner;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) sum += in[i];
    double mean = sum / static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) sq += (in[i] - mean) * (in[i] - mean);
    double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
    for (int64_t i = 0; i < inner; ++i)
      yp[r * inner + i] =
          static_cast<float>((in[i] - mean) * inv) * sc[static_cast<size_t>(i)] + bi[static_cast<size_t>(i)];
    if (want_mean) mean_t.data<float>()[r] = static_cast<float>(mean);
    if (want_inv) inv_t.data<float>()[r] = static_cast<float>(inv);
  }
  std::vector<Tensor> out = {y};
  if (node.outputs.size() > 1) out.push_back(mean_t);
  if (node.outputs.size() > 2) out.push_back(inv_t);
  return out;
}

std::vector<Tensor> instance_norm(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& scale = input(node, inputs, 1);
  const Tensor& bias = input(node, inputs, 2);
  require_float(node, x, "input");
  if (x.rank() < 3) invalid(node, "input must have rank >= 3");
  int64_t n = x.dim(0), c = x.dim(1), inner = x.size() / std::max<int64_t>(n * c, 1);
  if (scale.size() != c || bias.size() != c) invalid(node, "scale and B must have one value per channel");
  float eps = node.attr_float("epsilon", 1e-5f);
  Tensor y = alloc.allocate(DType::Float32, x.shape());
  for (int64_t p = 0; p < n * c; ++p) {
    const float* in = x.data<float>() + p * inner;
    float* out = y.data<float>() + p * inner;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) sum += in[i];
    double mean = sum / static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) sq += (in[i] - mean) * (in[i] - mean);
    double inv = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
    float s = scale.data<float>()[p % c], b = bias.data<float>()[p % c];
    for (int64_t i = 0; i < inner; ++i) out[i] = static_cast<float>((in[i] - mean) * inv) * s + b;
  }
  return {y};
}

template <bool kLog>
std::vector<Tensor> softmax(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_float(node, x, "input");
  if (x.rank() == 0) invalid(node, "input must have rank >= 1");
  int64_t axis = normalize_axis(node, node.attr_int("axis", -1), x.rank());
  int64_t outer = 1, len = x.dim(axis), inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
  }
  Tensor y = alloc.allocate(DType::Float32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* in = xp + o * len * inner + i;
      float* out = yp + o * len * inner + i;
      float mx = -INFINITY;
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, in[k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(static_cast<double>(in[k * inner] - mx));
      if (kLog) {
        float log_sum = static_cast<float>(std::log(sum));
        for (int64_t k = 0; k < len; ++k) out[k * inner] = in[k * inner] - mx - log_sum;
      } else {
        for (int64_t k = 0; k < len; ++k)
          out[k * inner] = static_cast<float>(std::exp(static_cast<double>(in[k * inner] - mx)) / sum);
      }
    }
  return {y};
}

}  // namespace

void register_norm_ops(OpTable& table) {
  table["BatchNormalization"] = batch_norm;
  table["LayerNormalization"] = layer_norm;
  table["InstanceNormalization"] = instance_norm;
  table["Softmax"] = softmax<false>;
  table["LogSoftmax"] = softmax<true>;
}

}  // namespace collage::native
