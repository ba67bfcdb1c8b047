// Spatial sampling kernels: GridSample (opsets 16-20: nearest, linear/bilinear,
// cubic/bicubic (2-D only), padding zeros/border/reflection, align_corners,
// any number of spatial dims) and AffineGrid (opset 20, 2-D and 3-D).
// Invariants: follows the ONNX reference (onnx/reference/ops/op_grid_sample.py,
// op_affine_grid.py); grid's last axis lists coordinates innermost-first (x
// indexes the last spatial dim); NaN grid coordinates sample as padding.
#include <cmath>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

enum class Padding { Zeros, Border, Reflection };

double reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo) {
    double dx = lo - x;
    double n = std::floor(dx / rng);
    double r = dx - n * rng;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    double n = std::floor(dx / rng);
    double r = dx - n * rng;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

double cubic(double x) {
  const double a = -0.75;
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

std::vector<Tensor> grid_sample(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& grid = input(node, inputs, 1);
  require_float(node, x, "X");
  require_float(node, grid, "grid");
  std::string mode = node.attr_string("mode", node.opset >= 20 ? "linear" : "bilinear");
  std::string pad = node.attr_string("padding_mode", "zeros");
  const bool align = node.attr_int("align_corners", 0) != 0;
  int kind;  // 0 nearest, 1 linear, 2 cubic
  if (mode == "nearest")
    kind = 0;
  else if (mode == "linear" || mode == "bilinear")
    kind = 1;
  else if (mode == "cubic" || mode == "bicubic")
    kind = 2;
  else
    invalid(node, "mode='" + mode + "' is not one of nearest, linear, cubic");
  Padding padding;
  if (pad == "zeros")
    padding = Padding::Zeros;
  else if (pad == "border")
    padding = Padding::Border;
  else if (pad == "reflection")
    padding = Padding::Reflection;
  else
    invalid(node, "padding_mode='" + pad + "' is not one of zeros, border, reflection");
  const int64_t rank = x.rank();
  const int64_t r = rank - 2;
  if (r < 1) invalid(node, "X must have rank >= 3");
  if (grid.rank() != rank || grid.dim(0) != x.dim(0) || grid.dim(rank - 1) != r)
    invalid(node, "grid must have shape (N, out spatial..., " + std::to_string(r) + ")");
  if (kind == 2 && r != 2) unsupported(node, "cubic mode is only defined for 2-D spatial input");
  const int64_t n_batch = x.dim(0), channels = x.dim(1);
  Shape out_shape{n_batch, channels};
  int64_t out_pts = 1;
  for (int64_t d = 1; d < rank - 1; ++d) {
    out_shape.push_back(grid.dim(d));
    out_pts *= grid.dim(d);
  }
  std::vector<int64_t> dims(static_cast<size_t>(r));
  int64_t in_pts = 1;
  for (int64_t d = 0; d < r; ++d) {
    dims[static_cast<size_t>(d)] = x.dim(2 + d);
    in_pts *= x.dim(2 + d);
  }
  auto xs = strides_of(x.shape());
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  const float* xp = x.data<float>();
  const float* gp = grid.data<float>();
  float* yp = y.data<float>();
  const int64_t taps_per_dim = kind == 0 ? 1 : (kind == 1 ? 2 : 4);
  std::vector<std::vector<int64_t>> tap_idx(static_cast<size_t>(r));
  std::vector<std::vector<double>> tap_w(static_cast<size_t>(r));
  for (int64_t b = 0; b < n_batch; ++b)
    for (int64_t p = 0; p < out_pts; ++p) {
      const float* g = gp + (b * out_pts + p) * r;
      bool nan_point = false;
      for (int64_t d = 0; d < r; ++d) {
        auto du = static_cast<size_t>(d);
        const int64_t len = dims[du];
        const double fl = static_cast<double>(len);
        double c = g[r - 1 - d];  // grid lists the innermost dim first
        if (std::isnan(c)) nan_point = true;
        c = align ? (c + 1) / 2 * (fl - 1) : ((c + 1) * fl - 1) / 2;
        const double lo = align ? 0.0 : -0.5, hi = align ? fl - 1 : fl - 0.5;
        if (!std::isfinite(c)) c = c > 0 ? 1e12 : -1e12;
        c = std::clamp(c, -1e12, 1e12);
        if (c < lo || c > hi) {
          if (padding == Padding::Border)
            c = std::clamp(c, 0.0, fl - 1);
          else if (padding == Padding::Reflection)
            c = reflect(c, lo, hi);
        }
        tap_idx[du].clear();
        tap_w[du].clear();
        auto push = [&](double pos, double w) {
          auto i = static_cast<int64_t>(pos);
          if (padding == Padding::Border) {
            i = std::clamp<int64_t>(i, 0, len - 1);
          } else if (padding == Padding::Reflection) {
            i = static_cast<int64_t>(reflect(pos, lo, hi));
            i = std::clamp<int64_t>(i, 0, len - 1);
          } else if (i < 0 || i >= len) {
            i = -1;  // zeros padding
          }
          tap_idx[du].push_back(i);
          tap_w[du].push_back(w);
        };
        if (kind == 0) {
          push(std::nearbyint(c), 1.0);
        } else if (kind == 1) {
          double f = std::floor(c);
          push(f, 1 - (c - f));
          push(f + 1, c - f);
        } else {
          double f = std::floor(c), t = c - f;
          push(f - 1, cubic(t + 1));
          push(f, cubic(t));
          push(f + 1, cubic(1 - t));
          push(f + 2, cubic(2 - t));
        }
      }
      int64_t combos = 1;
      for (int64_t d = 0; d < r; ++d) combos *= taps_per_dim;
      for (int64_t ch = 0; ch < channels; ++ch) {
        const float* plane = xp + b * xs[0] + ch * xs[1];
        double acc = 0;
        if (!nan_point || padding != Padding::Zeros)
          for (int64_t cmb = 0; cmb < combos && !nan_point; ++cmb) {
            int64_t rest = cmb, off = 0;
            double w = 1;
            for (int64_t d = 0; d < r; ++d) {
              auto du = static_cast<size_t>(d);
              auto t = static_cast<size_t>(rest % taps_per_dim);
              rest /= taps_per_dim;
              int64_t i = tap_idx[du][t];
              w *= tap_w[du][t];
              if (i < 0) {
                w = 0;
                break;
              }
              off += i * xs[static_cast<size_t>(2 + d)];
            }
            if (w != 0) acc += w * plane[off];
          }
        if (in_pts == 0) acc = 0;
        yp[(b * channels + ch) * out_pts + p] = nan_point ? NAN : static_cast<float>(acc);
      }
    }
  return {y};
}

std::vector<Tensor> affine_grid(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& theta = input(node, inputs, 0);
  const Tensor& size_t_ = input(node, inputs, 1);
  require_float(node, theta, "theta");
  const bool align = node.attr_int("align_corners", 0) != 0;
  auto size = size_t_.to_int64_vector();
  if (size.size() != 4 && size.size() != 5) invalid(node, "size must be (N, C, H, W) or (N, C, D, H, W)");
  const int64_t r = static_cast<int64_t>(size.size()) - 2;
  for (int64_t s : size)
    if (s < 0 || s > (int64_t{1} << 31)) invalid(node, "size values must be in [0, 2^31]");
  const int64_t n = size[0];
  if (theta.rank() != 3 || theta.dim(0) != n || theta.dim(1) != r || theta.dim(2) != r + 1)
    invalid(node, "theta must have shape (N, " + std::to_string(r) + ", " + std::to_string(r + 1) + ")");
  Shape out_shape{n};
  int64_t pts = 1;
  for (int64_t d = 0; d < r; ++d) {
    out_shape.push_back(size[static_cast<size_t>(2 + d)]);
    pts *= size[static_cast<size_t>(2 + d)];
  }
  out_shape.push_back(r);
  Tensor y = alloc.allocate(DType::Float32, out_shape);
  auto base = [&](int64_t i, int64_t len) {
    if (align) return len == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(len - 1);
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(len) - 1.0;
  };
  const float* th = theta.data<float>();
  float* yp = y.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < pts; ++p) {
      std::vector<double> coord(static_cast<size_t>(r + 1), 1.0);  // x (innermost), y, [z], 1
      int64_t rest = p;
      for (int64_t d = r - 1; d >= 0; --d) {
        int64_t len = size[static_cast<size_t>(2 + d)];
        coord[static_cast<size_t>(r - 1 - d)] = base(rest % len, len);
        rest /= len;
      }
      for (int64_t o = 0; o < r; ++o) {
        double v = 0;
        for (int64_t k = 0; k <= r; ++k)
          v += static_cast<double>(th[(b * r + o) * (r + 1) + k]) * coord[static_cast<size_t>(k)];
        yp[(b * pts + p) * r + o] = static_cast<float>(v);
      }
    }
  return {y};
}

}  // namespace

void register_grid_ops(OpTable& table) {
  table["GridSample"] = grid_sample;
  table["AffineGrid"] = affine_grid;
}

}  // namespace collage::native
