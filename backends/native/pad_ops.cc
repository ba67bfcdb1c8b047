// Pad (constant, reflect, edge, wrap; negative pads crop), DepthToSpace, SpaceToDepth.
#include <algorithm>
#include <cstdint>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

// For each output row, looks up every element's source through per-dim index
// tables (-1 = padding, written from `fill`).
template <size_t S>
void pad_copy(const std::byte* src, std::byte* dst, const Shape& out_shape,
              const std::vector<std::vector<int64_t>>& tables, const std::vector<int64_t>& in_strides,
              const std::byte* fill) {
  const int64_t total = shape_size(out_shape);
  if (total == 0) return;
  const size_t rank = out_shape.size();
  if (rank == 0) {
    std::memcpy(dst, src, S);
    return;
  }
  const int64_t inner = out_shape[rank - 1];
  const std::vector<int64_t>& last = tables[rank - 1];
  const int64_t last_stride = in_strides[rank - 1];
  std::vector<int64_t> index(rank - 1, 0);
  for (int64_t o = 0; o < total; o += inner) {
    int64_t base = 0;
    bool inside = true;
    for (size_t d = 0; d + 1 < rank; ++d) {
      const int64_t t = tables[d][static_cast<size_t>(index[d])];
      if (t < 0) inside = false;
      base += t * in_strides[d];
    }
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t t = last[static_cast<size_t>(j)];
      const std::byte* s = inside && t >= 0 ? src + (base + t * last_stride) * int64_t{S} : fill;
      std::memcpy(dst + (o + j) * int64_t{S}, s, S);
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < out_shape[d]) break;
      index[d] = 0;
    }
  }
}

std::vector<Tensor> pad(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& data = input(node, inputs, 0);
  const int64_t rank = data.rank();
  const std::vector<int64_t> pads = int_values(node, input(node, inputs, 1), "pads");
  const std::string mode = node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    unsupported(node, "attribute mode='" + mode + "' is not supported");

  std::vector<int64_t> axes;
  if (const Tensor* t = optional_input(inputs, 3)) {
    axes = int_values(node, *t, "axes");
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    invalid(node, "pads has " + std::to_string(pads.size()) + " entries for " + std::to_string(axes.size()) +
                      " axes");
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto axis = static_cast<size_t>(normalize_axis(node, axes[i], rank));
    if (seen[axis]) invalid(node, "axes repeat axis " + std::to_string(axis));
    seen[axis] = true;
    begin[axis] = pads[i];
    end[axis] = pads[i + axes.size()];
  }

  // Negative pads crop first; the remaining [lo, lo + kept) is then padded by `mode`.
  constexpr int64_t kMaxPad = int64_t{1} << 40;  // bounds the arithmetic below
  const size_t elem = element_size(node, data.dtype());
  Shape shape(static_cast<size_t>(rank));
  std::vector<int64_t> lo(shape.size()), kept(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (begin[d] < -kMaxPad || begin[d] > kMaxPad || end[d] < -kMaxPad || end[d] > kMaxPad)
      invalid(node, "pads are out of range");
    const int64_t dim = data.shape()[d];
    lo[d] = std::max<int64_t>(-begin[d], 0);
    kept[d] = dim - lo[d] - std::max<int64_t>(-end[d], 0);
    if (kept[d] < 0)
      invalid(node, "pads crop more than the size " + std::to_string(dim) + " of axis " + std::to_string(d));
    shape[d] = kept[d] + std::max<int64_t>(begin[d], 0) + std::max<int64_t>(end[d], 0);
    if (mode != "constant" && kept[d] == 0 && shape[d] > 0)
      invalid(node, "cannot " + mode + "-pad axis " + std::to_string(d) + ", which is empty");
  }
  alignas(8) std::byte fill[8] = {};
  const Tensor* value = optional_input(inputs, 2);
  if (mode == "constant" && value != nullptr && value->size() > 0) {
    if (value->size() != 1) invalid(node, "constant_value must be a scalar");
    convert_elements(node, value->dtype(), value->raw(), data.dtype(), fill, 1);
  }
  Tensor out = alloc.allocate(data.dtype(), shape);  // throws on absurd sizes before the tables
  if (out.size() == 0) return {out};

  // tables[d][o]: the input index that output index o of axis d reads, -1 for constant padding.
  std::vector<std::vector<int64_t>> tables(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t n = kept[d];
    const int64_t pb = std::max<int64_t>(begin[d], 0);
    std::vector<int64_t>& table = tables[d];
    table.resize(static_cast<size_t>(shape[d]));
    for (int64_t o = 0; o < shape[d]; ++o) {
      int64_t j = o - pb;
      if (j >= 0 && j < n) {
        table[static_cast<size_t>(o)] = lo[d] + j;
        continue;
      }
      if (mode == "constant") {
        table[static_cast<size_t>(o)] = -1;
        continue;
      }
      if (mode == "edge") {
        j = std::clamp<int64_t>(j, 0, n - 1);
      } else if (mode == "wrap") {
        j = ((j % n) + n) % n;
      } else if (n == 1) {
        j = 0;
      } else {  // reflect without repeating the edge, as numpy.pad
        const int64_t period = 2 * (n - 1);
        j = ((j % period) + period) % period;
        if (j >= n) j = period - j;
      }
      table[static_cast<size_t>(o)] = lo[d] + j;
    }
  }
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  const std::vector<int64_t> in_strides = strides_of(data.shape());
  switch (elem) {
    case 1:
      pad_copy<1>(src, dst, shape, tables, in_strides, fill);
      break;
    case 2:
      pad_copy<2>(src, dst, shape, tables, in_strides, fill);
      break;
    case 4:
      pad_copy<4>(src, dst, shape, tables, in_strides, fill);
      break;
    case 8:
      pad_copy<8>(src, dst, shape, tables, in_strides, fill);
      break;
    default:
      unsupported(node, std::string("type ") + dtype_name(data.dtype()) + " is not supported");
  }
  return {out};
}

int64_t block_size(const Node& node) {
  if (!node.has_attr("blocksize")) invalid(node, "attribute 'blocksize' is missing");
  int64_t b = node.attr_int("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 20)) invalid(node, "blocksize " + std::to_string(b) + " is not positive");
  return b;
}

void require_rank4(const Node& node, const Tensor& t) {
  if (t.rank() != 4) invalid(node, "input must be 4-D (NCHW), got shape " + shape_to_string(t.shape()));
}

// Both ops are a reshape + transpose, done as one strided copy over the
// 6-D view of the output.
std::vector<Tensor> depth_to_space(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_rank4(node, x);
  const int64_t b = block_size(node);
  const std::string mode = node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") unsupported(node, "attribute mode='" + mode + "' is not supported");
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (c % (b * b) != 0)
    invalid(node,
            "channels " + std::to_string(c) + " are not divisible by blocksize^2 = " + std::to_string(b * b));
  const int64_t oc = c / (b * b);
  const int64_t hw = h * w;
  // Input index of (n, c', h, b1, w, b2): DCR reads channel (b1*b + b2)*oc + c', CRD c'*b*b + b1*b + b2.
  const int64_t s_c = mode == "DCR" ? hw : b * b * hw;
  const int64_t s_b1 = mode == "DCR" ? b * oc * hw : b * hw;
  const int64_t s_b2 = mode == "DCR" ? oc * hw : hw;
  const Shape view = {n, oc, h, b, w, b};
  const std::vector<int64_t> strides = {c * hw, s_c, w, s_b1, 1, s_b2};
  Tensor out = alloc.allocate(x.dtype(), {n, oc, h * b, w * b});
  strided_copy(x.raw(), 0, strides, out.raw(), view, element_size(node, x.dtype()));
  return {out};
}

std::vector<Tensor> space_to_depth(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_rank4(node, x);
  const int64_t b = block_size(node);
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  if (h % b != 0 || w % b != 0)
    invalid(node, "spatial size " + std::to_string(h) + "x" + std::to_string(w) +
                      " is not divisible by blocksize " + std::to_string(b));
  // Output channel (b1*b + b2)*c + c' at (h', w') reads input (c', h'*b + b1, w'*b + b2).
  const Shape view = {n, b, b, c, h / b, w / b};
  const std::vector<int64_t> strides = {c * h * w, w, 1, h * w, b * w, b};
  Tensor out = alloc.allocate(x.dtype(), {n, c * b * b, h / b, w / b});
  strided_copy(x.raw(), 0, strides, out.raw(), view, element_size(node, x.dtype()));
  return {out};
}

}  // namespace

void register_pad_ops(OpTable& table) {
  table["Pad"] = pad;
  table["DepthToSpace"] = depth_to_space;
  table["SpaceToDepth"] = space_to_depth;
}

}  // namespace collage::native
