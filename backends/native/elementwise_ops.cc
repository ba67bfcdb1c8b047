// Binary (numpy-broadcast) arithmetic, variadic, compare, logic, Where and PRelu.
// Unary math, Clip and Cast are in unary_ops.cc.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

using CompareTypes =
    TypeList<float, double, int64_t, int32_t, int16_t, int8_t, uint8_t, uint16_t, uint32_t, uint64_t, bool>;
using BoolTypes = TypeList<bool>;

struct AddOp {
  explicit AddOp(const Node&) {}
  template <class T>
  T operator()(T a, T b) const {
    return wrapping(a, b, [](auto x, auto y) { return x + y; });
  }
};
struct SubOp {
  explicit SubOp(const Node&) {}
  template <class T>
  T operator()(T a, T b) const {
    return wrapping(a, b, [](auto x, auto y) { return x - y; });
  }
};
struct MulOp {
  explicit MulOp(const Node&) {}
  template <class T>
  T operator()(T a, T b) const {
    return wrapping(a, b, [](auto x, auto y) { return static_cast<decltype(x)>(x * y); });
  }
};
struct DivOp {
  const Node* node;
  explicit DivOp(const Node& n) : node(&n) {}
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) invalid(*node, "integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1))
          return wrapping(T(0), a, [](auto x, auto y) { return x - y; });  // MIN / -1 would trap
      return static_cast<T>(a / b);  // integers truncate toward zero, as ONNX specifies
    } else {
      return a / b;
    }
  }
};
struct ModOp {
  const Node* node;
  bool fmod;
  explicit ModOp(const Node& n) : node(&n), fmod(n.attr_int("fmod", 0) != 0) {}
  template <class T>
  T operator()(T a, T b) const {
    T r;
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) invalid(*node, "integer modulo by zero");
      if constexpr (std::is_unsigned_v<T>) return static_cast<T>(a % b);
      r = b == T(-1) ? T(0) : static_cast<T>(a % b);
    } else {
      r = std::fmod(a, b);
    }
    // fmod=0: the result takes the divisor's sign (Python's %).
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  }
};
// NaN propagates through Max/Min, as in numpy.maximum/minimum.
struct MaxOp {
  explicit MaxOp(const Node&) {}
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return (a > b || std::isnan(a)) ? a : b;
    else
      return a > b ? a : b;
  }
};
struct MinOp {
  explicit MinOp(const Node&) {}
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return (a < b || std::isnan(a)) ? a : b;
    else
      return a < b ? a : b;
  }
};

struct EqualOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct LessOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct GreaterOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct LessOrEqualOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterOrEqualOp {
  template <class T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};

void require_same_dtype(const Node& node, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    invalid(node,
            std::string("input types differ: ") + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
}

template <class Op, class TypeSet>
std::vector<Tensor> binary_kernel(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a = input(node, inputs, 0);
  const Tensor& b = input(node, inputs, 1);
  require_same_dtype(node, a, b);
  Shape shape = broadcast_shapes(node, a.shape(), b.shape());
  Tensor out;
  dispatch(node, a.dtype(), "input", TypeSet{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Op op(node);
    out = alloc.allocate(a.dtype(), shape);
    binary_apply<T, T, T>(a, b, out, op);
  });
  return {out};
}

// Compare and logic ops: same-typed inputs, bool output.
template <class Op, class TypeSet>
std::vector<Tensor> predicate_kernel(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a = input(node, inputs, 0);
  const Tensor& b = input(node, inputs, 1);
  require_same_dtype(node, a, b);
  Shape shape = broadcast_shapes(node, a.shape(), b.shape());
  Tensor out;
  dispatch(node, a.dtype(), "input", TypeSet{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = alloc.allocate(DType::Bool, shape);
    binary_apply<T, T, bool>(a, b, out, Op{});
  });
  return {out};
}

// Max, Min, Sum, Mean: 1..N inputs broadcast together, folded pairwise into the output.
template <class Op, class TypeSet, bool kMean>
std::vector<Tensor> variadic_kernel(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  if (inputs.empty()) invalid(node, "needs at least one input");
  const Tensor& first = input(node, inputs, 0);
  Shape shape = first.shape();
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Tensor& t = input(node, inputs, i);
    require_same_dtype(node, first, t);
    shape = broadcast_shapes(node, shape, t.shape());
  }
  Tensor out;
  dispatch(node, first.dtype(), "input", TypeSet{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Op op(node);
    out = alloc.allocate(first.dtype(), shape);
    strided_copy(first.raw(), 0, broadcast_strides(first.shape(), shape), out.raw(), shape, sizeof(T));
    for (size_t i = 1; i < inputs.size(); ++i) binary_apply<T, T, T>(out, *inputs[i], out, op);
    if constexpr (kMean) {
      T* po = out.data<T>();
      const T count = static_cast<T>(inputs.size());
      for (int64_t k = 0, n = out.size(); k < n; ++k) po[k] /= count;
    }
  });
  return {out};
}

// Integer power by squaring, wrapping on overflow; a negative exponent gives
// the truncated reciprocal (0 unless the base is 1 or -1).
template <class T, class E>
T int_pow(T base, E exp) {
  if constexpr (std::is_signed_v<E>) {
    if (exp < 0) {
      if (base == T(1)) return T(1);
      if constexpr (std::is_signed_v<T>)
        if (base == T(-1)) return (exp % 2 == 0) ? T(1) : T(-1);
      return T(0);
    }
  }
  T result = 1;
  auto e = static_cast<std::make_unsigned_t<E>>(exp);
  while (e) {
    if (e & 1u)
      result = wrapping(result, base, [](auto x, auto y) { return static_cast<decltype(x)>(x * y); });
    base = wrapping(base, base, [](auto x, auto y) { return static_cast<decltype(x)>(x * y); });
    e >>= 1;
  }
  return result;
}

template <class T, class E>
T pow_value(T x, E y) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<E>) return int_pow(x, y);
  if constexpr (std::is_same_v<T, float> && std::is_same_v<E, float>) return std::pow(x, y);
  const double r = std::pow(static_cast<double>(x), static_cast<double>(y));
  if constexpr (std::is_integral_v<T>) {
    // Truncate and saturate like convert_elements; NaN -> 0.
    if (std::isnan(r)) return T(0);
    if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  }
  return static_cast<T>(r);
}

// Output has the base's type (numpy.power(...).astype(base.dtype)).
std::vector<Tensor> pow_kernel(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a = input(node, inputs, 0);
  const Tensor& b = input(node, inputs, 1);
  Shape shape = broadcast_shapes(node, a.shape(), b.shape());
  Tensor out;
  dispatch(node, a.dtype(), "base", ArithTypes{}, [&](auto base_tag) {
    using T = typename decltype(base_tag)::type;
    dispatch(node, b.dtype(), "exponent", ArithTypes{}, [&](auto tag) {
      using E = typename decltype(tag)::type;
      out = alloc.allocate(a.dtype(), shape);
      binary_apply<T, E, T>(a, b, out, [](T x, E y) { return pow_value(x, y); });
    });
  });
  return {out};
}

std::vector<Tensor> prelu(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& slope = input(node, inputs, 1);
  require_float(node, x, "X");
  require_float(node, slope, "slope");
  // Unidirectional: slope broadcasts to X, never the other way.
  if (broadcast_shapes(node, x.shape(), slope.shape()) != x.shape())
    invalid(node, "slope of shape " + shape_to_string(slope.shape()) + " cannot be broadcast to X of shape " +
                      shape_to_string(x.shape()));
  Tensor out = alloc.allocate(DType::Float32, x.shape());
  binary_apply<float, float, float>(x, slope, out, [](float v, float s) { return v < 0.0f ? v * s : v; });
  return {out};
}

std::vector<Tensor> not_kernel(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.dtype() != DType::Bool)
    unsupported(node, std::string("input has type ") + dtype_name(x.dtype()) + "; supported: bool");
  Tensor out = alloc.allocate(DType::Bool, x.shape());
  const bool* px = x.data<bool>();
  bool* po = out.data<bool>();
  for (int64_t i = 0, n = x.size(); i < n; ++i) po[i] = !px[i];
  return {out};
}

template <size_t S>
void where_copy(const Tensor& cond, const Tensor& x, const Tensor& y, Tensor& out) {
  const bool* pc = cond.data<bool>();
  const auto* px = static_cast<const std::byte*>(x.raw());
  const auto* py = static_cast<const std::byte*>(y.raw());
  auto* po = static_cast<std::byte*>(out.raw());
  const Shape& shape = out.shape();
  for_each_row<3>(
      shape,
      {broadcast_strides(cond.shape(), shape), broadcast_strides(x.shape(), shape),
       broadcast_strides(y.shape(), shape)},
      [&](int64_t o, int64_t len, const std::array<int64_t, 3>& off, const std::array<int64_t, 3>& st) {
        for (int64_t j = 0; j < len; ++j) {
          const std::byte* src = pc[off[0] + j * st[0]] ? px + (off[1] + j * st[1]) * int64_t{S}
                                                        : py + (off[2] + j * st[2]) * int64_t{S};
          std::memcpy(po + (o + j) * int64_t{S}, src, S);
        }
      });
}

std::vector<Tensor> where(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& cond = input(node, inputs, 0);
  const Tensor& x = input(node, inputs, 1);
  const Tensor& y = input(node, inputs, 2);
  if (cond.dtype() != DType::Bool)
    invalid(node, std::string("condition has type ") + dtype_name(cond.dtype()) + ", not bool");
  require_same_dtype(node, x, y);
  const size_t elem = element_size(node, x.dtype());
  Shape shape = broadcast_shapes(node, broadcast_shapes(node, cond.shape(), x.shape()), y.shape());
  Tensor out = alloc.allocate(x.dtype(), shape);
  switch (elem) {
    case 1:
      where_copy<1>(cond, x, y, out);
      break;
    case 2:
      where_copy<2>(cond, x, y, out);
      break;
    case 4:
      where_copy<4>(cond, x, y, out);
      break;
    case 8:
      where_copy<8>(cond, x, y, out);
      break;
    default:
      unsupported(node, std::string("type ") + dtype_name(x.dtype()) + " is not supported");
  }
  return {out};
}

}  // namespace

void register_elementwise_ops(OpTable& table) {
  register_unary_ops(table);
  register_bitwise_ops(table);
  register_spectral_ops(table);
  table["Add"] = binary_kernel<AddOp, ArithTypes>;
  table["Sub"] = binary_kernel<SubOp, ArithTypes>;
  table["Mul"] = binary_kernel<MulOp, ArithTypes>;
  table["Div"] = binary_kernel<DivOp, ArithTypes>;
  table["Mod"] = binary_kernel<ModOp, ArithTypes>;
  table["Pow"] = pow_kernel;
  table["PRelu"] = prelu;
  table["Max"] = variadic_kernel<MaxOp, ArithTypes, false>;
  table["Min"] = variadic_kernel<MinOp, ArithTypes, false>;
  table["Sum"] = variadic_kernel<AddOp, ArithTypes, false>;
  table["Mean"] = variadic_kernel<AddOp, TypeList<float, double>, true>;
  table["Equal"] = predicate_kernel<EqualOp, CompareTypes>;
  table["Less"] = predicate_kernel<LessOp, CompareTypes>;
  table["Greater"] = predicate_kernel<GreaterOp, CompareTypes>;
  table["LessOrEqual"] = predicate_kernel<LessOrEqualOp, CompareTypes>;
  table["GreaterOrEqual"] = predicate_kernel<GreaterOrEqualOp, CompareTypes>;
  table["Not"] = not_kernel;
  table["And"] = predicate_kernel<AndOp, BoolTypes>;
  table["Or"] = predicate_kernel<OrOp, BoolTypes>;
  table["Xor"] = predicate_kernel<XorOp, BoolTypes>;
  table["Where"] = where;
}

}  // namespace collage::native
