// Resize (opsets 11-19; the importer maps Upsample and Resize-10 onto it):
// nearest, linear and cubic (cubic_coeff_a, exclude_outside), antialias for
// linear/cubic, every coordinate transform (half_pixel, half_pixel_symmetric,
// pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize with roi and
// extrapolation_value), the `axes` attribute and keep_aspect_ratio_policy.
// Invariant: follows the ONNX reference (onnx/reference/ops/op_resize.py): each
// axis gets, per output index, a window of source indices (edge-clamped) and
// weights; the N-d result is the tensor product, applied one axis at a time.
#include <cmath>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

struct Params {
  std::string mode, ctm, nearest;
  float cubic_a = -0.75f;
  bool exclude_outside = false;
  bool antialias = false;
  float extrapolation = 0.0f;
};

// Per output index along one axis: `n` taps starting at row*n in idx/w.
struct AxisPlan {
  int64_t n = 0;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> outside;  // tf_crop_and_resize: output takes extrapolation_value
};

double cubic_kernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

std::vector<double> coeffs(const Params& p, double ratio, double scale) {
  if (p.mode == "nearest") {
    if (ratio == 1.0) return {0, 1};
    if (p.nearest == "round_prefer_floor") return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (p.nearest == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (p.nearest == "floor") return {1, 0};
    return {0, 1};
  }
  if (p.mode == "linear") {
    if (!p.antialias) return {1 - ratio, ratio};
    double s = std::min(scale, 1.0);
    int64_t start = static_cast<int64_t>(std::floor(-1.0 / s)) + 1;
    int64_t footprint = 2 - 2 * start;
    std::vector<double> c;
    double sum = 0;
    for (int64_t i = 0; i < footprint; ++i) {
      double v = std::clamp(1.0 - std::fabs((static_cast<double>(start + i) - ratio) * s), 0.0, 1.0);
      c.push_back(v);
      sum += v;
    }
    for (double& v : c) v /= sum;
    return c;
  }
  double a = p.cubic_a;
  if (!p.antialias)
    return {cubic_kernel(ratio + 1, a), cubic_kernel(ratio, a), cubic_kernel(1 - ratio, a),
            cubic_kernel(2 - ratio, a)};
  double s = std::min(scale, 1.0);
  int64_t start = static_cast<int64_t>(std::floor(-2.0 / s)) + 1;
  int64_t end = 2 - start;
  std::vector<double> c;
  double sum = 0;
  for (int64_t i = start; i < end; ++i) {
    double v = cubic_kernel(s * (static_cast<double>(i) - ratio), a);
    c.push_back(v);
    sum += v;
  }
  for (double& v : c) v /= sum;
  return c;
}

AxisPlan plan_axis(const Node& node, const Params& p, int64_t in, int64_t out, double scale, double roi_start,
                   double roi_end) {
  AxisPlan plan;
  double out_w = scale * static_cast<double>(in);
  double fin = static_cast<double>(in);
  for (int64_t o = 0; o < out; ++o) {
    double x = static_cast<double>(o), c;
    bool outside = false;
    const std::string& ctm = p.ctm;
    if (ctm == "align_corners") {
      c = out_w == 1 ? 0.0 : x * (fin - 1) / (out_w - 1);
    } else if (ctm == "asymmetric") {
      c = x / scale;
    } else if (ctm == "tf_crop_and_resize") {
      c = out_w == 1 ? (roi_end - roi_start) * (fin - 1) / 2
                     : x * (roi_end - roi_start) * (fin - 1) / (out_w - 1);
      c += roi_start * (fin - 1);
      outside = c < 0 || c > fin - 1;
    } else if (ctm == "pytorch_half_pixel") {
      c = out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    } else if (ctm == "half_pixel_symmetric") {
      double adjustment = static_cast<double>(out) / out_w;
      double center = fin / 2;
      c = center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    } else {
      c = (x + 0.5) / scale - 0.5;
    }
    if (!std::isfinite(c) || std::fabs(c) > 1e15) {
      if (!outside) invalid(node, "source coordinate out of range (scales or roi too extreme)");
      c = 0;
    }
    double fl = std::floor(c);
    double ratio = c == fl ? 1.0 : c - fl;
    // Window base-n/2+1 .. base+n/2 (n even); an integral c is taken as ratio 1
    // from base c-1, as in the reference (nearest taps, ties to the lower one).
    int64_t base = static_cast<int64_t>(fl) - (c == fl ? 1 : 0);
    std::vector<double> cf = coeffs(p, ratio, scale);
    int64_t n = static_cast<int64_t>(cf.size());
    if (plan.n == 0) plan.n = n;
    if (n != plan.n) invalid(node, "interpolation window size changed along an axis");
    int64_t first = base - n / 2 + 1;
    if (p.exclude_outside) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        int64_t s = first + i;
        if (s < 0 || s >= in) cf[static_cast<size_t>(i)] = 0;
        sum += cf[static_cast<size_t>(i)];
      }
      if (sum != 0)
        for (double& v : cf) v /= sum;
    }
    for (int64_t i = 0; i < n; ++i) {
      plan.idx.push_back(std::clamp<int64_t>(first + i, 0, in - 1));
      plan.w.push_back(cf[static_cast<size_t>(i)]);
    }
    plan.outside.push_back(outside ? 1 : 0);
  }
  return plan;
}

std::vector<Tensor> resize(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor* roi_t = optional_input(inputs, 1);
  const Tensor* scales_t = optional_input(inputs, 2);
  const Tensor* sizes_t = optional_input(inputs, 3);
  Params p;
  p.mode = node.attr_string("mode", "nearest");
  p.ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  p.nearest = node.attr_string("nearest_mode", "round_prefer_floor");
  p.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  p.antialias = node.attr_int("antialias", 0) != 0;
  p.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic")
    unsupported(node, "mode='" + p.mode + "' is not supported (nearest, linear, cubic)");
  if (p.ctm != "half_pixel" && p.ctm != "asymmetric" && p.ctm != "align_corners" &&
      p.ctm != "pytorch_half_pixel" && p.ctm != "half_pixel_symmetric" && p.ctm != "tf_crop_and_resize")
    unsupported(node, "coordinate_transformation_mode='" + p.ctm + "' is not supported");
  if (p.nearest != "round_prefer_floor" && p.nearest != "round_prefer_ceil" && p.nearest != "floor" &&
      p.nearest != "ceil")
    unsupported(node, "nearest_mode='" + p.nearest + "' is not supported");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    invalid(node, "keep_aspect_ratio_policy='" + policy + "' is not one of stretch, not_larger, not_smaller");
  if (p.mode == "nearest") p.antialias = false;  // antialias applies to linear and cubic only
  if (x.dtype() != DType::Float32) unsupported(node, "only float32 input is supported");
  const int64_t rank = x.rank();
  std::vector<int64_t> axes = node.attr_ints("axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  for (int64_t& a : axes) {
    a = normalize_axis(node, a, rank);
    if (seen[static_cast<size_t>(a)]) invalid(node, "axes contains a repeated axis");
    seen[static_cast<size_t>(a)] = 1;
  }
  const size_t na = axes.size();
  std::vector<double> scale(static_cast<size_t>(rank), 1.0);
  Shape out_shape = x.shape();
  if (sizes_t && sizes_t->size() > 0) {
    auto sizes = sizes_t->to_int64_vector();
    if (sizes.size() != na)
      invalid(node, "sizes must have one value per resized axis (" + std::to_string(na) + ")");
    for (int64_t s : sizes)
      if (s < 0 || s > (int64_t{1} << 40)) invalid(node, "sizes must be in [0, 2^40]");
    if (policy == "stretch") {
      for (size_t k = 0; k < na; ++k) {
        int64_t in = x.dim(axes[k]);
        out_shape[static_cast<size_t>(axes[k])] = sizes[k];
        scale[static_cast<size_t>(axes[k])] =
            in ? static_cast<double>(sizes[k]) / static_cast<double>(in) : 1.0;
      }
    } else {
      double common = policy == "not_larger" ? INFINITY : -INFINITY;
      for (size_t k = 0; k < na; ++k) {
        int64_t in = x.dim(axes[k]);
        if (in == 0) continue;
        double s = static_cast<double>(sizes[k]) / static_cast<double>(in);
        common = policy == "not_larger" ? std::min(common, s) : std::max(common, s);
      }
      if (!std::isfinite(common)) common = 1.0;
      for (size_t k = 0; k < na; ++k) {
        auto d = static_cast<size_t>(axes[k]);
        scale[d] = common;
        out_shape[d] = static_cast<int64_t>(std::floor(common * static_cast<double>(x.dim(axes[k])) + 0.5));
      }
    }
  } else if (scales_t && scales_t->size() > 0) {
    auto s = scales_t->to_double_vector();
    if (s.size() != na)
      invalid(node, "scales must have one value per resized axis (" + std::to_string(na) + ")");
    for (size_t k = 0; k < na; ++k) {
      if (!(s[k] > 0) || !std::isfinite(s[k])) invalid(node, "scales must be positive and finite");
      auto d = static_cast<size_t>(axes[k]);
      scale[d] = s[k];
      double o = std::floor(static_cast<double>(x.dim(axes[k])) * s[k]);
      if (o > 1e12) invalid(node, "output size is too large");
      out_shape[d] = static_cast<int64_t>(o);
    }
  } else {
    invalid(node, "one of scales or sizes must be given");
  }
  std::vector<double> roi_start(static_cast<size_t>(rank), 0.0), roi_end(static_cast<size_t>(rank), 1.0);
  if (p.ctm == "tf_crop_and_resize") {
    if (!roi_t || roi_t->size() == 0) invalid(node, "tf_crop_and_resize needs the roi input");
    auto roi = roi_t->to_double_vector();
    if (roi.size() == 2 * na) {
      for (size_t k = 0; k < na; ++k) {
        roi_start[static_cast<size_t>(axes[k])] = roi[k];
        roi_end[static_cast<size_t>(axes[k])] = roi[na + k];
      }
    } else if (roi.size() == 2 * static_cast<size_t>(rank)) {
      for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
        roi_start[d] = roi[d];
        roi_end[d] = roi[static_cast<size_t>(rank) + d];
      }
    } else {
      invalid(node, "roi must have 2 values per resized axis");
    }
  }

  // Separable: resize one axis at a time in double precision.
  Shape cur_shape = x.shape();
  std::vector<double> cur(static_cast<size_t>(x.size()));
  const float* xp = x.data<float>();
  for (size_t i = 0; i < cur.size(); ++i) cur[i] = xp[i];
  std::vector<std::vector<char>> outside(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    auto du = static_cast<size_t>(d);
    int64_t in = cur_shape[du], out = out_shape[du];
    bool identity = in == out && scale[du] == 1.0 && p.ctm != "tf_crop_and_resize";
    if (identity) continue;
    if (in == 0 && out > 0) invalid(node, "cannot resize an empty dimension to a non-empty one");
    AxisPlan plan = plan_axis(node, p, in, out, scale[du], roi_start[du], roi_end[du]);
    outside[du] = plan.outside;
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < d; ++k) outer *= cur_shape[static_cast<size_t>(k)];
    for (int64_t k = d + 1; k < rank; ++k) inner *= cur_shape[static_cast<size_t>(k)];
    std::vector<double> next(static_cast<size_t>(outer * out * inner), 0.0);
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t o = 0; o < out; ++o)
        for (int64_t t = 0; t < plan.n; ++t) {
          auto tap = static_cast<size_t>(o * plan.n + t);
          double w = plan.w[tap];
          if (w == 0) continue;
          const double* src = cur.data() + (a * in + plan.idx[tap]) * inner;
          double* dst = next.data() + (a * out + o) * inner;
          for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
        }
    cur.swap(next);
    cur_shape[du] = out;
  }
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  float* yp = y.data<float>();
  auto ys = strides_of(out_shape);
  for (int64_t o = 0; o < y.size(); ++o) {
    bool ext = false;
    for (size_t d = 0; d < static_cast<size_t>(rank) && !ext; ++d)
      if (!outside[d].empty() && outside[d][static_cast<size_t>((o / ys[d]) % out_shape[d])]) ext = true;
    yp[o] = ext ? p.extrapolation : static_cast<float>(cur[static_cast<size_t>(o)]);
  }
  return {y};
}

}  // namespace

void register_resize_ops(OpTable& table) { table["Resize"] = resize; }

}  // namespace collage::native
