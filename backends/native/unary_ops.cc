// Elementwise unary kernels, Clip and Cast.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

// Each op is a functor built from the node (to read its attributes once).
struct Relu {
  explicit Relu(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return x < 0.0f ? 0.0f : x;
  }  // keeps NaN
};
struct LeakyRelu {
  float alpha;
  explicit LeakyRelu(const Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <class T>
  T operator()(T x) const {
    return x < 0.0f ? alpha * x : x;
  }
};
struct Elu {
  float alpha;
  explicit Elu(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class T>
  T operator()(T x) const {
    return x < 0.0f ? alpha * std::expm1(x) : x;
  }
};
struct Selu {
  float alpha, gamma;
  explicit Selu(const Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <class T>
  T operator()(T x) const {
    return x <= 0.0f ? gamma * alpha * std::expm1(x) : gamma * x;
  }
};
struct Sigmoid {
  explicit Sigmoid(const Node&) {}
  template <class T>
  T operator()(T x) const {
    // Two branches so exp never overflows.
    if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
    float e = std::exp(x);
    return e / (1.0f + e);
  }
};
struct Tanh {
  explicit Tanh(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};
struct Softplus {
  explicit Softplus(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};
struct Softsign {
  explicit Softsign(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return x / (1.0f + std::fabs(x));
  }
};
float clamp01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }
struct HardSigmoid {
  float alpha, beta;
  explicit HardSigmoid(const Node& n)
      : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <class T>
  T operator()(T x) const {
    return clamp01(alpha * x + beta);
  }
};
struct HardSwish {
  explicit HardSwish(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return x * clamp01(x / 6.0f + 0.5f);
  }
};
struct Erf {
  explicit Erf(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::erf(x);
  }
};
struct Gelu {
  bool tanh_approx;
  explicit Gelu(const Node& n) {
    std::string mode = n.attr_string("approximate", "none");
    if (mode != "none" && mode != "tanh")
      unsupported(n, "attribute approximate='" + mode + "' is not supported");
    tanh_approx = mode == "tanh";
  }
  template <class T>
  T operator()(T x) const {
    if (tanh_approx) {
      const double k = std::sqrt(2.0 / 3.14159265358979323846);
      double xd = x;
      return static_cast<float>(0.5 * xd * (1.0 + std::tanh(k * (xd + 0.044715 * xd * xd * xd))));
    }
    return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
  }
};
struct Exp {
  explicit Exp(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::exp(x);
  }
};
struct Log {
  explicit Log(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::log(x);
  }
};
struct Sqrt {
  explicit Sqrt(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
};
struct Reciprocal {
  explicit Reciprocal(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return 1.0f / x;
  }
};
struct Floor {
  explicit Floor(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::floor(x);
  }
};
struct Ceil {
  explicit Ceil(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::ceil(x);
  }
};
struct Round {
  explicit Round(const Node&) {}
  // The default rounding mode rounds half to even, as ONNX requires.
  template <class T>
  T operator()(T x) const {
    return std::nearbyint(x);
  }
};
struct Shrink {
  float bias, lambd;
  explicit Shrink(const Node& n) : bias(n.attr_float("bias", 0.0f)), lambd(n.attr_float("lambd", 0.5f)) {}
  template <class T>
  T operator()(T x) const {
    return x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0f);
  }
};
struct Sin {
  explicit Sin(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::sin(x);
  }
};
struct Cos {
  explicit Cos(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::cos(x);
  }
};
struct Tan {
  explicit Tan(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::tan(x);
  }
};
struct Asin {
  explicit Asin(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::asin(x);
  }
};
struct Acos {
  explicit Acos(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::acos(x);
  }
};
struct Atan {
  explicit Atan(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::atan(x);
  }
};
struct Sinh {
  explicit Sinh(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::sinh(x);
  }
};
struct Cosh {
  explicit Cosh(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::cosh(x);
  }
};
struct Asinh {
  explicit Asinh(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::asinh(x);
  }
};
struct Acosh {
  explicit Acosh(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::acosh(x);
  }
};
struct Atanh {
  explicit Atanh(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return std::atanh(x);
  }
};
struct Celu {
  float alpha;
  explicit Celu(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {
    if (alpha == 0.0f) invalid(n, "attribute alpha must not be 0");
  }
  template <class T>
  T operator()(T x) const {
    return x > 0.0f ? x : alpha * std::expm1(x / alpha);
  }
};
struct ThresholdedRelu {
  float alpha;
  explicit ThresholdedRelu(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <class T>
  T operator()(T x) const {
    return x > alpha ? x : 0.0f;
  }
};
struct Mish {
  explicit Mish(const Node&) {}
  template <class T>
  T operator()(T x) const {
    const double xd = x;
    const double softplus = xd > 0.0 ? xd + std::log1p(std::exp(-xd)) : std::log1p(std::exp(xd));
    return static_cast<float>(xd * std::tanh(softplus));
  }
};

// Ops also defined on integers: integer negation wraps (two's complement) instead of overflowing.
template <class T>
T wrapping_neg(T x) {
  if constexpr (std::is_integral_v<T>)
    return wrapping(T(0), x, [](auto a, auto b) { return a - b; });
  else
    return -x;
}
struct Neg {
  explicit Neg(const Node&) {}
  template <class T>
  T operator()(T x) const {
    return wrapping_neg(x);
  }
};
struct Abs {
  explicit Abs(const Node&) {}
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>)
      return x;
    else if constexpr (std::is_integral_v<T>)
      return x < 0 ? wrapping_neg(x) : x;
    else
      return std::fabs(x);
  }
};
struct Sign {
  explicit Sign(const Node&) {}
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>)
      return x > T(0) ? T(1) : T(0);
    else
      return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x);
  }
};

// float64 computes in double: PyTorch exports and ONNX's expanded functions use it.
using UnaryTypes = TypeList<float, double>;

template <class Op, class TypeSet>
std::vector<Tensor> unary_kernel(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  Tensor out;
  dispatch(node, x.dtype(), "input", TypeSet{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Op op(node);
    out = alloc.allocate(x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0, n = x.size(); i < n; ++i) po[i] = op(px[i]);
  });
  return {out};
}

// One bound of Clip converted to T; `fallback` when the input is omitted.
template <class T>
T clip_bound(const Node& node, const Tensor* bound, const char* role, T fallback) {
  if (bound == nullptr) return fallback;
  if (bound->size() != 1)
    invalid(node, std::string(role) + " must be a scalar, got shape " + shape_to_string(bound->shape()));
  T value{};
  convert_elements(node, bound->dtype(), bound->raw(), dtype_of<T>(), &value, 1);
  return value;
}

std::vector<Tensor> clip(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  Tensor out;
  dispatch(node, x.dtype(), "input", ArithTypes{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Infinite defaults for float, so an absent bound leaves +-inf untouched.
    using Limits = std::numeric_limits<T>;
    const T lo = clip_bound<T>(node, optional_input(inputs, 1), "min",
                               Limits::has_infinity ? -Limits::infinity() : Limits::lowest());
    const T hi = clip_bound<T>(node, optional_input(inputs, 2), "max",
                               Limits::has_infinity ? Limits::infinity() : Limits::max());
    out = alloc.allocate(x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* po = out.data<T>();
    // max then min, like numpy.clip: with min > max everything becomes max.
    for (int64_t i = 0, n = x.size(); i < n; ++i) {
      T v = px[i] < lo ? lo : px[i];
      po[i] = v > hi ? hi : v;
    }
  });
  return {out};
}

// Cast/CastLike to bfloat16 keep the top 16 bits of the float32 value (truncation): ONNX 1.16's
// Cast test data is generated that way. Storage conversions elsewhere (float_to_bfloat16) round
// to nearest even, which is the better choice for computed values. NaN stays a quiet NaN.
uint16_t truncate_to_bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>(bits >> 16);
}

Tensor cast_to(const Node& node, const Tensor& x, DType to, TensorAllocator& alloc) {
  Tensor out = alloc.allocate(to, x.shape());
  if (to == DType::BFloat16 && x.dtype() != DType::BFloat16) {
    std::vector<float> wide(static_cast<size_t>(x.size()));
    convert_elements(node, x.dtype(), x.raw(), DType::Float32, wide.data(), x.size());
    auto* bits = static_cast<uint16_t*>(out.raw());
    for (size_t i = 0; i < wide.size(); ++i) bits[i] = truncate_to_bfloat16(wide[i]);
    return out;
  }
  convert_elements(node, x.dtype(), x.raw(), to, out.raw(), x.size());
  return out;
}

std::vector<Tensor> cast(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (!node.has_attr("to")) invalid(node, "attribute 'to' is missing");
  int64_t code = node.attr_int("to", 0);
  DType to = DType::Undefined;
  try {
    to = dtype_from_onnx(static_cast<int>(code));
  } catch (const Error&) {
    unsupported(node, "cast to ONNX element type " + std::to_string(code) + " is not supported");
  }
  return {cast_to(node, x, to, alloc)};
}

std::vector<Tensor> cast_like(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  return {cast_to(node, input(node, inputs, 0), input(node, inputs, 1).dtype(), alloc)};
}

}  // namespace

void register_unary_ops(OpTable& table) {
  table["Relu"] = unary_kernel<Relu, UnaryTypes>;
  table["LeakyRelu"] = unary_kernel<LeakyRelu, UnaryTypes>;
  table["Elu"] = unary_kernel<Elu, UnaryTypes>;
  table["Selu"] = unary_kernel<Selu, UnaryTypes>;
  table["Sigmoid"] = unary_kernel<Sigmoid, UnaryTypes>;
  table["Tanh"] = unary_kernel<Tanh, UnaryTypes>;
  table["Softplus"] = unary_kernel<Softplus, UnaryTypes>;
  table["Softsign"] = unary_kernel<Softsign, UnaryTypes>;
  table["HardSigmoid"] = unary_kernel<HardSigmoid, UnaryTypes>;
  table["HardSwish"] = unary_kernel<HardSwish, UnaryTypes>;
  table["Erf"] = unary_kernel<Erf, UnaryTypes>;
  table["Gelu"] = unary_kernel<Gelu, UnaryTypes>;
  table["Exp"] = unary_kernel<Exp, UnaryTypes>;
  table["Log"] = unary_kernel<Log, UnaryTypes>;
  table["Sqrt"] = unary_kernel<Sqrt, UnaryTypes>;
  table["Reciprocal"] = unary_kernel<Reciprocal, UnaryTypes>;
  table["Floor"] = unary_kernel<Floor, UnaryTypes>;
  table["Ceil"] = unary_kernel<Ceil, UnaryTypes>;
  table["Round"] = unary_kernel<Round, UnaryTypes>;
  table["Shrink"] = unary_kernel<Shrink, UnaryTypes>;
  table["Sin"] = unary_kernel<Sin, UnaryTypes>;
  table["Cos"] = unary_kernel<Cos, UnaryTypes>;
  table["Tan"] = unary_kernel<Tan, UnaryTypes>;
  table["Asin"] = unary_kernel<Asin, UnaryTypes>;
  table["Acos"] = unary_kernel<Acos, UnaryTypes>;
  table["Atan"] = unary_kernel<Atan, UnaryTypes>;
  table["Sinh"] = unary_kernel<Sinh, UnaryTypes>;
  table["Cosh"] = unary_kernel<Cosh, UnaryTypes>;
  table["Asinh"] = unary_kernel<Asinh, UnaryTypes>;
  table["Acosh"] = unary_kernel<Acosh, UnaryTypes>;
  table["Atanh"] = unary_kernel<Atanh, UnaryTypes>;
  table["Celu"] = unary_kernel<Celu, UnaryTypes>;
  table["ThresholdedRelu"] = unary_kernel<ThresholdedRelu, UnaryTypes>;
  table["Mish"] = unary_kernel<Mish, UnaryTypes>;
  table["Neg"] = unary_kernel<Neg, ArithTypes>;
  table["Abs"] = unary_kernel<Abs, ArithTypes>;
  table["Sign"] = unary_kernel<Sign, ArithTypes>;
  table["Clip"] = clip;
  table["Cast"] = cast;
  table["CastLike"] = cast_like;
}

}  // namespace collage::native
