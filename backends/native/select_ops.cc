// Selection and data-movement kernels: EyeLike, OneHot, TopK, Compress, NonZero,
// ReverseSequence, Unique (four outputs, sorted or first-occurrence order, with
// or without axis) and CenterCropPad.
// Invariants: element moves are byte copies (any fixed-size dtype); ops that
// compare values dispatch on the arithmetic dtypes. Ties keep the lower index
// (TopK), hostile sizes and indices are InvalidModel/InvalidInput, never UB.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

using OrderTypes = TypeList<float, double, int64_t, int32_t, int16_t, int8_t, uint8_t>;

size_t elem_bytes(const Node& node, DType t) {
  size_t s = dtype_size(t);
  if (s == 0) unsupported(node, std::string("type ") + dtype_name(t) + " is not supported");
  return s;
}

// Writes the value 1 of `dtype` into element `i`.
void set_one(const Node& node, Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Float32:
      t.data<float>()[i] = 1;
      break;
    case DType::Float64:
      t.data<double>()[i] = 1;
      break;
    case DType::Int64:
      t.data<int64_t>()[i] = 1;
      break;
    case DType::Int32:
      t.data<int32_t>()[i] = 1;
      break;
    case DType::Int16:
      t.data<int16_t>()[i] = 1;
      break;
    case DType::Int8:
      t.data<int8_t>()[i] = 1;
      break;
    case DType::UInt8:
    case DType::Bool:
      static_cast<uint8_t*>(t.raw())[i] = 1;
      break;
    case DType::UInt16:
      t.data<uint16_t>()[i] = 1;
      break;
    case DType::UInt32:
      t.data<uint32_t>()[i] = 1;
      break;
    case DType::UInt64:
      t.data<uint64_t>()[i] = 1;
      break;
    default:
      unsupported(node, std::string("output type ") + dtype_name(t.dtype()) + " is not supported");
  }
}

std::vector<Tensor> eye_like(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.rank() != 2) invalid(node, "input must be 2-D");
  DType dt = x.dtype();
  if (node.attrs.count("dtype")) {
    int64_t v = node.attr_int("dtype", 1);
    if (v < 1 || v > 13 || v == 8) unsupported(node, "dtype " + std::to_string(v) + " is not supported");
    dt = static_cast<DType>(v);
  }
  const int64_t k = node.attr_int("k", 0);
  Tensor y = alloc.allocate(dt, x.shape());
  if (y.bytes()) std::memset(y.raw(), 0, y.bytes());
  const int64_t rows = x.dim(0), cols = x.dim(1);
  for (int64_t i = 0; i < rows; ++i) {
    if (k > cols || k < -rows) break;
    int64_t j = i + k;
    if (j >= 0 && j < cols) set_one(node, y, i * cols + j);
  }
  return {y};
}

std::vector<Tensor> one_hot(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& indices = input(node, inputs, 0);
  const Tensor& depth_t = input(node, inputs, 1);
  const Tensor& values = input(node, inputs, 2);
  if (depth_t.size() != 1) invalid(node, "depth must be a scalar");
  if (values.size() != 2) invalid(node, "values must hold [off_value, on_value]");
  const double depth_d = depth_t.to_double_vector()[0];
  if (!(depth_d >= 1) || depth_d > 1e9)
    throw Error(ErrorKind::InvalidInput, node.describe() + ": depth must be in [1, 1e9]");
  const auto depth = static_cast<int64_t>(depth_d);
  const int64_t out_rank = indices.rank() + 1;
  const int64_t axis = normalize_axis(node, node.attr_int("axis", -1), out_rank);
  Shape out_shape = indices.shape();
  out_shape.insert(out_shape.begin() + axis, depth);
  auto idx = indices.to_double_vector();
  size_t es = elem_bytes(node, values.dtype());
  Tensor y = alloc.allocate(values.dtype(), out_shape);
  const auto* off = static_cast<const std::byte*>(values.raw());
  const auto* on = off + es;
  auto* dst = static_cast<std::byte*>(y.raw());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= indices.dim(d);
  for (int64_t d = axis; d < indices.rank(); ++d) inner *= indices.dim(d);
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t c = 0; c < depth; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double v = idx[static_cast<size_t>(a * inner + i)];
        int64_t hot = -1;
        if (v >= -depth_d && v < depth_d) {
          hot = static_cast<int64_t>(v);
          if (hot < 0) hot += depth;
        }
        std::memcpy(dst + static_cast<size_t>((a * depth + c) * inner + i) * es, hot == c ? on : off, es);
      }
  return {y};
}

std::vector<Tensor> top_k(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& k_t = input(node, inputs, 1);
  if (k_t.size() != 1) invalid(node, "K must hold one value");
  const int64_t axis = normalize_axis(node, node.attr_int("axis", -1), x.rank());
  const int64_t k = k_t.to_int64_vector()[0];
  const int64_t n = x.dim(axis);
  if (k < 0 || k > n) throw Error(ErrorKind::InvalidInput, node.describe() + ": K is outside [0, axis size]");
  const bool largest = node.attr_int("largest", 1) != 0;
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = k;
  Tensor values = alloc.allocate(x.dtype(), out_shape);
  Tensor indices = alloc.allocate(DType::Int64, out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  dispatch(node, x.dtype(), "X", OrderTypes{}, [&]<class T>(std::type_identity<T>) {
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    int64_t* ip = indices.data<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        const T* row = xp + a * n * inner + i;
        std::iota(order.begin(), order.end(), 0);
        auto before = [&](int64_t l, int64_t r) {
          T lv = row[l * inner], rv = row[r * inner];
          if (lv == rv) return l < r;
          return largest ? lv > rv : lv < rv;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          int64_t o = (a * k + j) * inner + i;
          vp[o] = row[order[static_cast<size_t>(j)] * inner];
          ip[o] = order[static_cast<size_t>(j)];
        }
      }
  });
  return {values, indices};
}

std::vector<Tensor> compress(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& cond_t = input(node, inputs, 1);
  if (cond_t.rank() != 1) invalid(node, "condition must be 1-D");
  auto cond = cond_t.to_double_vector();
  const bool has_axis = node.attrs.count("axis") != 0;
  Shape shape = has_axis ? x.shape() : Shape{x.size()};
  const int64_t axis = has_axis ? normalize_axis(node, node.attr_int("axis", 0), x.rank()) : 0;
  const int64_t n = shape[static_cast<size_t>(axis)];
  if (static_cast<int64_t>(cond.size()) > n) invalid(node, "condition is longer than the axis");
  std::vector<int64_t> keep;
  for (size_t i = 0; i < cond.size(); ++i)
    if (cond[i] != 0) keep.push_back(static_cast<int64_t>(i));
  Shape out_shape = shape;
  out_shape[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
  size_t es = elem_bytes(node, x.dtype());
  Tensor y = alloc.allocate(x.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  const auto kept = static_cast<int64_t>(keep.size());
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t j = 0; j < kept; ++j)
      std::memcpy(dst + static_cast<size_t>((a * kept + j) * inner) * es,
                  src + static_cast<size_t>((a * n + keep[static_cast<size_t>(j)]) * inner) * es,
                  static_cast<size_t>(inner) * es);
  return {y};
}

bool is_nonzero(const Tensor& x, int64_t i, size_t es) {
  if (x.dtype() == DType::Float32) return x.data<float>()[i] != 0;
  if (x.dtype() == DType::Float64) return x.data<double>()[i] != 0;
  if (x.dtype() == DType::Float16) return (static_cast<const uint16_t*>(x.raw())[i] & 0x7fff) != 0;
  const auto* p = static_cast<const std::byte*>(x.raw()) + static_cast<size_t>(i) * es;
  for (size_t b = 0; b < es; ++b)
    if (p[b] != std::byte{0}) return true;
  return false;
}

std::vector<Tensor> non_zero(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  size_t es = elem_bytes(node, x.dtype());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.size(); ++i)
    if (is_nonzero(x, i, es)) hits.push_back(i);
  const int64_t rank = x.rank(), nnz = static_cast<int64_t>(hits.size());
  Tensor y = alloc.allocate(DType::Int64, {rank, nnz});
  auto st = strides_of(x.shape());
  int64_t* yp = y.data<int64_t>();
  for (int64_t j = 0; j < nnz; ++j)
    for (int64_t d = 0; d < rank; ++d)
      yp[d * nnz + j] = (hits[static_cast<size_t>(j)] / st[static_cast<size_t>(d)]) % x.dim(d);
  return {y};
}

std::vector<Tensor> reverse_sequence(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& lens_t = input(node, inputs, 1);
  if (x.rank() < 2) invalid(node, "input must have rank >= 2");
  const int64_t batch_axis = normalize_axis(node, node.attr_int("batch_axis", 1), x.rank());
  const int64_t time_axis = normalize_axis(node, node.attr_int("time_axis", 0), x.rank());
  if (batch_axis == time_axis || batch_axis > 1 || time_axis > 1)
    invalid(node, "batch_axis and time_axis must be 0 and 1 in some order");
  auto lens = lens_t.to_int64_vector();
  if (static_cast<int64_t>(lens.size()) != x.dim(batch_axis))
    invalid(node, "sequence_lens needs one per batch");
  for (int64_t l : lens)
    if (l < 0 || l > x.dim(time_axis))
      throw Error(ErrorKind::InvalidInput, node.describe() + ": sequence_lens value out of range");
  size_t es = elem_bytes(node, x.dtype());
  Tensor y = alloc.allocate(x.dtype(), x.shape());
  auto st = strides_of(x.shape());
  int64_t inner = x.rank() > 2 ? st[1] : 1;
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  for (int64_t b = 0; b < x.dim(batch_axis); ++b)
    for (int64_t t = 0; t < x.dim(time_axis); ++t) {
      int64_t from = t < lens[static_cast<size_t>(b)] ? lens[static_cast<size_t>(b)] - 1 - t : t;
      auto at = [&](int64_t tt) { return batch_axis == 0 ? b * st[0] + tt * st[1] : tt * st[0] + b * st[1]; };
      std::memcpy(dst + static_cast<size_t>(at(t)) * es, src + static_cast<size_t>(at(from)) * es,
                  static_cast<size_t>(inner) * es);
    }
  return {y};
}

std::vector<Tensor> unique(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const bool has_axis = node.attrs.count("axis") != 0;
  const bool sorted = node.attr_int("sorted", 1) != 0;
  Shape shape = has_axis ? x.shape() : Shape{x.size()};
  const int64_t axis = has_axis ? normalize_axis(node, node.attr_int("axis", 0), x.rank()) : 0;
  const int64_t n = shape[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<int64_t> first;  // representative slice index per unique, output order
  std::vector<int64_t> inverse(static_cast<size_t>(n));
  std::vector<int64_t> counts;
  dispatch(node, x.dtype(), "X", OrderTypes{}, [&]<class T>(std::type_identity<T>) {
    const T* p = x.data<T>();
    auto cmp = [&](int64_t l, int64_t r) {  // -1, 0, 1 lexicographic over the slice
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t i = 0; i < inner; ++i) {
          T lv = p[(a * n + l) * inner + i], rv = p[(a * n + r) * inner + i];
          if (lv < rv) return -1;
          if (rv < lv) return 1;
        }
      return 0;
    };
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return cmp(l, r) < 0; });
    // Groups of equal slices; the group's first member (stable sort) is its first occurrence.
    std::vector<int64_t> group_of(static_cast<size_t>(n));
    std::vector<int64_t> group_first, group_count;
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
        group_first.push_back(order[i]);
        group_count.push_back(0);
      }
      group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(group_first.size()) - 1;
      ++group_count.back();
    }
    std::vector<int64_t> rank_of(group_first.size());
    std::vector<int64_t> groups(group_first.size());
    std::iota(groups.begin(), groups.end(), 0);
    if (!sorted)
      std::sort(groups.begin(), groups.end(), [&](int64_t l, int64_t r) {
        return group_first[static_cast<size_t>(l)] < group_first[static_cast<size_t>(r)];
      });
    for (size_t g = 0; g < groups.size(); ++g) {
      rank_of[static_cast<size_t>(groups[g])] = static_cast<int64_t>(g);
      first.push_back(group_first[static_cast<size_t>(groups[g])]);
      counts.push_back(group_count[static_cast<size_t>(groups[g])]);
    }
    for (int64_t i = 0; i < n; ++i)
      inverse[static_cast<size_t>(i)] = rank_of[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
  });
  const auto u = static_cast<int64_t>(first.size());
  Shape y_shape = shape;
  y_shape[static_cast<size_t>(axis)] = u;
  size_t es = dtype_size(x.dtype());
  Tensor y = alloc.allocate(x.dtype(), y_shape);
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t j = 0; j < u; ++j)
      std::memcpy(dst + static_cast<size_t>((a * u + j) * inner) * es,
                  src + static_cast<size_t>((a * n + first[static_cast<size_t>(j)]) * inner) * es,
                  static_cast<size_t>(inner) * es);
  Tensor idx = Tensor::from_vector<int64_t>({u}, first);
  Tensor inv = Tensor::from_vector<int64_t>({n}, inverse);
  Tensor cnt = Tensor::from_vector<int64_t>({u}, counts);
  auto copy = [&](const Tensor& t) {
    Tensor o = alloc.allocate(t.dtype(), t.shape());
    if (t.bytes()) std::memcpy(o.raw(), t.raw(), t.bytes());
    return o;
  };
  return {y, copy(idx), copy(inv), copy(cnt)};
}

std::vector<Tensor> center_crop_pad(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& shape_t = input(node, inputs, 1);
  const int64_t rank = x.rank();
  std::vector<int64_t> axes = node.attr_ints("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  auto target = shape_t.to_int64_vector();
  if (target.size() != axes.size()) invalid(node, "shape must have one value per axis");
  Shape out_shape = x.shape();
  std::vector<int64_t> src_start(static_cast<size_t>(rank), 0), dst_start(static_cast<size_t>(rank), 0);
  Shape copy_shape = x.shape();
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    auto d = static_cast<size_t>(normalize_axis(node, axes[k], rank));
    if (seen[d]) invalid(node, "axes repeat an axis");
    seen[d] = 1;
    int64_t in = x.dim(static_cast<int64_t>(d)), t = target[k];
    if (t < 0 || t > (int64_t{1} << 40)) invalid(node, "shape values must be non-negative");
    out_shape[d] = t;
    if (t < in) {
      src_start[d] = (in - t) / 2;
      copy_shape[d] = t;
    } else {
      dst_start[d] = (t - in) / 2;
      copy_shape[d] = in;
    }
  }
  size_t es = elem_bytes(node, x.dtype());
  Tensor y = alloc.allocate(x.dtype(), out_shape);
  if (y.bytes()) std::memset(y.raw(), 0, y.bytes());
  auto xs = strides_of(x.shape());
  auto ys = strides_of(out_shape);
  auto cs = strides_of(copy_shape);
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(y.raw());
  const int64_t total = shape_size(copy_shape);
  for (int64_t c = 0; c < total; ++c) {
    int64_t so = 0, dof = 0;
    for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
      int64_t i = (c / cs[d]) % copy_shape[d];
      so += (i + src_start[d]) * xs[d];
      dof += (i + dst_start[d]) * ys[d];
    }
    std::memcpy(dst + static_cast<size_t>(dof) * es, src + static_cast<size_t>(so) * es, es);
  }
  return {y};
}

}  // namespace

void register_select_ops(OpTable& table) {
  table["EyeLike"] = eye_like;
  table["OneHot"] = one_hot;
  table["TopK"] = top_k;
  table["Compress"] = compress;
  table["NonZero"] = non_zero;
  table["ReverseSequence"] = reverse_sequence;
  table["Unique"] = unique;
  table["CenterCropPad"] = center_crop_pad;
}

}  // namespace collage::native
