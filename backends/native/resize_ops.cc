// Resize (opset 13 form; the importer maps Upsample and Resize-10 onto it):
// nearest and N-linear, all coordinate transforms except tf_crop_and_resize.
#include <cmath>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

struct Axis {
  std::vector<int64_t> i0, i1;  // source indices per output index
  std::vector<float> w1;        // weight of i1 (linear); 0 for nearest
};

std::vector<Tensor> resize(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor* scales_t = optional_input(inputs, 2);
  const Tensor* sizes_t = optional_input(inputs, 3);
  std::string mode = node.attr_string("mode", "nearest");
  std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string nearest = node.attr_string("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear")
    unsupported(node, "mode='" + mode + "' is not supported (nearest, linear)");
  if (ctm != "half_pixel" && ctm != "asymmetric" && ctm != "align_corners" && ctm != "pytorch_half_pixel")
    unsupported(node, "coordinate_transformation_mode='" + ctm + "' is not supported");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" && nearest != "floor" &&
      nearest != "ceil")
    unsupported(node, "nearest_mode='" + nearest + "' is not supported");
  if (x.dtype() != DType::Float32) unsupported(node, "only float32 input is supported");
  size_t rank = static_cast<size_t>(x.rank());
  std::vector<double> scale(rank, 1.0);
  Shape out_shape = x.shape();
  if (sizes_t && sizes_t->size() > 0) {
    auto sizes = sizes_t->to_int64_vector();
    if (sizes.size() != rank) invalid(node, "sizes must have one value per dimension");
    for (size_t d = 0; d < rank; ++d) {
      if (sizes[d] < 0) invalid(node, "negative size");
      out_shape[d] = sizes[d];
      scale[d] = x.dim(static_cast<int64_t>(d))
                     ? static_cast<double>(sizes[d]) / static_cast<double>(x.dim(static_cast<int64_t>(d)))
                     : 1.0;
    }
  } else if (scales_t && scales_t->size() > 0) {
    auto s = scales_t->to_double_vector();
    if (s.size() != rank) invalid(node, "scales must have one value per dimension");
    for (size_t d = 0; d < rank; ++d) {
      if (!(s[d] > 0)) invalid(node, "scales must be positive");
      scale[d] = s[d];
      out_shape[d] =
          static_cast<int64_t>(std::floor(static_cast<double>(x.dim(static_cast<int64_t>(d))) * s[d]));
    }
  } else {
    invalid(node, "one of scales or sizes must be given");
  }
  std::vector<Axis> axes(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t in = x.dim(static_cast<int64_t>(d)), out = out_shape[d];
    Axis& a = axes[d];
    for (int64_t o = 0; o < out; ++o) {
      double c;
      if (ctm == "asymmetric")
        c = o / scale[d];
      else if (ctm == "align_corners")
        c = out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1)
                    : 0.0;
      else if (ctm == "pytorch_half_pixel")
        c = out > 1 ? (o + 0.5) / scale[d] - 0.5 : 0.0;
      else
        c = (o + 0.5) / scale[d] - 0.5;
      if (mode == "nearest") {
        double r;
        if (nearest == "floor")
          r = std::floor(c);
        else if (nearest == "ceil")
          r = std::ceil(c);
        else if (nearest == "round_prefer_ceil")
          r = std::floor(c + 0.5);
        else
          r = (c - std::floor(c) == 0.5) ? std::floor(c) : std::round(c);
        int64_t idx = std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
        a.i0.push_back(idx);
        a.i1.push_back(idx);
        a.w1.push_back(0.0f);
      } else {
        c = std::clamp(c, 0.0, static_cast<double>(in - 1));
        int64_t lo = static_cast<int64_t>(std::floor(c));
        a.i0.push_back(lo);
        a.i1.push_back(std::min(lo + 1, in - 1));
        a.w1.push_back(static_cast<float>(c - static_cast<double>(lo)));
      }
    }
  }
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  auto xs = strides_of(x.shape());
  auto ys = strides_of(out_shape);
  std::vector<size_t> interp;  // dims that blend two sources
  if (mode == "linear")
    for (size_t d = 0; d < rank; ++d)
      if (out_shape[d] != x.dim(static_cast<int64_t>(d)) || scale[d] != 1.0) interp.push_back(d);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t o = 0; o < y.size(); ++o) {
    for (size_t d = 0; d < rank; ++d) idx[d] = (o / ys[d]) % out_shape[d];
    int64_t base = 0;
    for (size_t d = 0; d < rank; ++d) base += axes[d].i0[static_cast<size_t>(idx[d])] * xs[d];
    if (interp.empty()) {
      yp[o] = xp[base];
      continue;
    }
    double v = 0;
    for (size_t corner = 0; corner < (size_t{1} << interp.size()); ++corner) {
      int64_t off = base;
      double w = 1;
      for (size_t k = 0; k < interp.size(); ++k) {
        const Axis& a = axes[interp[k]];
        size_t i = static_cast<size_t>(idx[interp[k]]);
        if (corner & (size_t{1} << k)) {
          off += (a.i1[i] - a.i0[i]) * xs[interp[k]];
          w *= a.w1[i];
        } else {
          w *= 1.0 - a.w1[i];
        }
      }
      if (w != 0) v += w * xp[off];
    }
    yp[o] = static_cast<float>(v);
  }
  return {y};
}

}  // namespace

void register_resize_ops(OpTable& table) { table["Resize"] = resize; }

}  // namespace collage::native
