// Data movement by element bytes (any dtype): Concat, Split, Slice, Gather;
// plus Identity and inference-mode Dropout. Pad and the depth/space ops are in pad_ops.cc.
#include <algorithm>
#include <cstdint>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

int64_t product(const Shape& shape, size_t begin, size_t end) {
  return shape_size(
      Shape(shape.begin() + static_cast<int64_t>(begin), shape.begin() + static_cast<int64_t>(end)));
}

std::vector<Tensor> concat(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  if (inputs.empty()) invalid(node, "needs at least one input");
  if (!node.has_attr("axis")) invalid(node, "attribute 'axis' is missing");
  const Tensor& first = input(node, inputs, 0);
  const int64_t rank = first.rank();
  if (rank == 0) invalid(node, "cannot concatenate scalars");
  const auto axis = static_cast<size_t>(normalize_axis(node, node.attr_int("axis", 0), rank));
  Shape shape = first.shape();
  shape[axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = input(node, inputs, i);
    if (t.dtype() != first.dtype() || t.rank() != rank)
      invalid(node, "input " + std::to_string(i) + " (" + dtype_name(t.dtype()) + shape_to_string(t.shape()) +
                        ") does not match input 0 (" + dtype_name(first.dtype()) +
                        shape_to_string(first.shape()) + ")");
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != axis && t.shape()[d] != shape[d])
        invalid(node, "input " + std::to_string(i) + " has shape " + shape_to_string(t.shape()) +
                          ", input 0 " + shape_to_string(first.shape()) + ": only axis " +
                          std::to_string(axis) + " may differ");
    shape[axis] += t.shape()[axis];
  }
  const size_t elem = element_size(node, first.dtype());
  Tensor out = alloc.allocate(first.dtype(), shape);
  const int64_t outer = product(shape, 0, axis);
  const size_t inner_bytes = static_cast<size_t>(product(shape, axis + 1, shape.size())) * elem;
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : inputs) {
      const size_t block = static_cast<size_t>(t->shape()[axis]) * inner_bytes;
      if (block == 0) continue;
      std::memcpy(dst, static_cast<const std::byte*>(t->raw()) + static_cast<size_t>(o) * block, block);
      dst += block;
    }
  }
  return {out};
}

std::vector<Tensor> split(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  if (data.rank() == 0) invalid(node, "cannot split a scalar");
  const auto axis = static_cast<size_t>(normalize_axis(node, node.attr_int("axis", 0), data.rank()));
  const int64_t dim = data.shape()[axis];
  const Tensor* split_in = optional_input(inputs, 1);
  // Output count: the node's outputs; a bare test node may give it by `split` or num_outputs.
  int64_t count = static_cast<int64_t>(node.outputs.size());
  std::vector<int64_t> sizes;
  if (split_in != nullptr) {
    sizes = int_values(node, *split_in, "split");
    if (count == 0) count = static_cast<int64_t>(sizes.size());
    if (static_cast<int64_t>(sizes.size()) != count)
      invalid(node, "split has " + std::to_string(sizes.size()) + " entries for " + std::to_string(count) +
                        " outputs");
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) invalid(node, "split has a negative entry " + std::to_string(s));
      if (s > dim - total) {
        total = -1;  // more than the dimension; checked without overflowing
        break;
      }
      total += s;
    }
    if (total != dim)
      invalid(node, "split sizes do not add up to the dimension " + std::to_string(dim) + " of axis " +
                        std::to_string(axis));
  } else {
    if (count == 0) count = node.attr_int("num_outputs", 0);
    if (count <= 0) invalid(node, "the number of outputs is unknown");
    // Opset 18: chunks of ceil(dim / count), the last one smaller.
    const int64_t chunk = (dim + count - 1) / count;
    for (int64_t i = 0, left = dim; i < count; ++i, left -= std::min(chunk, left))
      sizes.push_back(std::min(chunk, left));
  }
  const size_t elem = element_size(node, data.dtype());
  const int64_t outer = product(data.shape(), 0, axis);
  const size_t inner_bytes = static_cast<size_t>(product(data.shape(), axis + 1, data.shape().size())) * elem;
  const size_t row_bytes = static_cast<size_t>(dim) * inner_bytes;
  std::vector<Tensor> outs;
  size_t offset = 0;
  for (int64_t s : sizes) {
    Shape shape = data.shape();
    shape[axis] = s;
    Tensor out = alloc.allocate(data.dtype(), shape);
    const size_t block = static_cast<size_t>(s) * inner_bytes;
    const auto* src = static_cast<const std::byte*>(data.raw()) + offset;
    auto* dst = static_cast<std::byte*>(out.raw());
    for (int64_t o = 0; o < outer && block > 0; ++o)
      std::memcpy(dst + static_cast<size_t>(o) * block, src + static_cast<size_t>(o) * row_bytes, block);
    offset += block;
    outs.push_back(out);
  }
  return outs;
}

std::vector<Tensor> slice(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const int64_t rank = data.rank();
  const std::vector<int64_t> starts = int_values(node, input(node, inputs, 1), "starts");
  const std::vector<int64_t> ends = int_values(node, input(node, inputs, 2), "ends");
  const size_t n = starts.size();
  std::vector<int64_t> axes, steps(n, 1);
  if (const Tensor* t = optional_input(inputs, 3)) {
    axes = int_values(node, *t, "axes");
  } else {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (const Tensor* t = optional_input(inputs, 4)) steps = int_values(node, *t, "steps");
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    invalid(node, "starts, ends, axes and steps must have the same length");

  const std::vector<int64_t> in_strides = strides_of(data.shape());
  Shape shape = data.shape();
  std::vector<int64_t> strides = in_strides;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  int64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto axis = static_cast<size_t>(normalize_axis(node, axes[i], rank));
    if (seen[axis]) invalid(node, "axes repeat axis " + std::to_string(axis));
    seen[axis] = true;
    const int64_t dim = shape[axis];
    // A step beyond the dimension selects at most one element either way; clamping
    // it keeps the arithmetic below free of overflow.
    const int64_t step = std::clamp<int64_t>(steps[i], -(dim + 1), dim + 1);
    if (step == 0) invalid(node, "step is zero");
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t count = 0;
    if (dim == 0) {
      count = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start) count = (end - start + step - 1) / step;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      if (start > end) count = (start - end - step - 1) / -step;
    }
    shape[axis] = count;
    strides[axis] = in_strides[axis] * step;
    if (count > 0) offset += start * in_strides[axis];
  }
  Tensor out = alloc.allocate(data.dtype(), shape);
  strided_copy(data.raw(), offset, strides, out.raw(), shape, element_size(node, data.dtype()));
  return {out};
}

std::vector<Tensor> gather(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const Tensor& indices = input(node, inputs, 1);
  if (data.rank() == 0) invalid(node, "cannot gather from a scalar");
  const auto axis = static_cast<size_t>(normalize_axis(node, node.attr_int("axis", 0), data.rank()));
  const int64_t dim = data.shape()[axis];
  std::vector<int64_t> idx = int_values(node, indices, "indices");
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim)
      invalid(node, "index " + std::to_string(i) + " is out of range for axis " + std::to_string(axis) +
                        " of size " + std::to_string(dim));
    if (i < 0) i += dim;
  }
  Shape shape(data.shape().begin(), data.shape().begin() + static_cast<int64_t>(axis));
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + static_cast<int64_t>(axis) + 1, data.shape().end());
  const size_t elem = element_size(node, data.dtype());
  Tensor out = alloc.allocate(data.dtype(), shape);
  const int64_t outer = product(data.shape(), 0, axis);
  const size_t inner_bytes = static_cast<size_t>(product(data.shape(), axis + 1, data.shape().size())) * elem;
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  if (inner_bytes == 0) return {out};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : idx) {
      std::memcpy(dst, src + static_cast<size_t>(o * dim + i) * inner_bytes, inner_bytes);
      dst += inner_bytes;
    }
  return {out};
}

// Shares the input's storage: consumers never write their inputs. Any form (a sequence, an
// optional) passes as it is.
std::vector<Tensor> identity(const Node& node, KernelInputs inputs, TensorAllocator&) {
  return {input(node, inputs, 0)};
}

}  // namespace

void register_tensor_ops(OpTable& table) {
  table["Concat"] = concat;
  table["Split"] = split;
  table["Slice"] = slice;
  table["Gather"] = gather;
  table["Identity"] = identity;
  register_pad_ops(table);
}

}  // namespace collage::native
