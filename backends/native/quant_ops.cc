// Linear quantization ops: QuantizeLinear / DequantizeLinear (opsets 10-21:
// per-tensor, per-axis and opset-21 blocked scales; 8- and 16-bit integer zero
// points), DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and
// QLinearConv. Integer products accumulate exactly in int64 and wrap to int32 as
// ONNX specifies; requantisation rounds to nearest, ties to even, then saturates.
// float8 and int4 types never reach these kernels (the Tensor cannot hold them).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"
#include "core/ir/conv_geometry.h"

namespace collage::native {

namespace {

bool is_quant_type(DType t) {
  return t == DType::UInt8 || t == DType::Int8 || t == DType::UInt16 || t == DType::Int16;
}

// Integer element values of any integer tensor, widened.
std::vector<int64_t> ints_of(const Tensor& t) { return t.to_int64_vector(); }

// Element values as double; a dtype the Tensor cannot read (float16 while no
// kernel reads it) is refused naming the node.
std::vector<double> doubles_of(const Node& node, const Tensor& t) {
  try {
    return t.to_double_vector();
  } catch (const Error& e) {
    unsupported(node, e.what());
  }
}

std::pair<double, double> type_range(DType t) {
  switch (t) {
    case DType::UInt8:
      return {0, 255};
    case DType::Int8:
      return {-128, 127};
    case DType::UInt16:
      return {0, 65535};
    case DType::Int16:
      return {-32768, 32767};
    default:
      return {0, 0};
  }
}

// Writes saturated, already rounded values into an integer tensor of dtype `t`.
void store_saturated(Tensor& y, const std::vector<double>& v) {
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto range = type_range(y.dtype());
  const double lo = range.first, hi = range.second;
  auto put = [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(std::clamp(v[i], lo, hi));
  };
  switch (y.dtype()) {
    case DType::UInt8:
      put(y.data<uint8_t>());
      break;
    case DType::Int8:
      put(y.data<int8_t>());
      break;
    case DType::UInt16:
      put(y.data<uint16_t>());
      break;
    case DType::Int16:
      put(y.data<int16_t>());
      break;
    default:
      throw Error(ErrorKind::Internal, "store_saturated: not a quantized type");
  }
}

// For every element of `x`, the index of its scale / zero point.
// Per-tensor: scale of one element. Per-axis: 1-D scale of x.dim(axis) values.
// Blocked (block_size > 0): scale of x's rank with ceil(dim/block_size) on `axis`.
std::vector<int64_t> param_index(const Node& node, const Shape& x_shape, const Tensor& scale) {
  int64_t n = shape_size(x_shape);
  std::vector<int64_t> idx(static_cast<size_t>(n), 0);
  int64_t block = node.attr_int("block_size", 0);
  if (block < 0) invalid(node, "block_size must not be negative");
  if (scale.size() == 1 && scale.rank() <= 1 && block == 0) return idx;
  int64_t rank = static_cast<int64_t>(x_shape.size());
  if (rank == 0) invalid(node, "a scalar input needs a scalar scale");
  int64_t axis = normalize_axis(node, node.attr_int("axis", 1), rank);
  int64_t dim = x_shape[static_cast<size_t>(axis)], inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x_shape[static_cast<size_t>(d)];
  if (block == 0) {
    if (scale.rank() != 1 || scale.dim(0) != dim)
      invalid(node, "per-axis scale has shape " + shape_to_string(scale.shape()) + "; expected [" +
                        std::to_string(dim) + "] (axis " + std::to_string(axis) + ")");
    for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = (i / inner) % dim;
    return idx;
  }
  int64_t blocks = (dim + block - 1) / block;
  if (scale.rank() != rank) invalid(node, "blocked quantization needs a scale of the input's rank");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t want = d == axis ? blocks : x_shape[static_cast<size_t>(d)];
    if (scale.dim(d) != want)
      invalid(node, "blocked scale has shape " + shape_to_string(scale.shape()) + "; dim " +
                        std::to_string(d) + " must be " + std::to_string(want) + " (block_size " +
                        std::to_string(block) + ")");
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t in = i % inner, a = (i / inner) % dim, outer = i / (inner * dim);
    idx[static_cast<size_t>(i)] = (outer * blocks + a / block) * inner + in;
  }
  return idx;
}

void check_zero_point(const Node& node, const Tensor* zp, const Tensor& scale) {
  if (zp && zp->shape() != scale.shape() && !(zp->size() == 1 && scale.size() == 1))
    invalid(node, "zero point shape " + shape_to_string(zp->shape()) + " differs from scale shape " +
                      shape_to_string(scale.shape()));
}

void require_scale(const Node& node, const Tensor& scale, const char* role) {
  if (scale.dtype() != DType::Float32 && scale.dtype() != DType::Float16)
    unsupported(
        node, std::string(role) + " has type " + dtype_name(scale.dtype()) + "; supported: float32, float16");
}

std::vector<Tensor> quantize_linear(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& scale = input(node, inputs, 1);
  const Tensor* zp = optional_input(inputs, 2);
  if (x.dtype() != DType::Float32 && x.dtype() != DType::Float16 && x.dtype() != DType::Int32)
    unsupported(node, std::string("input has type ") + dtype_name(x.dtype()) +
                          "; supported: float32, float16, int32");
  require_scale(node, scale, "y_scale");
  int64_t output_dtype = node.attr_int("output_dtype", 0);
  DType out = DType::UInt8;
  if (zp) {
    out = zp->dtype();
    if (output_dtype != 0 && output_dtype != static_cast<int64_t>(out))
      invalid(node, "output_dtype differs from the zero point's type");
  } else if (output_dtype != 0) {
    if (output_dtype < 1 || output_dtype > 13 || !is_quant_type(static_cast<DType>(output_dtype)))
      unsupported(node, "output_dtype " + std::to_string(output_dtype) +
                            " is not supported (supported: uint8, int8, uint16, int16)");
    out = static_cast<DType>(output_dtype);
  }
  if (!is_quant_type(out))
    unsupported(node, std::string("zero point has type ") + dtype_name(out) +
                          "; supported: uint8, int8, uint16, int16");
  check_zero_point(node, zp, scale);
  auto idx = param_index(node, x.shape(), scale);
  std::vector<double> xv = doubles_of(node, x), sv = doubles_of(node, scale);
  std::vector<int64_t> zv = zp ? ints_of(*zp) : std::vector<int64_t>(sv.size(), 0);
  for (double s : sv)
    if (!(s > 0) && !(s < 0)) invalid(node, "y_scale must be non-zero");
  std::vector<double> q(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t p = static_cast<size_t>(idx[i]);
    // float32 division like the reference; ties round to even (default rounding mode).
    float r = static_cast<float>(xv[i]) / static_cast<float>(sv[p]);
    q[i] = std::nearbyint(static_cast<double>(r)) + static_cast<double>(zv[p]);
  }
  Tensor y = alloc.allocate(out, x.shape());
  store_saturated(y, q);
  return {y};
}

std::vector<Tensor> dequantize_linear(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& scale = input(node, inputs, 1);
  const Tensor* zp = optional_input(inputs, 2);
  if (!is_quant_type(x.dtype()) && x.dtype() != DType::Int32)
    unsupported(node, std::string("input has type ") + dtype_name(x.dtype()) +
                          "; supported: uint8, int8, uint16, int16, int32");
  if (scale.dtype() != DType::Float32)
    unsupported(node, std::string("x_scale has type ") + dtype_name(scale.dtype()) +
                          "; only float32 output is supported");
  if (zp && zp->dtype() != x.dtype()) invalid(node, "zero point type differs from the input type");
  check_zero_point(node, zp, scale);
  auto idx = param_index(node, x.shape(), scale);
  std::vector<int64_t> xv = ints_of(x), zv = zp ? ints_of(*zp) : std::vector<int64_t>(scale.size(), 0);
  if (x.dtype() == DType::Int32)
    for (int64_t z : zv)
      if (z != 0) invalid(node, "an int32 input needs a zero point of 0");
  const float* s = scale.data<float>();
  Tensor y = alloc.allocate(DType::Float32, x.shape());
  float* yp = y.data<float>();
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t p = static_cast<size_t>(idx[i]);
    yp[i] = static_cast<float>(xv[i] - zv[p]) * s[p];
  }
  return {y};
}

std::vector<Tensor> dynamic_quantize_linear(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  require_float(node, x, "input");
  const float* xp = x.data<float>();
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < x.size(); ++i) {
    if (std::isnan(xp[i])) invalid(node, "the input holds NaN");
    lo = std::min(lo, xp[i]);
    hi = std::max(hi, xp[i]);
  }
  float scale = (hi - lo) / 255.0f;
  double zp = 0;
  if (scale > 0) zp = std::nearbyint(std::clamp(static_cast<double>(0.0f - lo / scale), 0.0, 255.0));
  std::vector<double> q(static_cast<size_t>(x.size()), zp);
  if (scale > 0)
    for (size_t i = 0; i < q.size(); ++i) q[i] = std::nearbyint(static_cast<double>(xp[i] / scale)) + zp;
  Tensor y = alloc.allocate(DType::UInt8, x.shape());
  store_saturated(y, q);
  Tensor ys = alloc.allocate(DType::Float32, {});
  ys.data<float>()[0] = scale;
  Tensor yz = alloc.allocate(DType::UInt8, {});
  yz.data<uint8_t>()[0] = static_cast<uint8_t>(zp);
  return {y, ys, yz};
}

// Per-tensor (one value) or per-row of A / per-column of B (1-D of `n` values,
// or a tensor whose only non-1 dim is the row / column dim).
std::vector<int64_t> row_or_col_params(const Node& node, const Tensor* t, int64_t n, const char* role) {
  if (!t) return std::vector<int64_t>(static_cast<size_t>(n), 0);
  if (t->size() == 1) return std::vector<int64_t>(static_cast<size_t>(n), ints_of(*t)[0]);
  if (t->size() != n)
    unsupported(node, std::string(role) + " of shape " + shape_to_string(t->shape()) +
                          " is not supported (per-tensor or one value per row of a / column of b)");
  return ints_of(*t);
}

std::vector<double> row_or_col_scales(const Node& node, const Tensor& t, int64_t n, const char* role) {
  if (t.dtype() != DType::Float32 && t.dtype() != DType::Float16)
    unsupported(node,
                std::string(role) + " has type " + dtype_name(t.dtype()) + "; supported: float32, float16");
  std::vector<double> v = doubles_of(node, t);
  if (t.size() == 1) return std::vector<double>(static_cast<size_t>(n), v[0]);
  if (t.size() != n)
    unsupported(node, std::string(role) + " of shape " + shape_to_string(t.shape()) +
                          " is not supported (per-tensor or one value per row of a / column of b)");
  return v;
}

void require_8bit(const Node& node, const Tensor& t, const char* role) {
  if (t.dtype() != DType::UInt8 && t.dtype() != DType::Int8)
    unsupported(node, std::string(role) + " has type " + dtype_name(t.dtype()) + "; supported: uint8, int8");
}

// Integer numpy-style matmul of (a - za[row]) and (b - zb[col]); int32 result
// (wrapping, as ONNX allows accumulation to overflow only in 32 bits).
struct IntMatmul {
  Shape out_shape;
  int64_t m = 0, n = 0;
  std::vector<int32_t> c;
};

IntMatmul int_matmul(const Node& node, const Tensor& a, const Tensor* za, const Tensor& b, const Tensor* zb) {
  if (a.rank() < 1 || b.rank() < 1) invalid(node, "matmul inputs must have rank >= 1");
  Shape as = a.shape(), bs = b.shape();
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), k2 = bs[bs.size() - 2], n = bs.back();
  if (k != k2)
    invalid(node,
            "inner dimensions differ: " + shape_to_string(a.shape()) + " x " + shape_to_string(b.shape()));
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  Shape batch = broadcast_shapes(node, a_batch, b_batch);
  auto a_str = broadcast_strides(a_batch, batch), b_str = broadcast_strides(b_batch, batch);
  auto zav = row_or_col_params(node, za, m, "a_zero_point");
  auto zbv = row_or_col_params(node, zb, n, "b_zero_point");
  std::vector<int64_t> av = ints_of(a), bv = ints_of(b);
  int64_t batches = shape_size(batch);
  IntMatmul r;
  r.m = m;
  r.n = n;
  r.c.assign(static_cast<size_t>(batches * m * n), 0);
  auto bstrides = strides_of(batch);
  std::vector<int64_t> brow(static_cast<size_t>(k));
  for (int64_t t = 0; t < batches; ++t) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      int64_t coord = (t / bstrides[d]) % batch[d];
      ao += coord * a_str[d];
      bo += coord * b_str[d];
    }
    const int64_t* ap = av.data() + ao * m * k;
    const int64_t* bp = bv.data() + bo * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t acc = 0;
        for (int64_t q = 0; q < k; ++q)
          acc +=
              (ap[i * k + q] - zav[static_cast<size_t>(i)]) * (bp[q * n + j] - zbv[static_cast<size_t>(j)]);
        r.c[static_cast<size_t>((t * m + i) * n + j)] = static_cast<int32_t>(static_cast<uint32_t>(acc));
      }
  }
  r.out_shape = batch;
  if (!a_vec) r.out_shape.push_back(m);
  if (!b_vec) r.out_shape.push_back(n);
  return r;
}

std::vector<Tensor> matmul_integer(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a = input(node, inputs, 0);
  const Tensor& b = input(node, inputs, 1);
  const Tensor *za = optional_input(inputs, 2), *zb = optional_input(inputs, 3);
  require_8bit(node, a, "A");
  require_8bit(node, b, "B");
  if ((za && za->dtype() != a.dtype()) || (zb && zb->dtype() != b.dtype()))
    invalid(node, "a zero point's type differs from its matrix's type");
  IntMatmul r = int_matmul(node, a, za, b, zb);
  Tensor y = alloc.allocate(DType::Int32, r.out_shape);
  std::copy(r.c.begin(), r.c.end(), y.data<int32_t>());
  return {y};
}

// Requantises int32 accumulators: round(acc * multiplier) + zero point, saturated.
double requantize(int64_t acc, double multiplier, int64_t zp) {
  return std::nearbyint(static_cast<double>(acc) * multiplier) + static_cast<double>(zp);
}

std::vector<Tensor> qlinear_matmul(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& a = input(node, inputs, 0);
  const Tensor& a_scale = input(node, inputs, 1);
  const Tensor* a_zp = optional_input(inputs, 2);
  const Tensor& b = input(node, inputs, 3);
  const Tensor& b_scale = input(node, inputs, 4);
  const Tensor* b_zp = optional_input(inputs, 5);
  const Tensor& y_scale = input(node, inputs, 6);
  const Tensor* y_zp = optional_input(inputs, 7);
  require_8bit(node, a, "a");
  require_8bit(node, b, "b");
  if ((a_zp && a_zp->dtype() != a.dtype()) || (b_zp && b_zp->dtype() != b.dtype()))
    invalid(node, "a zero point's type differs from its matrix's type");
  DType out = y_zp ? y_zp->dtype() : DType::UInt8;
  if (out != DType::UInt8 && out != DType::Int8)
    unsupported(node, std::string("y_zero_point has type ") + dtype_name(out) + "; supported: uint8, int8");
  IntMatmul r = int_matmul(node, a, a_zp, b, b_zp);
  auto sa = row_or_col_scales(node, a_scale, r.m, "a_scale");
  auto sb = row_or_col_scales(node, b_scale, r.n, "b_scale");
  if (y_scale.size() != 1 || (y_zp && y_zp->size() != 1))
    unsupported(node, "y_scale and y_zero_point must be per-tensor");
  float sy = static_cast<float>(doubles_of(node, y_scale)[0]);
  if (sy == 0.0f) invalid(node, "y_scale must be non-zero");
  int64_t zy = y_zp ? ints_of(*y_zp)[0] : 0;
  std::vector<double> q(r.c.size());
  for (size_t i = 0; i < q.size(); ++i) {
    int64_t row = static_cast<int64_t>(i) / r.n % r.m, col = static_cast<int64_t>(i) % r.n;
    float mult = static_cast<float>(sa[static_cast<size_t>(row)]) *
                 static_cast<float>(sb[static_cast<size_t>(col)]) / sy;
    q[i] = requantize(r.c[i], mult, zy);
  }
  Tensor y = alloc.allocate(out, r.out_shape);
  store_saturated(y, q);
  return {y};
}

// Convolution geometry (not transposed), spatial dims lifted to 3-D.
struct ConvGeometry {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dil{1, 1, 1}, pad{0, 0, 0};
};

ConvGeometry conv_geometry(const Node& node, const Tensor& x, const Tensor& w) {
  if (x.rank() < 3 || x.rank() > 5)
    unsupported(node, "only 1-D, 2-D and 3-D convolutions are supported (input rank " +
                          std::to_string(x.rank()) + ")");
  if (w.rank() != x.rank()) invalid(node, "weight rank differs from input rank");
  size_t s = static_cast<size_t>(x.rank() - 2), off = 3 - s;
  auto ints = [&](const char* key, size_t n, int64_t fallback) {
    std::vector<int64_t> v = node.attr_ints(key, std::vector<int64_t>(n, fallback));
    if (v.size() != n)
      invalid(node, std::string("attribute ") + key + " must have " + std::to_string(n) + " values");
    return v;
  };
  auto strides = ints("strides", s, 1), dils = ints("dilations", s, 1), pads = ints("pads", 2 * s, 0);
  auto kshape = node.attr_ints("kernel_shape", {});
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  bool same = is_same_auto_pad(auto_pad, node.name);
  ConvGeometry g;
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x.dim(static_cast<int64_t>(d + 2)), k = w.dim(static_cast<int64_t>(d + 2));
    if (!kshape.empty() && (kshape.size() != s || kshape[d] != k))
      invalid(node, "kernel_shape does not match the weights");
    int64_t st = strides[d], dl = dils[d];
    if (st < 1 || dl < 1) invalid(node, "strides and dilations must be positive");
    int64_t span = window_span(k, dl), begin = pads[d], end = pads[d + s];
    if (auto_pad == "VALID") begin = end = 0;
    if (same) std::tie(begin, end) = same_padding(auto_pad == "SAME_UPPER", in, st, span);
    if (begin < 0 || end < 0) invalid(node, "pads must not be negative");
    int64_t out = (in + begin + end - span) / st + 1;
    if (out < 1) invalid(node, "the convolution leaves an empty output extent");
    g.in[off + d] = in;
    g.k[off + d] = k;
    g.out[off + d] = out;
    g.stride[off + d] = st;
    g.dil[off + d] = dl;
    g.pad[off + d] = begin;
  }
  return g;
}

// Integer convolution of (x - xz) and (w - wz[m]) (+ bias[m]); int32 wrapping result.
std::vector<int32_t> int_conv(const Node& node, const Tensor& x, const Tensor* xz, const Tensor& w,
                              const Tensor* wz, const Tensor* bias, Shape& out_shape, int64_t& channels) {
  ConvGeometry g = conv_geometry(node, x, w);
  int64_t batch = x.dim(0), c = x.dim(1), m = w.dim(0), group = node.attr_int("group", 1);
  if (group < 1 || c % group != 0 || m % group != 0 || w.dim(1) != c / group)
    invalid(node, "group " + std::to_string(group) + " does not fit input channels " + std::to_string(c) +
                      " and weight shape " + shape_to_string(w.shape()));
  if (xz && xz->size() != 1) unsupported(node, "x_zero_point must be per-tensor");
  int64_t xzv = xz ? ints_of(*xz)[0] : 0;
  std::vector<int64_t> wzv(static_cast<size_t>(m), 0);
  if (wz) {
    if (wz->size() == 1)
      wzv.assign(static_cast<size_t>(m), ints_of(*wz)[0]);
    else if (wz->size() == m)
      wzv = ints_of(*wz);
    else
      invalid(node, "w_zero_point must be per-tensor or hold one value per output channel");
  }
  std::vector<int64_t> bv(static_cast<size_t>(m), 0);
  if (bias) {
    if (bias->dtype() != DType::Int32 || bias->rank() != 1 || bias->dim(0) != m)
      invalid(node, "bias must be int32 of shape [" + std::to_string(m) + "]");
    bv = ints_of(*bias);
  }
  std::vector<int64_t> xv = ints_of(x), wv = ints_of(w);
  int64_t cg = c / group, mg = m / group;
  int64_t in_sp = g.in[0] * g.in[1] * g.in[2], out_sp = g.out[0] * g.out[1] * g.out[2];
  int64_t k_sp = g.k[0] * g.k[1] * g.k[2];
  std::vector<int32_t> y(static_cast<size_t>(batch * m * out_sp));
  for (int64_t nb = 0; nb < batch; ++nb)
    for (int64_t oc = 0; oc < m; ++oc) {
      int64_t grp = oc / mg;
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            int64_t acc = bv[static_cast<size_t>(oc)];
            for (int64_t ic = 0; ic < cg; ++ic) {
              const int64_t* xp = xv.data() + (nb * c + grp * cg + ic) * in_sp;
              const int64_t* wp = wv.data() + (oc * cg + ic) * k_sp;
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
                int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dil[0];
                if (i0 < 0 || i0 >= g.in[0]) continue;
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                  int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dil[1];
                  if (i1 < 0 || i1 >= g.in[1]) continue;
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    int64_t i2 = o2 * g.stride[2] - g.pad[2] + k2 * g.dil[2];
                    if (i2 < 0 || i2 >= g.in[2]) continue;
                    acc += (xp[(i0 * g.in[1] + i1) * g.in[2] + i2] - xzv) *
                           (wp[(k0 * g.k[1] + k1) * g.k[2] + k2] - wzv[static_cast<size_t>(oc)]);
                  }
                }
              }
            }
            y[static_cast<size_t>(((nb * m + oc) * g.out[0] + o0) * g.out[1] * g.out[2] + o1 * g.out[2] +
                                  o2)] = static_cast<int32_t>(static_cast<uint32_t>(acc));
          }
    }
  out_shape = {batch, m};
  size_t s = static_cast<size_t>(x.rank() - 2);
  for (size_t d = 3 - s; d < 3; ++d) out_shape.push_back(g.out[d]);
  channels = m;
  return y;
}

std::vector<Tensor> conv_integer(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& w = input(node, inputs, 1);
  const Tensor *xz = optional_input(inputs, 2), *wz = optional_input(inputs, 3);
  require_8bit(node, x, "x");
  require_8bit(node, w, "w");
  Shape shape;
  int64_t m = 0;
  auto acc = int_conv(node, x, xz, w, wz, nullptr, shape, m);
  Tensor y = alloc.allocate(DType::Int32, shape);
  std::copy(acc.begin(), acc.end(), y.data<int32_t>());
  return {y};
}

std::vector<Tensor> qlinear_conv(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor& x_scale = input(node, inputs, 1);
  const Tensor* x_zp = optional_input(inputs, 2);
  const Tensor& w = input(node, inputs, 3);
  const Tensor& w_scale = input(node, inputs, 4);
  const Tensor* w_zp = optional_input(inputs, 5);
  const Tensor& y_scale = input(node, inputs, 6);
  const Tensor* y_zp = optional_input(inputs, 7);
  const Tensor* bias = optional_input(inputs, 8);
  require_8bit(node, x, "x");
  require_8bit(node, w, "w");
  DType out = y_zp ? y_zp->dtype() : DType::UInt8;
  if (out != DType::UInt8 && out != DType::Int8)
    unsupported(node, std::string("y_zero_point has type ") + dtype_name(out) + "; supported: uint8, int8");
  Shape shape;
  int64_t m = 0;
  auto acc = int_conv(node, x, x_zp, w, w_zp, bias, shape, m);
  if (x_scale.size() != 1 || y_scale.size() != 1 || (y_zp && y_zp->size() != 1))
    unsupported(node, "x_scale, y_scale and y_zero_point must be per-tensor");
  std::vector<double> ws = doubles_of(node, w_scale);
  if (ws.size() != 1 && static_cast<int64_t>(ws.size()) != m)
    invalid(node, "w_scale must be per-tensor or hold one value per output channel");
  float xs = static_cast<float>(doubles_of(node, x_scale)[0]),
        ys = static_cast<float>(doubles_of(node, y_scale)[0]);
  if (ys == 0.0f) invalid(node, "y_scale must be non-zero");
  int64_t zy = y_zp ? ints_of(*y_zp)[0] : 0;
  int64_t per_channel = static_cast<int64_t>(acc.size()) / std::max<int64_t>(1, shape[0] * m);
  std::vector<double> q(acc.size());
  for (size_t i = 0; i < q.size(); ++i) {
    int64_t oc = static_cast<int64_t>(i) / per_channel % m;
    float mult = xs * static_cast<float>(ws.size() == 1 ? ws[0] : ws[static_cast<size_t>(oc)]) / ys;
    q[i] = requantize(acc[i], mult, zy);
  }
  Tensor y = alloc.allocate(out, shape);
  store_saturated(y, q);
  return {y};
}

}  // namespace

void register_quant_ops(OpTable& table) {
  table["QuantizeLinear"] = quantize_linear;
  table["DequantizeLinear"] = dequantize_linear;
  table["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  table["MatMulInteger"] = matmul_integer;
  table["QLinearMatMul"] = qlinear_matmul;
  table["ConvInteger"] = conv_integer;
  table["QLinearConv"] = qlinear_conv;
}

}  // namespace collage::native
