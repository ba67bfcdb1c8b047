// Indexing kernels: GatherElements, GatherND (batch_dims), ScatterElements and
// ScatterND (opset 18 reductions none/add/mul/max/min; the importer maps the
// deprecated Scatter onto ScatterElements) and Trilu.
// Invariants: element moves are byte copies, so any fixed-size dtype works;
// reductions need an arithmetic dtype. Indices (int32/int64) may be negative
// (counted from the end); out-of-range indices are InvalidInput, never UB.
#include <cstring>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

using ReduceTypes = TypeList<float, double, int64_t, int32_t, int16_t, int8_t, uint8_t>;

std::vector<int64_t> index_values(const Node& node, const Tensor& t) {
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32) invalid(node, "indices must be int32 or int64");
  return t.to_int64_vector();
}

int64_t fix_index(const Node& node, int64_t i, int64_t dim) {
  if (i < -dim || i >= dim)
    throw Error(ErrorKind::InvalidInput, node.describe() + ": index " + std::to_string(i) +
                                             " is out of range for a dimension of " + std::to_string(dim));
  return i < 0 ? i + dim : i;
}

size_t elem_size(const Node& node, const Tensor& t) {
  size_t s = dtype_size(t.dtype());
  if (s == 0) unsupported(node, std::string("data has type ") + dtype_name(t.dtype()));
  return s;
}

// Visits the elements of `shape` in row-major order, k = 0, 1, ..., with the offset their coordinates
// give under `strides` leaving out the coordinate on `axis` (the caller adds the index it reads there).
// Counts coordinates like an odometer: a division per element and dimension made ScatterElements
// over a detector's 150x256x7x7 RoI features take 44 ms.
template <class Fn>
void for_each_off_axis(const Shape& shape, const std::vector<int64_t>& strides, int64_t axis, Fn&& fn) {
  const int64_t total = shape_size(shape);
  std::vector<int64_t> coord(shape.size(), 0);
  int64_t base = 0;
  for (int64_t k = 0; k < total; ++k) {
    fn(k, base);
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t step = static_cast<int64_t>(d) == axis ? 0 : strides[d];
      if (++coord[d] < shape[d]) {
        base += step;
        break;
      }
      base -= (shape[d] - 1) * step;
      coord[d] = 0;
    }
  }
}

// One element of `size` bytes, src to dst: a fixed-size copy the compiler inlines.
inline void move_element(std::byte* dst, const std::byte* src, size_t size) {
  switch (size) {
    case 4:
      std::memcpy(dst, src, 4);
      break;
    case 8:
      std::memcpy(dst, src, 8);
      break;
    case 2:
      std::memcpy(dst, src, 2);
      break;
    case 1:
      *dst = *src;
      break;
    default:
      std::memcpy(dst, src, size);
  }
}

std::vector<Tensor> gather_elements(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const Tensor& indices = input(node, inputs, 1);
  const int64_t rank = data.rank();
  if (indices.rank() != rank) invalid(node, "indices must have the rank of data");
  const int64_t axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d)) invalid(node, "indices are larger than data off the axis");
  auto idx = index_values(node, indices);
  size_t es = elem_size(node, data);
  Tensor out = alloc.allocate(data.dtype(), indices.shape());
  auto ds = strides_of(data.shape());
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  const int64_t axis_dim = data.dim(axis), axis_stride = ds[static_cast<size_t>(axis)];
  for_each_off_axis(indices.shape(), ds, axis, [&](int64_t k, int64_t base) {
    const int64_t off = base + fix_index(node, idx[static_cast<size_t>(k)], axis_dim) * axis_stride;
    move_element(dst + static_cast<size_t>(k) * es, src + static_cast<size_t>(off) * es, es);
  });
  return {out};
}

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const Node& node) {
  std::string r = node.attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  invalid(node, "reduction='" + r + "' is not one of none, add, mul, max, min");
}

// Writes `count` elements from src into dst (element offsets), combining per `red`.
void combine(const Node& node, Reduction red, Tensor& out, int64_t dst_off, const Tensor& updates,
             int64_t src_off, int64_t count) {
  if (red == Reduction::None) {
    size_t es = dtype_size(out.dtype());
    std::memcpy(static_cast<std::byte*>(out.raw()) + static_cast<size_t>(dst_off) * es,
                static_cast<const std::byte*>(updates.raw()) + static_cast<size_t>(src_off) * es,
                static_cast<size_t>(count) * es);
    return;
  }
  dispatch(node, out.dtype(), "data", ReduceTypes{}, [&]<class T>(std::type_identity<T>) {
    T* d = out.data<T>() + dst_off;
    const T* s = updates.data<T>() + src_off;
    for (int64_t i = 0; i < count; ++i) {
      switch (red) {
        case Reduction::Add:
          d[i] = static_cast<T>(d[i] + s[i]);
          break;
        case Reduction::Mul:
          d[i] = static_cast<T>(d[i] * s[i]);
          break;
        case Reduction::Max:
          d[i] = std::max(d[i], s[i]);
          break;
        case Reduction::Min:
          d[i] = std::min(d[i], s[i]);
          break;
        case Reduction::None:
          break;
      }
    }
  });
}

Tensor copy_of(const Tensor& data, TensorAllocator& alloc) {
  Tensor out = alloc.allocate(data.dtype(), data.shape());
  if (data.bytes()) std::memcpy(out.raw(), data.raw(), data.bytes());
  return out;
}

std::vector<Tensor> scatter_elements(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const Tensor& indices = input(node, inputs, 1);
  const Tensor& updates = input(node, inputs, 2);
  const int64_t rank = data.rank();
  if (indices.rank() != rank) invalid(node, "indices must have the rank of data");
  if (updates.shape() != indices.shape()) invalid(node, "updates must have the shape of indices");
  if (updates.dtype() != data.dtype()) invalid(node, "updates must have the type of data");
  const int64_t axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d)) invalid(node, "indices are larger than data off the axis");
  Reduction red = reduction_of(node);
  const size_t es = elem_size(node, data);
  auto idx = index_values(node, indices);
  Tensor out = copy_of(data, alloc);
  auto ds = strides_of(data.shape());
  const int64_t axis_dim = data.dim(axis), axis_stride = ds[static_cast<size_t>(axis)];
  auto* dst = static_cast<std::byte*>(out.raw());
  const auto* src = static_cast<const std::byte*>(updates.raw());
  for_each_off_axis(indices.shape(), ds, axis, [&](int64_t k, int64_t base) {
    const int64_t off = base + fix_index(node, idx[static_cast<size_t>(k)], axis_dim) * axis_stride;
    if (red == Reduction::None)
      move_element(dst + static_cast<size_t>(off) * es, src + static_cast<size_t>(k) * es, es);
    else
      combine(node, red, out, off, updates, k, 1);
  });
  return {out};
}

std::vector<Tensor> gather_nd(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const Tensor& indices = input(node, inputs, 1);
  const int64_t b = node.attr_int("batch_dims", 0);
  const int64_t r = data.rank(), q = indices.rank();
  if (b < 0 || b >= std::min(r, q))
    invalid(node, "batch_dims must be in [0, min(rank(data), rank(indices)))");
  if (q < 1) invalid(node, "indices must have rank >= 1");
  const int64_t k = indices.dim(q - 1);
  if (k < 1 || k > r - b) invalid(node, "indices' last dimension must be in [1, rank(data) - batch_dims]");
  for (int64_t d = 0; d < b; ++d)
    if (data.dim(d) != indices.dim(d)) invalid(node, "batch dimensions of data and indices differ");
  Shape out_shape;
  for (int64_t d = 0; d < q - 1; ++d) out_shape.push_back(indices.dim(d));
  int64_t slice = 1;
  for (int64_t d = b + k; d < r; ++d) {
    out_shape.push_back(data.dim(d));
    slice *= data.dim(d);
  }
  int64_t batches = 1;
  for (int64_t d = 0; d < b; ++d) batches *= data.dim(d);
  int64_t per_batch = 1;  // index tuples per batch
  for (int64_t d = b; d < q - 1; ++d) per_batch *= indices.dim(d);
  auto idx = index_values(node, indices);
  size_t es = elem_size(node, data);
  auto ds = strides_of(data.shape());
  const int64_t data_batch = b ? ds[static_cast<size_t>(b - 1)] : data.size();
  Tensor out = alloc.allocate(data.dtype(), out_shape);
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t bt = 0; bt < batches; ++bt)
    for (int64_t t = 0; t < per_batch; ++t) {
      int64_t tuple = bt * per_batch + t;
      int64_t off = bt * data_batch;
      for (int64_t j = 0; j < k; ++j)
        off += fix_index(node, idx[static_cast<size_t>(tuple * k + j)], data.dim(b + j)) *
               ds[static_cast<size_t>(b + j)];
      std::memcpy(dst + static_cast<size_t>(tuple * slice) * es, src + static_cast<size_t>(off) * es,
                  static_cast<size_t>(slice) * es);
    }
  return {out};
}

std::vector<Tensor> scatter_nd(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const Tensor& indices = input(node, inputs, 1);
  const Tensor& updates = input(node, inputs, 2);
  const int64_t r = data.rank(), q = indices.rank();
  if (q < 1) invalid(node, "indices must have rank >= 1");
  const int64_t k = indices.dim(q - 1);
  if (k < 1 || k > r) invalid(node, "indices' last dimension must be in [1, rank(data)]");
  if (updates.dtype() != data.dtype()) invalid(node, "updates must have the type of data");
  Shape want;
  for (int64_t d = 0; d < q - 1; ++d) want.push_back(indices.dim(d));
  int64_t slice = 1;
  for (int64_t d = k; d < r; ++d) {
    want.push_back(data.dim(d));
    slice *= data.dim(d);
  }
  if (updates.shape() != want) invalid(node, "updates must have shape indices.shape[:-1] + data.shape[k:]");
  Reduction red = reduction_of(node);
  elem_size(node, data);
  auto idx = index_values(node, indices);
  auto ds = strides_of(data.shape());
  Tensor out = copy_of(data, alloc);
  const int64_t tuples = indices.size() / k;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j)
      off += fix_index(node, idx[static_cast<size_t>(t * k + j)], data.dim(j)) * ds[static_cast<size_t>(j)];
    combine(node, red, out, off, updates, t * slice, slice);
  }
  return {out};
}

std::vector<Tensor> trilu(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor* k_t = optional_input(inputs, 1);
  if (x.rank() < 2) invalid(node, "input must have rank >= 2");
  int64_t k = 0;
  if (k_t && k_t->size() > 0) {
    if (k_t->size() != 1) invalid(node, "k must be a scalar");
    k = k_t->to_int64_vector()[0];
  }
  const bool upper = node.attr_int("upper", 1) != 0;
  size_t es = elem_size(node, x);
  Tensor out = copy_of(x, alloc);
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  k = std::clamp(k, -rows - 1, cols + 1);  // beyond the matrix every k acts alike; no overflow below
  const int64_t mats = (rows != 0 && cols != 0) ? x.size() / (rows * cols) : 0;
  auto* p = static_cast<std::byte*>(out.raw());
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) std::memset(p + static_cast<size_t>((m * rows + i) * cols + j) * es, 0, es);
      }
  return {out};
}

}  // namespace

void register_index_ops(OpTable& table) {
  table["GatherElements"] = gather_elements;
  table["GatherND"] = gather_nd;
  table["ScatterElements"] = scatter_elements;
  table["ScatterND"] = scatter_nd;
  table["Trilu"] = trilu;
}

}  // namespace collage::native
