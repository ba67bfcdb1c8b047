// Conv and ConvTranspose, 1-D to 3-D, grouped, dilated, padded. Spatial dims
// are lifted to 3-D (missing leading dims of size 1) so one loop nest serves all.
#include <algorithm>
#include <array>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"
#include "core/ir/conv_geometry.h"

namespace collage::native {

namespace {

struct Geometry {
  int64_t spatial = 0;  // 1, 2 or 3
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dil{1, 1, 1}, pad{0, 0, 0};  // pad = leading pad
};

std::vector<int64_t> attr_or(const Node& node, const char* key, size_t n, int64_t fallback) {
  std::vector<int64_t> v = node.attr_ints(key, std::vector<int64_t>(n, fallback));
  if (v.size() != n)
    invalid(node, std::string("attribute ") + key + " must have " + std::to_string(n) + " values");
  return v;
}

// Fills strides, dilations, kernel and input extents; pads per ONNX auto_pad rules.
// `transposed` selects ConvTranspose output arithmetic.
Geometry geometry(const Node& node, const Tensor& x, const Tensor& w, bool transposed) {
  if (x.rank() < 3 || x.rank() > 5)
    unsupported(node, "only 1-D, 2-D and 3-D convolutions are supported (input rank " +
                          std::to_string(x.rank()) + ")");
  if (w.rank() != x.rank())
    invalid(node, "weight rank " + std::to_string(w.rank()) + " differs from input rank " +
                      std::to_string(x.rank()));
  Geometry g;
  size_t s = static_cast<size_t>(x.rank() - 2);
  g.spatial = static_cast<int64_t>(s);
  auto strides = attr_or(node, "strides", s, 1), dils = attr_or(node, "dilations", s, 1);
  auto kshape = node.attr_ints("kernel_shape", {});
  auto pads = attr_or(node, "pads", 2 * s, 0);
  auto out_pad = attr_or(node, "output_padding", s, 0);
  std::vector<int64_t> out_shape = node.attr_ints("output_shape", {});
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  bool same = is_same_auto_pad(auto_pad, node.name), upper = auto_pad == "SAME_UPPER";
  size_t off = 3 - s;
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x.dim(static_cast<int64_t>(d + 2)), k = w.dim(static_cast<int64_t>(d + 2));
    if (!kshape.empty() && (kshape.size() != s || kshape[d] != k))
      invalid(node, "kernel_shape does not match the weights");
    int64_t st = strides[d], dl = dils[d];
    if (st < 1 || dl < 1) invalid(node, "strides and dilations must be positive");
    int64_t span = window_span(k, dl);
    int64_t begin = pads[d], end = pads[d + s], out = 0;
    bool negative_pads_ok = false;
    if (!transposed) {
      if (auto_pad == "VALID") begin = end = 0;
      if (same) std::tie(begin, end) = same_padding(upper, in, st, span);
      out = (in + begin + end - span) / st + 1;
    } else {
      int64_t natural = st * (in - 1) + out_pad[d] + span;
      if (!out_shape.empty() || same) {
        if (!out_shape.empty() && out_shape.size() != s && out_shape.size() != s + 2)
          invalid(node, "output_shape must have " + std::to_string(s) + " values");
        int64_t target = !out_shape.empty() ? out_shape[out_shape.size() - s + d] : in * st;
        // A target beyond the natural extent gives a negative end pad: extra outputs at the
        // end that only the bias reaches.
        std::tie(begin, end) = transposed_padding(upper, natural, target);
        negative_pads_ok = true;
      } else if (auto_pad == "VALID") {
        begin = end = 0;
      }
      out = natural - begin - end;
    }
    if (out < 1 || (!negative_pads_ok && (begin < 0 || end < 0)))
      invalid(node, "the convolution leaves an empty or negative output extent");
    g.in[off + d] = in;
    g.k[off + d] = k;
    g.out[off + d] = out;
    g.stride[off + d] = st;
    g.dil[off + d] = dl;
    g.pad[off + d] = begin;
  }
  return g;
}

// Range of outputs o with 0 <= o*stride - pad + tap <= in - 1.
inline void valid_range(int64_t tap, int64_t pad, int64_t stride, int64_t in, int64_t out, int64_t& lo,
                        int64_t& hi) {
  int64_t first = pad - tap;  // o*stride >= first
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  int64_t last = in - 1 + pad - tap;  // o*stride <= last
  hi = last < 0 ? 0 : std::min(out, last / stride + 1);
  if (hi < lo) hi = lo;
}

std::vector<Tensor> conv(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& w = input(node, inputs, 1);
  const Tensor* b = optional_input(inputs, 2);
  require_float(node, x, "X");
  require_float(node, w, "W");
  Geometry g = geometry(node, x, w, false);
  int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0), group = node.attr_int("group", 1);
  if (group < 1 || c % group || m % group || w.dim(1) != c / group)
    invalid(node, "channels " + std::to_string(c) + " and weights " + shape_to_string(w.shape()) +
                      " do not fit group " + std::to_string(group));
  if (b && b->size() != m)
    invalid(node, "bias has " + std::to_string(b->size()) + " values for " + std::to_string(m) + " channels");
  Shape out_shape = {n, m};
  for (int64_t d = 3 - g.spatial; d < 3; ++d) out_shape.push_back(g.out[static_cast<size_t>(d)]);
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  const int64_t cg = c / group, mg = m / group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t taps = g.k[0] * g.k[1] * g.k[2];
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* yp = y.data<float>();
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t oc = 0; oc < m; ++oc) {
      float* out = yp + (bn * m + oc) * out_plane;
      std::fill(out, out + out_plane, b ? b->data<float>()[oc] : 0.0f);
      int64_t grp = oc / mg;
      for (int64_t icg = 0; icg < cg; ++icg) {
        const float* in = xp + (bn * c + grp * cg + icg) * in_plane;
        const float* wk = wp + (oc * cg + icg) * taps;
        for (int64_t kd = 0; kd < g.k[0]; ++kd) {
          int64_t d_lo, d_hi;
          valid_range(kd * g.dil[0], g.pad[0], g.stride[0], g.in[0], g.out[0], d_lo, d_hi);
          for (int64_t kh = 0; kh < g.k[1]; ++kh) {
            int64_t h_lo, h_hi;
            valid_range(kh * g.dil[1], g.pad[1], g.stride[1], g.in[1], g.out[1], h_lo, h_hi);
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const float wv = wk[(kd * g.k[1] + kh) * g.k[2] + kw];
              int64_t w_lo, w_hi;
              valid_range(kw * g.dil[2], g.pad[2], g.stride[2], g.in[2], g.out[2], w_lo, w_hi);
              for (int64_t od = d_lo; od < d_hi; ++od) {
                int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
                for (int64_t oh = h_lo; oh < h_hi; ++oh) {
                  int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
                  // Input index of output column ow is base + ow*sw (in range for ow in [w_lo, w_hi)).
                  const int64_t base = (id * g.in[1] + ih) * g.in[2] - g.pad[2] + kw * g.dil[2];
                  float* orow = out + (od * g.out[1] + oh) * g.out[2];
                  const int64_t sw = g.stride[2];
                  if (sw == 1) {
                    const float* irow = in + base + w_lo;
                    for (int64_t ow = w_lo; ow < w_hi; ++ow) orow[ow] += wv * irow[ow - w_lo];
                  } else {
                    for (int64_t ow = w_lo; ow < w_hi; ++ow) orow[ow] += wv * in[base + ow * sw];
                  }
                }
              }
            }
          }
        }
      }
    }
  return {y};
}

std::vector<Tensor> conv_transpose(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& w = input(node, inputs, 1);
  const Tensor* b = optional_input(inputs, 2);
  require_float(node, x, "X");
  require_float(node, w, "W");
  Geometry g = geometry(node, x, w, true);
  int64_t n = x.dim(0), c = x.dim(1), group = node.attr_int("group", 1);
  if (group < 1 || c % group || w.dim(0) != c)
    invalid(node,
            "weights " + shape_to_string(w.shape()) + " do not fit " + std::to_string(c) + " input channels");
  int64_t mg = w.dim(1), m = mg * group, cg = c / group;
  if (b && b->size() != m)
    invalid(node, "bias has " + std::to_string(b->size()) + " values for " + std::to_string(m) + " channels");
  Shape out_shape = {n, m};
  for (int64_t d = 3 - g.spatial; d < 3; ++d) out_shape.push_back(g.out[static_cast<size_t>(d)]);
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2], out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t taps = g.k[0] * g.k[1] * g.k[2];
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* yp = y.data<float>();
  for (int64_t bn = 0; bn < n; ++bn)
    for (int64_t oc = 0; oc < m; ++oc) {
      float* out = yp + (bn * m + oc) * out_plane;
      std::fill(out, out + out_plane, b ? b->data<float>()[oc] : 0.0f);
      int64_t grp = oc / mg, ocg = oc % mg;
      for (int64_t icg = 0; icg < cg; ++icg) {
        int64_t ic = grp * cg + icg;
        const float* in = xp + (bn * c + ic) * in_plane;
        const float* wk = wp + (ic * mg + ocg) * taps;
        // Scatter: input i contributes to output o = i*stride - pad + tap.
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const float wv = wk[(kd * g.k[1] + kh) * g.k[2] + kw];
              for (int64_t id = 0; id < g.in[0]; ++id) {
                int64_t od = id * g.stride[0] - g.pad[0] + kd * g.dil[0];
                if (od < 0 || od >= g.out[0]) continue;
                for (int64_t ih = 0; ih < g.in[1]; ++ih) {
                  int64_t oh = ih * g.stride[1] - g.pad[1] + kh * g.dil[1];
                  if (oh < 0 || oh >= g.out[1]) continue;
                  const float* irow = in + (id * g.in[1] + ih) * g.in[2];
                  float* orow = out + (od * g.out[1] + oh) * g.out[2];
                  for (int64_t iw = 0; iw < g.in[2]; ++iw) {
                    int64_t ow = iw * g.stride[2] - g.pad[2] + kw * g.dil[2];
                    if (ow >= 0 && ow < g.out[2]) orow[ow] += wv * irow[iw];
                  }
                }
              }
            }
      }
    }
  return {y};
}

}  // namespace

void register_conv_ops(OpTable& table) {
  table["Conv"] = conv;
  table["ConvTranspose"] = conv_transpose;
}

}  // namespace collage::native
