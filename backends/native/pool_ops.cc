// MaxPool / AveragePool / LpPool (1-D to 3-D; pads, strides, dilations, ceil_mode,
// auto_pad, count_include_pad, MaxPool's Indices incl. storage_order=1; LpPool's
// padding adds zeros) and the global pools. MaxPool also on float64, int8 and uint8.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"
#include "core/ir/conv_geometry.h"

namespace collage::native {

namespace {

struct PoolGeometry {
  int64_t spatial = 0;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, stride{1, 1, 1}, dil{1, 1, 1};
  std::array<int64_t, 3> pad_begin{0, 0, 0}, pad_end{0, 0, 0};
};

PoolGeometry pool_geometry(const Node& node, const Tensor& x) {
  if (x.rank() < 3 || x.rank() > 5) unsupported(node, "only 1-D, 2-D and 3-D pooling is supported");
  size_t s = static_cast<size_t>(x.rank() - 2);
  auto kshape = node.attr_ints("kernel_shape", {});
  if (kshape.size() != s) invalid(node, "kernel_shape must have " + std::to_string(s) + " values");
  auto strides = node.attr_ints("strides", std::vector<int64_t>(s, 1));
  auto dils = node.attr_ints("dilations", std::vector<int64_t>(s, 1));
  auto pads = node.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  if (strides.size() != s || dils.size() != s || pads.size() != 2 * s)
    invalid(node, "strides/dilations/pads have the wrong length");
  bool ceil_mode = node.attr_int("ceil_mode", 0) != 0;
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  bool same = is_same_auto_pad(auto_pad, node.name);
  PoolGeometry g;
  g.spatial = static_cast<int64_t>(s);
  size_t off = 3 - s;
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x.dim(static_cast<int64_t>(d + 2)), k = kshape[d], st = strides[d], dl = dils[d];
    if (k < 1 || st < 1 || dl < 1) invalid(node, "kernel_shape, strides and dilations must be positive");
    int64_t span = window_span(k, dl), begin = pads[d], end = pads[d + s], out;
    if (same) {
      out = (in + st - 1) / st;
      std::tie(begin, end) = same_padding(auto_pad == "SAME_UPPER", in, st, span);
    } else {
      if (auto_pad == "VALID") begin = end = 0;
      int64_t room = in + begin + end - span;
      if (room < 0) invalid(node, "the pooling window is larger than the padded input");
      out = (ceil_mode ? (room + st - 1) / st : room / st) + 1;
      // PyTorch/ORT rule: the last window must start inside the input or the left padding.
      if (ceil_mode && (out - 1) * st >= in + begin) --out;
    }
    g.in[off + d] = in;
    g.out[off + d] = out;
    g.k[off + d] = k;
    g.stride[off + d] = st;
    g.dil[off + d] = dl;
    g.pad_begin[off + d] = begin;
    g.pad_end[off + d] = end;
  }
  return g;
}

// T is the element type: float for the averaging pools; MaxPool also runs on float64, int8 and
// uint8 (float16 reaches it widened to float32).
template <class T, bool kMax, bool kLp>
std::vector<Tensor> pool_typed(const Node& node, const Tensor& x, TensorAllocator& alloc) {
  PoolGeometry g = pool_geometry(node, x);
  const double p = kLp ? static_cast<double>(node.attr_int("p", 2)) : 1.0;
  if (kLp && p <= 0) invalid(node, "p must be positive");
  bool include_pad = node.attr_int("count_include_pad", 0) != 0;
  // Dilated windows in ceil mode: the ONNX reference pads the input up to the last window's end
  // and counts that overhang like pads, so the divisor is the full window. Undilated windows keep
  // the PyTorch/ORT divisor, clipped at the end of the padded input.
  bool dilated = false;
  for (int64_t d : g.dil) dilated = dilated || d != 1;
  const bool full_window_divisor = include_pad && dilated && node.attr_int("ceil_mode", 0) != 0;
  bool want_indices = kMax && node.outputs.size() > 1 && node.outputs[1] != kNoValue;
  // storage_order=1: Indices count the spatial dims column-major (w fastest-varying last).
  const bool column_major = kMax && node.attr_int("storage_order", 0) != 0;
  int64_t n = x.dim(0), c = x.dim(1);
  Shape out_shape = {n, c};
  for (int64_t d = 3 - g.spatial; d < 3; ++d) out_shape.push_back(g.out[static_cast<size_t>(d)]);
  Tensor y = alloc.allocate(x.dtype(), out_shape);
  Tensor idx;
  if (want_indices) idx = alloc.allocate(DType::Int64, out_shape);
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  for (int64_t plane = 0; plane < n * c; ++plane) {
    const T* in = xp + plane * in_plane;
    T* out = yp + plane * out_plane;
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          std::array<int64_t, 3> o{od, oh, ow}, start{}, lo{}, hi{};
          int64_t padded_count = 1;
          for (size_t d = 0; d < 3; ++d) {
            start[d] = o[d] * g.stride[d] - g.pad_begin[d];
            lo[d] = 0;
            hi[d] = g.k[d];
            // Window positions inside the padded input (the divisor when pads count).
            int64_t end = std::min(start[d] + (g.k[d] - 1) * g.dil[d] + 1, g.in[d] + g.pad_end[d]);
            padded_count *= (end - start[d] + g.dil[d] - 1) / g.dil[d];
          }
          T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
          int64_t best_index = 0;
          double sum = 0;
          int64_t count = 0;
          for (int64_t kd = lo[0]; kd < hi[0]; ++kd) {
            int64_t id = start[0] + kd * g.dil[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = lo[1]; kh < hi[1]; ++kh) {
              int64_t ih = start[1] + kh * g.dil[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              for (int64_t kw = lo[2]; kw < hi[2]; ++kw) {
                int64_t iw = start[2] + kw * g.dil[2];
                if (iw < 0 || iw >= g.in[2]) continue;
                int64_t at = (id * g.in[1] + ih) * g.in[2] + iw;
                T v = in[at];
                if constexpr (kMax) {
                  if (v > best) {
                    best = v;
                    best_index = column_major ? (iw * g.in[1] + ih) * g.in[0] + id : at;
                  }
                } else {
                  sum += kLp ? std::pow(std::fabs(static_cast<double>(v)), p) : v;
                  ++count;
                }
              }
            }
          }
          int64_t oi = (od * g.out[1] + oh) * g.out[2] + ow;
          if constexpr (kMax) {
            out[oi] = best;
            if (want_indices) idx.data<int64_t>()[plane * out_plane + oi] = plane * in_plane + best_index;
          } else if constexpr (kLp) {
            out[oi] = static_cast<T>(std::pow(sum, 1.0 / p));
          } else {
            int64_t divisor = full_window_divisor ? g.k[0] * g.k[1] * g.k[2]
                              : include_pad       ? padded_count
                                                  : count;
            out[oi] = divisor > 0 ? static_cast<T>(sum / static_cast<double>(divisor)) : T(0);
          }
        }
  }
  if (want_indices) return {y, idx};
  return {y};
}

template <bool kMax, bool kLp = false>
std::vector<Tensor> pool(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if constexpr (kMax) {
    switch (x.dtype()) {
      case DType::Float64:
        return pool_typed<double, true, false>(node, x, alloc);
      case DType::Int8:
        return pool_typed<int8_t, true, false>(node, x, alloc);
      case DType::UInt8:
        return pool_typed<uint8_t, true, false>(node, x, alloc);
      case DType::Float32:
        break;
      default:
        unsupported(node, std::string("X has type ") + dtype_name(x.dtype()) +
                              "; supported: float32, float64, int8, uint8 (float16 widened)");
    }
  }
  require_float(node, x, "X");
  return pool_typed<float, kMax, kLp>(node, x, alloc);
}

template <bool kMax>
std::vector<Tensor> global_pool(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_float(node, x, "X");
  if (x.rank() < 3) invalid(node, "input must have rank >= 3");
  Shape out_shape = {x.dim(0), x.dim(1)};
  out_shape.resize(static_cast<size_t>(x.rank()), 1);
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  int64_t planes = x.dim(0) * x.dim(1), size = x.size() / std::max<int64_t>(planes, 1);
  const float* xp = x.data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = xp + p * size;
    if (kMax) {
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < size; ++i) best = std::max(best, in[i]);
      y.data<float>()[p] = best;
    } else {
      double sum = 0;
      for (int64_t i = 0; i < size; ++i) sum += in[i];
      y.data<float>()[p] = static_cast<float>(sum / static_cast<double>(size));
    }
  }
  return {y};
}

}  // namespace

void register_pool_ops(OpTable& table) {
  table["MaxPool"] = pool<true>;
  table["AveragePool"] = pool<false>;
  table["LpPool"] = pool<false, true>;
  table["GlobalMaxPool"] = global_pool<true>;
  table["GlobalAveragePool"] = global_pool<false>;
}

}  // namespace collage::native
