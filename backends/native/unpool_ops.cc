// Inverse-of-window kernels: MaxUnpool (indices as MaxPool produces them, flat
// over the whole tensor; optional output_shape) and Col2Im (N-d, dilations,
// pads, strides). float32 data.
// Invariants: outputs start at zero; out-of-range indices and inconsistent
// block counts are InvalidInput/InvalidModel, never out-of-bounds writes.
#include <cstring>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

std::vector<Tensor> max_unpool(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& ind = input(node, inputs, 1);
  const Tensor* shape_t = optional_input(inputs, 2);
  require_float(node, x, "X");
  if (x.rank() < 3) invalid(node, "X must have rank >= 3");
  if (ind.shape() != x.shape()) invalid(node, "I must have the shape of X");
  const size_t s = static_cast<size_t>(x.rank() - 2);
  auto kshape = node.attr_ints("kernel_shape");
  auto strides = node.attr_ints("strides", std::vector<int64_t>(s, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  if (kshape.size() != s || strides.size() != s || pads.size() != 2 * s)
    invalid(node, "kernel_shape/strides/pads have the wrong length");
  Shape out_shape{x.dim(0), x.dim(1)};
  for (size_t d = 0; d < s; ++d) {
    int64_t o = (x.dim(static_cast<int64_t>(d + 2)) - 1) * strides[d] + kshape[d] - pads[d] - pads[d + s];
    if (o < 0 || o > (int64_t{1} << 40)) invalid(node, "computed output size is out of range");
    out_shape.push_back(o);
  }
  if (shape_t && shape_t->size() > 0) {
    auto given = shape_t->to_int64_vector();
    if (given.size() != out_shape.size()) invalid(node, "output_shape must have the rank of X");
    for (size_t d = 0; d < given.size(); ++d)
      if (given[d] < 0 || given[d] > (int64_t{1} << 40)) invalid(node, "output_shape is out of range");
    if (given[0] != out_shape[0] || given[1] != out_shape[1]) invalid(node, "output_shape must keep N and C");
  }
  // Indices address the default-sized output; an output_shape only moves the
  // same coordinates into a (larger) tensor.
  const Shape index_shape = out_shape;
  if (shape_t && shape_t->size() > 0) {
    auto given = shape_t->to_int64_vector();
    out_shape = Shape(given.begin(), given.end());
  }
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  if (y.bytes()) std::memset(y.raw(), 0, y.bytes());
  auto idx = ind.to_int64_vector();
  const auto is = strides_of(index_shape);
  const auto os = strides_of(out_shape);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t flat = idx[static_cast<size_t>(i)];
    if (flat < 0 || flat >= shape_size(index_shape))
      throw Error(ErrorKind::InvalidInput,
                  node.describe() + ": index " + std::to_string(flat) + " is out of range");
    int64_t at = 0;
    for (size_t d = 0; d < index_shape.size(); ++d) {
      int64_t coord = (flat / is[d]) % index_shape[d];
      if (coord >= out_shape[d])
        throw Error(ErrorKind::InvalidInput,
                    node.describe() + ": index " + std::to_string(flat) + " falls outside output_shape");
      at += coord * os[d];
    }
    yp[at] = xp[i];
  }
  return {y};
}

std::vector<Tensor> col2im(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_float(node, x, "input");
  auto image = input(node, inputs, 1).to_int64_vector();
  auto block = input(node, inputs, 2).to_int64_vector();
  const size_t s = image.size();
  if (s == 0 || block.size() != s)
    invalid(node, "image_shape and block_shape must have the same length >= 1");
  if (x.rank() != 3) invalid(node, "input must be (N, C * prod(block_shape), L)");
  auto dil = node.attr_ints("dilations", std::vector<int64_t>(s, 1));
  auto strides = node.attr_ints("strides", std::vector<int64_t>(s, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  if (dil.size() != s || strides.size() != s || pads.size() != 2 * s)
    invalid(node, "dilations/strides/pads have the wrong length");
  int64_t block_size = 1, blocks = 1;
  std::vector<int64_t> nblk(s);
  for (size_t d = 0; d < s; ++d) {
    if (image[d] < 0 || image[d] > (int64_t{1} << 31) || block[d] < 1 || block[d] > (int64_t{1} << 31) ||
        dil[d] < 1 || strides[d] < 1 || pads[d] < 0 || pads[d + s] < 0)
      invalid(node, "image_shape, block_shape, dilations, strides and pads must be in range");
    block_size *= block[d];
    int64_t span = dil[d] * (block[d] - 1) + 1;
    int64_t room = image[d] + pads[d] + pads[d + s] - span;
    nblk[d] = room < 0 ? 0 : room / strides[d] + 1;
    blocks *= nblk[d];
  }
  if (x.dim(1) % block_size != 0) invalid(node, "input dim 1 is not a multiple of prod(block_shape)");
  if (x.dim(2) != blocks) invalid(node, "input dim 2 does not match the number of blocks");
  const int64_t n = x.dim(0), c = x.dim(1) / block_size;
  Shape out_shape{n, c};
  int64_t plane = 1;
  for (int64_t v : image) {
    out_shape.push_back(v);
    plane *= v;
  }
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  if (y.bytes()) std::memset(y.raw(), 0, y.bytes());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  std::vector<int64_t> kpos(s), bpos(s);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t k = 0; k < block_size; ++k) {
        int64_t rest = k;
        for (size_t d = s; d-- > 0;) {
          kpos[d] = rest % block[d];
          rest /= block[d];
        }
        const float* row = xp + ((b * c + ch) * block_size + k) * blocks;
        float* out = yp + (b * c + ch) * plane;
        for (int64_t l = 0; l < blocks; ++l) {
          int64_t r = l, off = 0;
          bool inside = true;
          for (size_t d = s; d-- > 0;) {
            bpos[d] = r % nblk[d];
            r /= nblk[d];
          }
          for (size_t d = 0; d < s && inside; ++d) {
            int64_t p = bpos[d] * strides[d] - pads[d] + kpos[d] * dil[d];
            if (p < 0 || p >= image[d]) inside = false;
            off = off * image[d] + p;
          }
          if (inside) out[off] += row[l];
        }
      }
  return {y};
}

}  // namespace

void register_unpool_ops(OpTable& table) {
  table["MaxUnpool"] = max_unpool;
  table["Col2Im"] = col2im;
}

}  // namespace collage::native
