// ArgMax/ArgMin (segmentation and classification heads) and CumSum. The
// comparisons read through double, which holds every float32/int32 value and
// int64 up to 2^53; CumSum accumulates in the input's own type.
#include <cstring>
#include <limits>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

int64_t scalar_int(const Node& node, const Tensor& t, const char* role) {
  if (t.size() != 1) invalid(node, std::string(role) + " must hold one value");
  return t.to_int64_vector()[0];
}

// ArgMax / ArgMin along `axis`: int64 indices, first (or with select_last_index, last) extreme.
template <bool kMax>
std::vector<Tensor> arg_extreme(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.dtype() == DType::Bool || dtype_size(x.dtype()) == 0)
    unsupported(node, "input type is not supported");
  const int64_t axis = normalize_axis(node, node.attr_int("axis", 0), std::max<int64_t>(x.rank(), 1));
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool last = node.attr_int("select_last_index", 0) != 0;
  if (x.rank() == 0) invalid(node, "input must have rank 1 or more");
  const int64_t n = x.dim(axis);
  if (n == 0) invalid(node, "cannot take the arg-extreme of an empty axis");
  Shape out_shape;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
    if (d != axis)
      out_shape.push_back(x.dim(d));
    else if (keepdims)
      out_shape.push_back(1);
  }
  Tensor y = alloc.allocate(DType::Int64, out_shape);
  const std::vector<double> v = x.to_double_vector();
  int64_t* out = y.data<int64_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t best = 0;
      double best_v = v[static_cast<size_t>(o * n * inner + in)];
      for (int64_t j = 1; j < n; ++j) {
        double c = v[static_cast<size_t>((o * n + j) * inner + in)];
        bool better = kMax ? (c > best_v || (last && c == best_v)) : (c < best_v || (last && c == best_v));
        if (better) best = j, best_v = c;
      }
      out[o * inner + in] = best;
    }
  return {y};
}

// CumSum(x, axis) with exclusive / reverse.
template <class T>
void cumsum_typed(const Tensor& x, Tensor& y, int64_t axis, bool exclusive, bool reverse) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
  }
  const int64_t n = x.dim(axis);
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      T acc = 0;
      for (int64_t s = 0; s < n; ++s) {
        const int64_t j = reverse ? n - 1 - s : s;
        const int64_t at = (o * n + j) * inner + in;
        if (exclusive) {
          yp[at] = acc;
          acc += xp[at];
        } else {
          acc += xp[at];
          yp[at] = acc;
        }
      }
    }
}

std::vector<Tensor> cumsum(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.rank() == 0) invalid(node, "input must have rank 1 or more");
  const Tensor& axis_t = input(node, inputs, 1);
  if (axis_t.dtype() != DType::Int64 && axis_t.dtype() != DType::Int32)
    invalid(node, "axis must be an int32 or int64 tensor");
  const int64_t axis = normalize_axis(node, scalar_int(node, axis_t, "axis"), x.rank());
  const bool exclusive = node.attr_int("exclusive", 0) != 0, reverse = node.attr_int("reverse", 0) != 0;
  Tensor y = alloc.allocate(x.dtype(), x.shape());
  switch (x.dtype()) {
    case DType::Float32:
      cumsum_typed<float>(x, y, axis, exclusive, reverse);
      break;
    case DType::Float64:
      cumsum_typed<double>(x, y, axis, exclusive, reverse);
      break;
    case DType::Int32:
      cumsum_typed<int32_t>(x, y, axis, exclusive, reverse);
      break;
    case DType::Int64:
      cumsum_typed<int64_t>(x, y, axis, exclusive, reverse);
      break;
    default:
      unsupported(node, std::string("input has type ") + dtype_name(x.dtype()) +
                            "; supported: float32, float64, int32, int64");
  }
  return {y};
}

}  // namespace

void register_arg_ops(OpTable& table) {
  table["ArgMax"] = arg_extreme<true>;
  table["ArgMin"] = arg_extreme<false>;
  table["CumSum"] = cumsum;
}

}  // namespace collage::native
