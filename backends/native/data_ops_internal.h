// Shared machinery of the data kernels (elementwise, shape and tensor ops):
// dtype dispatch, broadcast iteration and byte-level strided copies.
#pragma once

#include <array>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

// Further registration functions of the data kernels, called from the three
// register_* functions declared in native_ops.h.
void register_unary_ops(OpTable& table);      // unary_ops.cc: unary math, Clip, Cast, CastLike
void register_generator_ops(OpTable& table);  // generator_ops.cc: Constant, ConstantOfShape, Range
void register_pad_ops(OpTable& table);        // pad_ops.cc: Pad, DepthToSpace, SpaceToDepth
void register_bitwise_ops(OpTable& table);    // bitwise_ops.cc: Bitwise*, BitShift, IsInf, IsNaN
void register_spectral_ops(OpTable& table);   // spectral_ops.cc: *Window, MelWeightMatrix, DFT, STFT

template <class... Ts>
struct TypeList {};

using FloatTypes = TypeList<float>;
// float64 too: PyTorch-exported models and ONNX's own tests use it; every
// integer width ONNX's arithmetic/compare ops allow.
using ArithTypes =
    TypeList<float, double, int64_t, int32_t, int16_t, int8_t, uint8_t, uint16_t, uint32_t, uint64_t>;
using IntTypes = TypeList<int64_t, int32_t, int16_t, int8_t, uint8_t, uint16_t, uint32_t, uint64_t>;

// Integer arithmetic that wraps like numpy instead of overflowing (signed
// overflow is undefined; small types would promote to signed int).
template <class T, class F>
T wrapping(T a, T b, F f) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(f(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return f(a, b);
  }
}

// Calls f(std::type_identity<T>{}) for the T among Ts matching `dtype`; Unsupported otherwise.
template <class... Ts, class F>
void dispatch(const Node& node, DType dtype, const char* role, TypeList<Ts...>, F&& f) {
  bool done = ((dtype == dtype_of<Ts>() ? (f(std::type_identity<Ts>{}), true) : false) || ...);
  if (!done) {
    std::string names;
    ((names += (names.empty() ? "" : ", ") + std::string(dtype_name(dtype_of<Ts>()))), ...);
    unsupported(node, std::string(role) + " has type " + dtype_name(dtype) + "; supported: " + names);
  }
}

// Merges dims that are contiguous for every operand and drops size-1 dims, so
// the innermost row is as long as possible. Returns the reduced output shape.
template <size_t N>
Shape coalesce_dims(const Shape& out, std::array<std::vector<int64_t>, N>& strides) {
  Shape dims;
  std::array<std::vector<int64_t>, N> merged;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool can_merge = !dims.empty();
    for (size_t i = 0; i < N && can_merge; ++i) can_merge = merged[i].back() == strides[i][d] * out[d];
    if (can_merge) {
      dims.back() *= out[d];
      for (size_t i = 0; i < N; ++i) merged[i].back() = strides[i][d];
    } else {
      dims.push_back(out[d]);
      for (size_t i = 0; i < N; ++i) merged[i].push_back(strides[i][d]);
    }
  }
  strides = std::move(merged);
  return dims;
}

// Walks an output of shape `out` whose N operands are read with element
// `strides` (one per output dim; 0 broadcasts, negative walks backwards).
// Calls row(out_index, length, offsets, steps) once per innermost row: element
// j of the row is output out_index + j and operand i's offsets[i] + j * steps[i].
template <size_t N, class Row>
void for_each_row(const Shape& out, std::array<std::vector<int64_t>, N> strides, Row&& row) {
  if (shape_size(out) == 0) return;
  Shape dims = coalesce_dims<N>(out, strides);
  std::array<int64_t, N> offsets{};
  std::array<int64_t, N> steps{};
  if (dims.empty()) {
    row(int64_t{0}, int64_t{1}, offsets, steps);
    return;
  }
  const size_t rank = dims.size();
  const int64_t inner = dims[rank - 1];
  for (size_t i = 0; i < N; ++i) steps[i] = strides[i][rank - 1];
  const int64_t total = shape_size(dims);
  std::vector<int64_t> index(rank, 0);
  for (int64_t o = 0; o < total; o += inner) {
    row(o, inner, offsets, steps);
    for (size_t d = rank - 1; d-- > 0;) {
      for (size_t i = 0; i < N; ++i) offsets[i] += strides[i][d];
      if (++index[d] < dims[d]) break;
      for (size_t i = 0; i < N; ++i) offsets[i] -= strides[i][d] * dims[d];
      index[d] = 0;
    }
  }
}

// out[k] = f(a[..], b[..]) with numpy broadcasting of a and b to out.shape().
template <class A, class B, class R, class F>
void binary_apply(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  R* po = out.data<R>();
  const int64_t n = out.size();
  if (a.size() == n && b.size() == n && a.shape() == b.shape()) {
    for (int64_t k = 0; k < n; ++k) po[k] = f(pa[k], pb[k]);
  } else if (b.size() == 1 && a.size() == n) {
    const B v = pb[0];
    for (int64_t k = 0; k < n; ++k) po[k] = f(pa[k], v);
  } else if (a.size() == 1 && b.size() == n) {
    const A v = pa[0];
    for (int64_t k = 0; k < n; ++k) po[k] = f(v, pb[k]);
  } else {
    const Shape& shape = out.shape();
    for_each_row<2>(
        shape, {broadcast_strides(a.shape(), shape), broadcast_strides(b.shape(), shape)},
        [&](int64_t o, int64_t len, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st) {
          for (int64_t j = 0; j < len; ++j) po[o + j] = f(pa[off[0] + j * st[0]], pb[off[1] + j * st[1]]);
        });
  }
}

// Copies elements of `elem_size` bytes: dst[k] = src[offset + sum_d index_d * src_strides[d]]
// over `out_shape` (strides in elements; 0 broadcasts, negative reverses).
void strided_copy(const void* src, int64_t offset, const std::vector<int64_t>& src_strides, void* dst,
                  const Shape& out_shape, size_t elem_size);

// Converts n elements between numeric/bool dtypes (float->int truncates toward
// zero and saturates, NaN -> 0; ->bool is x != 0). Unsupported for others.
void convert_elements(const Node& node, DType from, const void* src, DType to, void* dst, int64_t n);

// The values of an integer (int64 or int32) tensor; Unsupported for other dtypes.
std::vector<int64_t> int_values(const Node& node, const Tensor& t, const char* role);

// Element bytes of `dtype`; Unsupported when it has none (string, undefined).
size_t element_size(const Node& node, DType dtype);

}  // namespace collage::native
