#include <cmath>
#include <cstdint>
#include <limits>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

template <size_t S>
void strided_copy_sized(const std::byte* src, int64_t offset, const std::vector<int64_t>& src_strides,
                        std::byte* dst, const Shape& out_shape) {
  for_each_row<1>(
      out_shape, {src_strides},
      [&](int64_t o, int64_t len, const std::array<int64_t, 1>& off, const std::array<int64_t, 1>& st) {
        const std::byte* s = src + (offset + off[0]) * static_cast<int64_t>(S);
        std::byte* d = dst + o * static_cast<int64_t>(S);
        if (st[0] == 1) {
          std::memcpy(d, s, static_cast<size_t>(len) * S);
          return;
        }
        // Fixed-size memcpy compiles to one load/store, without aliasing concerns.
        const int64_t step = st[0] * static_cast<int64_t>(S);
        for (int64_t j = 0; j < len; ++j) std::memcpy(d + j * static_cast<int64_t>(S), s + j * step, S);
      });
}

// Float -> integer conversion without the undefined behaviour of out-of-range casts.
template <class To, class From>
To convert_value(From v) {
  if constexpr (std::is_same_v<From, Float16Bits>) {
    return convert_value<To>(half_to_float(v.bits));
  } else if constexpr (std::is_same_v<From, BFloat16Bits>) {
    return convert_value<To>(bfloat16_to_float(v.bits));
  } else if constexpr (std::is_same_v<To, Float16Bits>) {
    return Float16Bits{float_to_half(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<To, BFloat16Bits>) {
    return BFloat16Bits{float_to_bfloat16(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To(0);
    const double d = std::trunc(static_cast<double>(v));
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
    if (d <= lo) return std::numeric_limits<To>::min();
    if (d >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

using CastTypes = TypeList<float, double, int64_t, int32_t, int16_t, int8_t, uint8_t, uint16_t, uint32_t,
                           uint64_t, bool, Float16Bits, BFloat16Bits>;

}  // namespace

void strided_copy(const void* src, int64_t offset, const std::vector<int64_t>& src_strides, void* dst,
                  const Shape& out_shape, size_t elem_size) {
  const auto* s = static_cast<const std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
  switch (elem_size) {
    case 1:
      strided_copy_sized<1>(s, offset, src_strides, d, out_shape);
      break;
    case 2:
      strided_copy_sized<2>(s, offset, src_strides, d, out_shape);
      break;
    case 4:
      strided_copy_sized<4>(s, offset, src_strides, d, out_shape);
      break;
    case 8:
      strided_copy_sized<8>(s, offset, src_strides, d, out_shape);
      break;
    default:
      throw Error(ErrorKind::Internal, "strided_copy: element size " + std::to_string(elem_size));
  }
}

void convert_elements(const Node& node, DType from, const void* src, DType to, void* dst, int64_t n) {
  dispatch(node, from, "source", CastTypes{}, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch(node, to, "target", CastTypes{}, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* s = static_cast<const From*>(src);
      To* d = static_cast<To*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = convert_value<To>(s[i]);
    });
  });
}

std::vector<int64_t> int_values(const Node& node, const Tensor& t, const char* role) {
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    unsupported(node, std::string(role) + " has type " + dtype_name(t.dtype()) + "; supported: int64, int32");
  return t.to_int64_vector();
}

size_t element_size(const Node& node, DType dtype) {
  size_t size = dtype_size(dtype);
  if (size == 0)
    unsupported(node, std::string("tensors of type ") + dtype_name(dtype) + " are not supported");
  return size;
}

}  // namespace collage::native
