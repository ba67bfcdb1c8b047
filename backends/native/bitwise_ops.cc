// Integer bit ops (BitwiseAnd/Or/Xor/Not, BitShift) and the float
// classification ops IsInf / IsNaN (bool outputs).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

using FloatingTypes = TypeList<float, double>;

struct BitAnd {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct BitOr {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct BitXor {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};

void require_same_dtype(const Node& node, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    invalid(node,
            std::string("input types differ: ") + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
}

template <class Op>
std::vector<Tensor> bitwise_binary(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a = input(node, inputs, 0);
  const Tensor& b = input(node, inputs, 1);
  require_same_dtype(node, a, b);
  Shape shape = broadcast_shapes(node, a.shape(), b.shape());
  Tensor out;
  dispatch(node, a.dtype(), "input", IntTypes{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = alloc.allocate(a.dtype(), shape);
    binary_apply<T, T, T>(a, b, out, Op{});
  });
  return {out};
}

std::vector<Tensor> bitwise_not(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  Tensor out;
  dispatch(node, x.dtype(), "input", IntTypes{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = alloc.allocate(x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0, n = x.size(); i < n; ++i) po[i] = static_cast<T>(~px[i]);
  });
  return {out};
}

// Unsigned inputs only (as ONNX specifies); a shift by the width or more gives 0.
std::vector<Tensor> bit_shift(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a = input(node, inputs, 0);
  const Tensor& b = input(node, inputs, 1);
  require_same_dtype(node, a, b);
  if (!node.has_attr("direction")) invalid(node, "attribute 'direction' is missing");
  const std::string direction = node.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    invalid(node, "attribute direction='" + direction + "' must be LEFT or RIGHT");
  const bool left = direction == "LEFT";
  Shape shape = broadcast_shapes(node, a.shape(), b.shape());
  Tensor out;
  dispatch(node, a.dtype(), "input", TypeList<uint8_t, uint16_t, uint32_t, uint64_t>{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = alloc.allocate(a.dtype(), shape);
    binary_apply<T, T, T>(a, b, out, [left](T x, T s) -> T {
      if (s >= std::numeric_limits<T>::digits) return T(0);
      return left ? static_cast<T>(x << s) : static_cast<T>(x >> s);
    });
  });
  return {out};
}

template <class Pred>
std::vector<Tensor> classify(const Node& node, KernelInputs inputs, TensorAllocator& alloc, Pred pred) {
  const Tensor& x = input(node, inputs, 0);
  Tensor out = alloc.allocate(DType::Bool, x.shape());
  dispatch(node, x.dtype(), "input", FloatingTypes{}, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    bool* po = out.data<bool>();
    for (int64_t i = 0, n = x.size(); i < n; ++i) po[i] = pred(px[i]);
  });
  return {out};
}

std::vector<Tensor> is_inf(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const bool negative = node.attr_int("detect_negative", 1) != 0;
  const bool positive = node.attr_int("detect_positive", 1) != 0;
  return classify(node, inputs, alloc,
                  [=](auto v) { return std::isinf(v) && (v > 0 ? positive : negative); });
}

std::vector<Tensor> is_nan(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  return classify(node, inputs, alloc, [](auto v) { return std::isnan(v); });
}

}  // namespace

void register_bitwise_ops(OpTable& table) {
  table["BitwiseAnd"] = bitwise_binary<BitAnd>;
  table["BitwiseOr"] = bitwise_binary<BitOr>;
  table["BitwiseXor"] = bitwise_binary<BitXor>;
  table["BitwiseNot"] = bitwise_not;
  table["BitShift"] = bit_shift;
  table["IsInf"] = is_inf;
  table["IsNaN"] = is_nan;
}

}  // namespace collage::native
