// Random-number ops (RandomUniform(Like), RandomNormal(Like), Bernoulli) and
// training-mode Dropout. A `seed` attribute makes a node's draws repeatable; without
// one each run draws anew from a process-wide generator. The importer never folds
// these into constants. Values cannot match another runtime's generator: only the
// distribution, shapes and dtypes are specified.
#include <cmath>
#include <mutex>
#include <random>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

std::mt19937_64 generator_for(const Node& node) {
  if (auto it = node.attrs.find("seed"); it != node.attrs.end()) {
    // A float for the Random* ops, an int for Dropout.
    const double seed = it->second.kind == AttrKind::Float ? it->second.f : static_cast<double>(it->second.i);
    return std::mt19937_64(static_cast<uint64_t>(seed * 1000003.0));
  }
  static std::mutex mutex;
  static std::mt19937_64 shared(0x5eed);
  std::lock_guard<std::mutex> lock(mutex);
  return std::mt19937_64(shared());
}

DType output_dtype(const Node& node, DType fallback) {
  if (!node.has_attr("dtype")) return fallback;
  const int64_t t = node.attr_int("dtype", 1);
  if (t == 1) return DType::Float32;
  if (t == 11) return DType::Float64;
  unsupported(node, "dtype " + std::to_string(t) + " is not supported (float32, float64)");
}

Tensor fill(const Node& node, DType dtype, const Shape& shape, TensorAllocator& alloc,
            const std::function<double(std::mt19937_64&)>& draw) {
  if (dtype != DType::Float32 && dtype != DType::Float64)
    unsupported(node,
                std::string("output type ") + dtype_name(dtype) + " is not supported (float32, float64)");
  Tensor y = alloc.allocate(dtype, shape);
  std::mt19937_64 gen = generator_for(node);
  for (int64_t i = 0; i < y.size(); ++i) {
    double v = draw(gen);
    if (dtype == DType::Float64)
      y.data<double>()[i] = v;
    else
      y.data<float>()[i] = static_cast<float>(v);
  }
  return y;
}

std::function<double(std::mt19937_64&)> uniform(const Node& node) {
  std::uniform_real_distribution<double> d(node.attr_float("low", 0.0f), node.attr_float("high", 1.0f));
  return [d](std::mt19937_64& g) mutable { return d(g); };
}

std::function<double(std::mt19937_64&)> normal(const Node& node) {
  std::normal_distribution<double> d(node.attr_float("mean", 0.0f), node.attr_float("scale", 1.0f));
  return [d](std::mt19937_64& g) mutable { return d(g); };
}

Shape shape_attr(const Node& node) {
  Shape s = node.attr_ints("shape");
  for (int64_t d : s)
    if (d < 0) invalid(node, "shape must not hold negative dims");
  return s;
}

std::vector<Tensor> random_uniform(const Node& node, KernelInputs, TensorAllocator& alloc) {
  return {fill(node, output_dtype(node, DType::Float32), shape_attr(node), alloc, uniform(node))};
}
std::vector<Tensor> random_normal(const Node& node, KernelInputs, TensorAllocator& alloc) {
  return {fill(node, output_dtype(node, DType::Float32), shape_attr(node), alloc, normal(node))};
}
std::vector<Tensor> random_uniform_like(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  return {fill(node, output_dtype(node, x.dtype()), x.shape(), alloc, uniform(node))};
}
std::vector<Tensor> random_normal_like(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  return {fill(node, output_dtype(node, x.dtype()), x.shape(), alloc, normal(node))};
}

// Bernoulli(p): 1 with probability p[i], else 0.
std::vector<Tensor> bernoulli(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& p = input(node, inputs, 0);
  const std::vector<double> prob = p.to_double_vector();
  size_t i = 0;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  return {fill(node, output_dtype(node, p.dtype()), p.shape(), alloc,
               [&](std::mt19937_64& g) { return u(g) < prob[i++] ? 1.0 : 0.0; })};
}

// Dropout(data, ratio, training_mode): in training mode keeps each element with
// probability 1 - ratio and scales it by 1 / (1 - ratio); otherwise the identity.
std::vector<Tensor> dropout(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  bool training = false;
  if (const Tensor* t = optional_input(inputs, 2)) {
    if (t->size() != 1) invalid(node, "training_mode must be a scalar");
    training = t->to_int64_vector()[0] != 0;
  }
  double ratio = 0.5;
  if (const Tensor* r = optional_input(inputs, 1)) {
    if (r->size() != 1) invalid(node, "ratio must be a scalar");
    ratio = r->to_double_vector()[0];
  }
  if (training && !(ratio >= 0 && ratio < 1)) invalid(node, "ratio must be in [0, 1)");
  Tensor mask = alloc.allocate(DType::Bool, data.shape());
  std::vector<Tensor> outs;
  if (!training || ratio == 0) {
    std::fill_n(mask.data<bool>(), mask.size(), true);
    outs.push_back(data);  // consumers never write their inputs
  } else {
    if (data.dtype() != DType::Float32 && data.dtype() != DType::Float64)
      unsupported(node, std::string("training mode on ") + dtype_name(data.dtype()) + " is not supported");
    std::mt19937_64 gen = generator_for(node);
    std::bernoulli_distribution keep(1.0 - ratio);
    const std::vector<double> v = data.to_double_vector();
    Tensor y = alloc.allocate(data.dtype(), data.shape());
    for (int64_t i = 0; i < data.size(); ++i) {
      bool k = keep(gen);
      mask.data<bool>()[i] = k;
      double out = k ? v[static_cast<size_t>(i)] / (1.0 - ratio) : 0.0;
      if (data.dtype() == DType::Float64)
        y.data<double>()[i] = out;
      else
        y.data<float>()[i] = static_cast<float>(out);
    }
    outs.push_back(y);
  }
  if (node.outputs.size() >= 2) outs.push_back(mask);
  return outs;
}

}  // namespace

void register_random_ops(OpTable& table) {
  table["RandomUniform"] = random_uniform;
  table["RandomNormal"] = random_normal;
  table["RandomUniformLike"] = random_uniform_like;
  table["RandomNormalLike"] = random_normal_like;
  table["Bernoulli"] = bernoulli;
  table["Dropout"] = dropout;  // replaces tensor_ops' inference-only form (registered after it)
}

}  // namespace collage::native
