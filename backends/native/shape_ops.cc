// Shape manipulation: Reshape, Flatten, Squeeze, Unsqueeze (views sharing the
// input's storage), Transpose, Expand, Tile (byte copies), Shape, Size.
#include <algorithm>
#include <cstdint>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

Tensor int64_vector_tensor(TensorAllocator& alloc, const std::vector<int64_t>& values) {
  Tensor out = alloc.allocate(DType::Int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), out.data<int64_t>());
  return out;
}

std::vector<Tensor> reshape(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& data = input(node, inputs, 0);
  const Tensor& shape_in = input(node, inputs, 1);
  if (shape_in.rank() != 1)
    invalid(node, "shape must be 1-D, got shape " + shape_to_string(shape_in.shape()));
  Shape shape = int_values(node, shape_in, "shape");
  const bool allow_zero = node.attr_int("allowzero", 0) != 0;
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (static_cast<int64_t>(i) >= data.rank())
        invalid(node, "shape entry " + std::to_string(i) + " is 0 but the input has rank " +
                          std::to_string(data.rank()));
      shape[i] = data.dim(static_cast<int64_t>(i));
    }
    if (shape[i] == -1) {
      if (inferred >= 0) invalid(node, "shape has more than one -1");
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      invalid(node, "shape entry " + std::to_string(shape[i]) + " is negative");
    } else {
      known = shape_size({known, shape[i]});
    }
  }
  if (inferred >= 0) {
    if (known == 0 || data.size() % known != 0)
      invalid(node, "cannot infer the -1 dimension reshaping " + shape_to_string(data.shape()) + " to " +
                        shape_to_string(int_values(node, shape_in, "shape")));
    shape[static_cast<size_t>(inferred)] = data.size() / known;
  }
  if (shape_size(shape) != data.size())
    invalid(node, "cannot reshape " + shape_to_string(data.shape()) + " to " + shape_to_string(shape));
  return {data.reshaped(shape)};
}

std::vector<Tensor> flatten(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& data = input(node, inputs, 0);
  int64_t axis = node.attr_int("axis", 1);
  // Flatten accepts axis == rank (everything in the outer dim).
  if (axis < 0) axis += data.rank();
  if (axis < 0 || axis > data.rank())
    invalid(node, "axis " + std::to_string(node.attr_int("axis", 1)) + " is out of range for rank " +
                      std::to_string(data.rank()));
  Shape outer(data.shape().begin(), data.shape().begin() + axis);
  Shape inner(data.shape().begin() + axis, data.shape().end());
  return {data.reshaped({shape_size(outer), shape_size(inner)})};
}

std::vector<Tensor> transpose(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const int64_t rank = data.rank();
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_attr("perm")) {
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    invalid(node, "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t& p : perm) {
    p = normalize_axis(node, p, rank);
    if (seen[static_cast<size_t>(p)]) invalid(node, "perm repeats axis " + std::to_string(p));
    seen[static_cast<size_t>(p)] = true;
  }
  const std::vector<int64_t> in_strides = strides_of(data.shape());
  Shape shape(static_cast<size_t>(rank));
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  for (size_t i = 0; i < perm.size(); ++i) {
    shape[i] = data.dim(perm[i]);
    strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  Tensor out = alloc.allocate(data.dtype(), shape);
  strided_copy(data.raw(), 0, strides, out.raw(), shape, element_size(node, data.dtype()));
  return {out};
}

std::vector<Tensor> squeeze(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& data = input(node, inputs, 0);
  const int64_t rank = data.rank();
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (const Tensor* axes = optional_input(inputs, 1)) {
    for (int64_t a : int_values(node, *axes, "axes")) {
      int64_t axis = normalize_axis(node, a, rank);
      if (data.dim(axis) != 1)
        invalid(node,
                "cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(data.dim(axis)));
      if (drop[static_cast<size_t>(axis)]) invalid(node, "axes repeat axis " + std::to_string(axis));
      drop[static_cast<size_t>(axis)] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) drop[static_cast<size_t>(i)] = data.dim(i) == 1;
  }
  Shape shape;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[static_cast<size_t>(i)]) shape.push_back(data.dim(i));
  return {data.reshaped(shape)};
}

std::vector<Tensor> unsqueeze(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& data = input(node, inputs, 0);
  std::vector<int64_t> axes = int_values(node, input(node, inputs, 1), "axes");
  const int64_t out_rank = data.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) {
    int64_t axis = normalize_axis(node, a, out_rank);
    if (inserted[static_cast<size_t>(axis)]) invalid(node, "axes repeat axis " + std::to_string(axis));
    inserted[static_cast<size_t>(axis)] = true;
  }
  Shape shape;
  int64_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i)
    shape.push_back(inserted[static_cast<size_t>(i)] ? 1 : data.dim(next++));
  return {data.reshaped(shape)};
}

std::vector<Tensor> shape_op(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const int64_t rank = data.rank();
  auto clamp_index = [&](int64_t i) {
    if (i < 0) i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  const int64_t start = clamp_index(node.attr_int("start", 0));
  const int64_t end = clamp_index(node.attr_int("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(data.dim(i));
  return {int64_vector_tensor(alloc, dims)};
}

std::vector<Tensor> size_op(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  Tensor out = alloc.allocate(DType::Int64, {});
  out.data<int64_t>()[0] = data.size();
  return {out};
}

std::vector<Tensor> expand(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const Tensor& shape_in = input(node, inputs, 1);
  if (shape_in.rank() != 1)
    invalid(node, "shape must be 1-D, got shape " + shape_to_string(shape_in.shape()));
  Shape target = int_values(node, shape_in, "shape");
  for (int64_t d : target)
    if (d < 0) invalid(node, "shape " + shape_to_string(target) + " has a negative dimension");
  Shape shape = broadcast_shapes(node, data.shape(), target);
  Tensor out = alloc.allocate(data.dtype(), shape);
  strided_copy(data.raw(), 0, broadcast_strides(data.shape(), shape), out.raw(), shape,
               element_size(node, data.dtype()));
  return {out};
}

std::vector<Tensor> tile(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  std::vector<int64_t> repeats = int_values(node, input(node, inputs, 1), "repeats");
  const int64_t rank = data.rank();
  if (static_cast<int64_t>(repeats.size()) != rank)
    invalid(node,
            "repeats has " + std::to_string(repeats.size()) + " entries for rank " + std::to_string(rank));
  // The output viewed as [r0, d0, r1, d1, ...] reads the input with stride 0 on each r_i.
  const std::vector<int64_t> in_strides = strides_of(data.shape());
  Shape view, shape;
  std::vector<int64_t> strides;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t r = repeats[static_cast<size_t>(i)];
    if (r < 0) invalid(node, "repeats has a negative entry " + std::to_string(r));
    view.insert(view.end(), {r, data.dim(i)});
    strides.insert(strides.end(), {0, in_strides[static_cast<size_t>(i)]});
    shape.push_back(shape_size({r, data.dim(i)}));
  }
  Tensor out = alloc.allocate(data.dtype(), shape);
  strided_copy(data.raw(), 0, strides, out.raw(), view, element_size(node, data.dtype()));
  return {out};
}

}  // namespace

void register_shape_ops(OpTable& table) {
  table["Reshape"] = reshape;
  table["Flatten"] = flatten;
  table["Transpose"] = transpose;
  table["Squeeze"] = squeeze;
  table["Unsqueeze"] = unsqueeze;
  table["Shape"] = shape_op;
  table["Size"] = size_op;
  table["Expand"] = expand;
  table["Tile"] = tile;
  register_generator_ops(table);
}

}  // namespace collage::native
