// Signal-processing ops: the window generators HannWindow, HammingWindow and
// BlackmanWindow, MelWeightMatrix, DFT (opset 17 axis attribute, opset 20 axis
// input) and STFT. Reference kernels: a direct O(n^2) DFT in double per
// signal; complex tensors are real ones with a trailing dim of 2 ([re, im]).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <string>
#include <vector>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

namespace {

constexpr int64_t kMaxGenerated = int64_t{1} << 28;  // elements: far beyond any real window/filterbank

// A scalar integer input (int32 or int64, one element).
int64_t scalar_int(const Node& node, const Tensor& t, const char* role) {
  std::vector<int64_t> v = int_values(node, t, role);
  if (v.size() != 1)
    invalid(node, std::string(role) + " must be a scalar, got shape " + shape_to_string(t.shape()));
  return v[0];
}

double scalar_number(const Node& node, const Tensor& t, const char* role) {
  if (t.size() != 1)
    invalid(node, std::string(role) + " must be a scalar, got shape " + shape_to_string(t.shape()));
  return t.to_double_vector()[0];
}

DType output_datatype(const Node& node) {
  const int64_t code = node.attr_int("output_datatype", 1);
  DType to = DType::Undefined;
  try {
    to = dtype_from_onnx(static_cast<int>(code));
  } catch (const Error&) {
    unsupported(node, "output_datatype " + std::to_string(code) + " is not supported");
  }
  return to;
}

Tensor from_doubles(const Node& node, const std::vector<double>& v, DType to, Shape shape,
                    TensorAllocator& alloc) {
  Tensor out = alloc.allocate(to, shape);
  convert_elements(node, DType::Float64, v.data(), to, out.raw(), static_cast<int64_t>(v.size()));
  return out;
}

// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1.
std::vector<Tensor> cosine_window(const Node& node, KernelInputs inputs, TensorAllocator& alloc, double a0,
                                  double a1, double a2) {
  const int64_t size = scalar_int(node, input(node, inputs, 0), "size");
  if (size < 0 || size > kMaxGenerated) invalid(node, "size " + std::to_string(size) + " is out of range");
  const bool periodic = node.attr_int("periodic", 1) != 0;
  const double denom = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    // A symmetric window of one sample is [1] (scipy/torch), not 0/0.
    const double x = denom > 0 ? 2.0 * std::numbers::pi * static_cast<double>(n) / denom : 0.0;
    w[static_cast<size_t>(n)] = a0 - a1 * std::cos(x) + a2 * std::cos(2.0 * x);
  }
  if (denom <= 0 && size == 1) w[0] = 1.0;
  return {from_doubles(node, w, output_datatype(node), {size}, alloc)};
}

std::vector<Tensor> hann_window(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  return cosine_window(node, inputs, alloc, 0.5, 0.5, 0.0);
}
std::vector<Tensor> hamming_window(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  return cosine_window(node, inputs, alloc, 25.0 / 46.0, 21.0 / 46.0, 0.0);
}
std::vector<Tensor> blackman_window(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  return cosine_window(node, inputs, alloc, 0.42, 0.5, 0.08);
}

// Triangular mel filters: [dft_length / 2 + 1, num_mel_bins], as ONNX's reference builds them.
std::vector<Tensor> mel_weight_matrix(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const int64_t bins = scalar_int(node, input(node, inputs, 0), "num_mel_bins");
  const int64_t dft_length = scalar_int(node, input(node, inputs, 1), "dft_length");
  const int64_t sample_rate = scalar_int(node, input(node, inputs, 2), "sample_rate");
  const double lower = scalar_number(node, input(node, inputs, 3), "lower_edge_hertz");
  const double upper = scalar_number(node, input(node, inputs, 4), "upper_edge_hertz");
  if (bins <= 0 || bins > 65536) invalid(node, "num_mel_bins " + std::to_string(bins) + " is out of range");
  if (dft_length <= 0 || dft_length > kMaxGenerated / bins)
    invalid(node, "dft_length " + std::to_string(dft_length) + " is out of range");
  if (sample_rate <= 0) invalid(node, "sample_rate must be positive");
  if (!(lower >= 0 && upper > lower)) invalid(node, "the edge frequencies need 0 <= lower < upper");
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  const double low_mel = 2595.0 * std::log10(1.0 + lower / 700.0);
  const double high_mel = 2595.0 * std::log10(1.0 + upper / 700.0);
  const double step = (high_mel - low_mel) / static_cast<double>(bins + 2);
  std::vector<int64_t> points(static_cast<size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + low_mel) / 2595.0) - 1.0);
    const double p = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    // Clamp into the spectrogram: filters above Nyquist are cut off rather than written out of bounds.
    points[static_cast<size_t>(i)] =
        std::min<int64_t>(static_cast<int64_t>(std::max(p, 0.0)), spectrogram_bins - 1);
  }
  std::vector<double> w(static_cast<size_t>(spectrogram_bins * bins), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& { return w[static_cast<size_t>(j * bins + i)]; };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t lo = points[static_cast<size_t>(i)], mid = points[static_cast<size_t>(i + 1)],
                  hi = points[static_cast<size_t>(i + 2)];
    if (mid == lo)
      at(mid, i) = 1.0;
    else
      for (int64_t j = lo; j <= mid; ++j)
        at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    for (int64_t j = mid; j < hi; ++j) at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  return {from_doubles(node, w, output_datatype(node), {spectrogram_bins, bins}, alloc)};
}

// out[k] = sum_n in[n] e^{-+2 pi i k n / length} for k < out_len; in has in_len samples
// (zero padded / truncated to `length`). Complex values as (re, im) pairs.
void dft_1d(const double* re, const double* im, int64_t in_len, int64_t length, int64_t out_len, bool inverse,
            double* out_re, double* out_im) {
  const double sign = inverse ? 1.0 : -1.0;
  const int64_t n_used = std::min(in_len, length);
  for (int64_t k = 0; k < out_len; ++k) {
    double sr = 0, si = 0;
    for (int64_t n = 0; n < n_used; ++n) {
      const double angle =
          sign * 2.0 * std::numbers::pi * static_cast<double>((k * n) % length) / static_cast<double>(length);
      const double c = std::cos(angle), s = std::sin(angle);
      sr += re[n] * c - im[n] * s;
      si += re[n] * s + im[n] * c;
    }
    if (inverse) {
      sr /= static_cast<double>(length);
      si /= static_cast<double>(length);
    }
    out_re[k] = sr;
    out_im[k] = si;
  }
}

std::vector<Tensor> dft(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
    unsupported(node,
                std::string("input has type ") + dtype_name(x.dtype()) + "; supported: float32, float64");
  const int64_t rank = x.rank();
  if (rank < 2) invalid(node, "input needs rank >= 2 (the last dim holds [re] or [re, im])");
  const int64_t comps = x.dim(rank - 1);
  if (comps != 1 && comps != 2)
    invalid(node, "the last dim must be 1 (real) or 2 (complex), got " + std::to_string(comps));
  int64_t axis = 1;
  if (node.opset >= 20) {
    axis = -2;
    if (const Tensor* a = optional_input(inputs, 2); a && a->size() > 0) axis = scalar_int(node, *a, "axis");
  } else {
    axis = node.attr_int("axis", 1);
  }
  // The signal axes are [0, rank - 2]; negative values count from the back including the complex dim.
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > rank - 2)
    invalid(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  int64_t length = x.dim(a);
  if (const Tensor* l = optional_input(inputs, 1); l && l->size() > 0)
    length = scalar_int(node, *l, "dft_length");
  if (length <= 0 || length > kMaxGenerated)
    invalid(node, "dft_length " + std::to_string(length) + " is out of range");
  const bool inverse = node.attr_int("inverse", 0) != 0;
  const bool onesided = node.attr_int("onesided", 0) != 0;
  const int64_t out_len = onesided ? length / 2 + 1 : length;
  Shape out_shape = x.shape();
  out_shape[static_cast<size_t>(a)] = out_len;
  out_shape[static_cast<size_t>(rank - 1)] = 2;
  const std::vector<double> xv = x.to_double_vector();
  std::vector<double> ov(static_cast<size_t>(shape_size(out_shape)));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < a; ++d) outer *= x.dim(d);
  for (int64_t d = a + 1; d < rank - 1; ++d) inner *= x.dim(d);
  const int64_t in_len = x.dim(a);
  std::vector<double> re(static_cast<size_t>(in_len)), im(static_cast<size_t>(in_len));
  std::vector<double> ore(static_cast<size_t>(out_len)), oim(static_cast<size_t>(out_len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t n = 0; n < in_len; ++n) {
        const int64_t src = ((o * in_len + n) * inner + i) * comps;
        re[static_cast<size_t>(n)] = xv[static_cast<size_t>(src)];
        im[static_cast<size_t>(n)] = comps == 2 ? xv[static_cast<size_t>(src + 1)] : 0.0;
      }
      dft_1d(re.data(), im.data(), in_len, length, out_len, inverse, ore.data(), oim.data());
      for (int64_t k = 0; k < out_len; ++k) {
        const int64_t dst = ((o * out_len + k) * inner + i) * 2;
        ov[static_cast<size_t>(dst)] = ore[static_cast<size_t>(k)];
        ov[static_cast<size_t>(dst + 1)] = oim[static_cast<size_t>(k)];
      }
    }
  return {from_doubles(node, ov, x.dtype(), out_shape, alloc)};
}

// signal [batch, length, 1 or 2] -> [batch, frames, bins, 2].
std::vector<Tensor> stft(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float64)
    unsupported(node,
                std::string("signal has type ") + dtype_name(x.dtype()) + "; supported: float32, float64");
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    invalid(node, "signal must be [batch, length, 1 or 2], got " + shape_to_string(x.shape()));
  const int64_t step = scalar_int(node, input(node, inputs, 1), "frame_step");
  const Tensor* window = optional_input(inputs, 2);
  if (window && window->size() == 0 && window->rank() == 1 && window->dim(0) == 0) window = nullptr;
  int64_t frame_length = window ? window->size() : -1;
  if (const Tensor* fl = optional_input(inputs, 3); fl && fl->size() > 0)
    frame_length = scalar_int(node, *fl, "frame_length");
  if (frame_length <= 0) invalid(node, "needs a window or a positive frame_length");
  if (window && window->size() != frame_length)
    invalid(node, "window has " + std::to_string(window->size()) + " samples, frame_length is " +
                      std::to_string(frame_length));
  const int64_t batch = x.dim(0), length = x.dim(1), comps = x.dim(2);
  if (step <= 0) invalid(node, "frame_step must be positive");
  if (frame_length > length) invalid(node, "frame_length exceeds the signal length");
  const bool onesided = node.attr_int("onesided", 1) != 0;
  if (onesided && comps == 2) invalid(node, "onesided output needs a real signal");
  const int64_t frames = 1 + (length - frame_length) / step;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  const std::vector<double> xv = x.to_double_vector();
  std::vector<double> wv =
      window ? window->to_double_vector() : std::vector<double>(static_cast<size_t>(frame_length), 1.0);
  Shape out_shape{batch, frames, bins, 2};
  std::vector<double> ov(static_cast<size_t>(shape_size(out_shape)));
  std::vector<double> re(static_cast<size_t>(frame_length)), im(static_cast<size_t>(frame_length));
  std::vector<double> ore(static_cast<size_t>(bins)), oim(static_cast<size_t>(bins));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t n = 0; n < frame_length; ++n) {
        const int64_t src = (b * length + f * step + n) * comps;
        const double w = wv[static_cast<size_t>(n)];
        re[static_cast<size_t>(n)] = xv[static_cast<size_t>(src)] * w;
        im[static_cast<size_t>(n)] = comps == 2 ? xv[static_cast<size_t>(src + 1)] * w : 0.0;
      }
      dft_1d(re.data(), im.data(), frame_length, frame_length, bins, false, ore.data(), oim.data());
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t dst = ((b * frames + f) * bins + k) * 2;
        ov[static_cast<size_t>(dst)] = ore[static_cast<size_t>(k)];
        ov[static_cast<size_t>(dst + 1)] = oim[static_cast<size_t>(k)];
      }
    }
  return {from_doubles(node, ov, x.dtype(), out_shape, alloc)};
}

}  // namespace

void register_spectral_ops(OpTable& table) {
  table["HannWindow"] = hann_window;
  table["HammingWindow"] = hamming_window;
  table["BlackmanWindow"] = blackman_window;
  table["MelWeightMatrix"] = mel_weight_matrix;
  table["DFT"] = dft;
  table["STFT"] = stft;
}

}  // namespace collage::native
