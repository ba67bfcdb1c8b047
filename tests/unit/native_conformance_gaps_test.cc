// Native kernels for ONNX node-suite cases that once failed: Einsum (float64, '...', implicit
// output), Cast to bfloat16, BatchNormalization training mode, integer MaxPool, dilated ceil-mode
// AveragePool with count_include_pad and ConvTranspose's output_shape. Expected values come from
// straightforward loops here, not from the kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "backends/native/native_ops.h"

namespace collage {
namespace {

Node make(const std::string& op, std::map<std::string, Attribute> attrs = {}, int64_t opset = 17) {
  Node n;
  n.name = "t";
  n.op_type = op;
  n.opset = opset;
  n.attrs = std::move(attrs);
  return n;
}

std::vector<Tensor> run(const Node& n, std::vector<const Tensor*> in) {
  HeapAllocator alloc;
  return native::evaluate_node(n, in, alloc);
}

template <class T>
Tensor random(Shape s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Tensor t(dtype_of<T>(), s);
  for (int64_t i = 0; i < t.size(); ++i) t.data<T>()[i] = static_cast<T>(u(rng));
  return t;
}

Node einsum(const std::string& eq) { return make("Einsum", {{"equation", Attribute::of_string(eq)}}, 12); }

TEST(NativeConformanceGaps, EinsumFloat64BatchMatmulAndImplicitOutput) {
  Tensor a = random<double>({5, 2, 3}, 1), b = random<double>({5, 3, 4}, 2);
  Tensor y = run(einsum("bij, bjk -> bik"), {&a, &b})[0];
  ASSERT_EQ(y.dtype(), DType::Float64);
  ASSERT_EQ(y.shape(), (Shape{5, 2, 4}));
  for (int64_t n = 0; n < 5; ++n)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t k = 0; k < 4; ++k) {
        double s = 0;
        for (int64_t j = 0; j < 3; ++j)
          s += a.data<double>()[(n * 2 + i) * 3 + j] * b.data<double>()[(n * 3 + j) * 4 + k];
        EXPECT_NEAR(y.data<double>()[(n * 2 + i) * 4 + k], s, 1e-12);
      }
  // Implicit output: the letters used once, alphabetically. "i,i" is a scalar inner product.
  Tensor u = random<double>({5}, 3), v = random<double>({5}, 4);
  Tensor dot = run(einsum("i,i"), {&u, &v})[0];
  ASSERT_EQ(dot.shape(), Shape{});
  double s = 0;
  for (int64_t i = 0; i < 5; ++i) s += u.data<double>()[i] * v.data<double>()[i];
  EXPECT_NEAR(dot.data<double>()[0], s, 1e-12);
  // "ba" alone means "ba->ab": a transpose.
  Tensor m = random<float>({3, 4}, 5);
  Tensor t = run(einsum("ba"), {&m})[0];
  ASSERT_EQ(t.shape(), (Shape{4, 3}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(t.data<float>()[j * 3 + i], m.data<float>()[i * 4 + j]);
  EXPECT_THROW(run(einsum("ij,jk->ik"), {&u, &v}), Error);  // rank mismatch
  Tensor ints = Tensor::from_vector<int64_t>({2}, {1, 2});
  EXPECT_THROW(run(einsum("i->i"), {&ints}), Error);
}

TEST(NativeConformanceGaps, EinsumEllipsisDiagonalAndBroadcast) {
  Tensor x = random<double>({3, 5, 5}, 6);
  Tensor d = run(einsum("...ii ->...i"), {&x})[0];
  ASSERT_EQ(d.shape(), (Shape{3, 5}));
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 5; ++i)
      EXPECT_EQ(d.data<double>()[b * 5 + i], x.data<double>()[(b * 5 + i) * 5 + i]);
  // '...' dims broadcast numpy-style: [2,1] with [5] -> [2,5].
  Tensor a = random<float>({2, 1, 3, 4}, 7), b = random<float>({5, 4, 2}, 8);
  Tensor y = run(einsum("...ij,...jk->...ik"), {&a, &b})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 5, 3, 2}));
  for (int64_t p = 0; p < 2; ++p)
    for (int64_t q = 0; q < 5; ++q)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t k = 0; k < 2; ++k) {
          double s = 0;
          for (int64_t j = 0; j < 4; ++j)
            s += a.data<float>()[(p * 3 + i) * 4 + j] * b.data<float>()[(q * 4 + j) * 2 + k];
          EXPECT_NEAR(y.data<float>()[((p * 5 + q) * 3 + i) * 2 + k], s, 1e-5);
        }
  // Implicit output puts the '...' dims first.
  Tensor c = random<float>({4, 2, 3}, 9);
  Tensor z = run(einsum("i...j"), {&c})[0];
  ASSERT_EQ(z.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(z.data<float>()[(1 * 4 + 3) * 3 + 2], c.data<float>()[(3 * 2 + 1) * 3 + 2]);
}

uint16_t top_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>(u >> 16);
}

TEST(NativeConformanceGaps, CastToBFloat16Truncates) {
  // 0.48033667 is 0x3EF5EEB0: rounding would give 0x3EF6, ONNX's Cast data keeps 0x3EF5.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> values = {0.48033667f, 0.47892547f, -1.99999988f, 3.0f, inf, -inf, nan};
  Tensor x = Tensor::from_vector<float>({7}, values);
  Node cast = make("Cast", {{"to", Attribute::of_int(16)}}, 19);
  Tensor like(DType::BFloat16, {1});
  for (Tensor y : {run(cast, {&x})[0], run(make("CastLike", {}, 19), {&x, &like})[0]}) {
    ASSERT_EQ(y.dtype(), DType::BFloat16);
    const auto* bits = static_cast<const uint16_t*>(y.raw());
    for (size_t i = 0; i + 1 < values.size(); ++i) EXPECT_EQ(bits[i], top_bits(values[i])) << i;
    EXPECT_TRUE(std::isnan(bfloat16_to_float(bits[6])));
  }
  // From float64: the value goes through float32 first.
  Tensor xd = Tensor::from_vector<double>({1}, {0.48033667});
  EXPECT_EQ(static_cast<const uint16_t*>(run(cast, {&xd})[0].raw())[0], 0x3EF5);
}

TEST(NativeConformanceGaps, BatchNormTrainingModeUsesBatchStatistics) {
  const int64_t n = 2, c = 3, hw = 4;
  Tensor x = random<float>({n, c, 2, 2}, 10), scale = random<float>({c}, 11), bias = random<float>({c}, 12);
  Tensor mean = random<float>({c}, 13), var = random<float>({c}, 14);
  for (int64_t i = 0; i < c; ++i) var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.5f;
  Node bn = make("BatchNormalization",
                 {{"training_mode", Attribute::of_int(1)},
                  {"epsilon", Attribute::of_float(1e-2f)},
                  {"momentum", Attribute::of_float(0.8f)}},
                 15);
  bn.outputs = {0, 1, 2};
  auto out = run(bn, {&x, &scale, &bias, &mean, &var});
  ASSERT_EQ(out.size(), 3u);
  for (int64_t ch = 0; ch < c; ++ch) {
    double m = 0, v = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < hw; ++i) m += x.data<float>()[(b * c + ch) * hw + i];
    m /= n * hw;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < hw; ++i) v += std::pow(x.data<float>()[(b * c + ch) * hw + i] - m, 2);
    v /= n * hw;  // population variance
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < hw; ++i) {
        int64_t at = (b * c + ch) * hw + i;
        double want = (x.data<float>()[at] - m) / std::sqrt(v + 1e-2) * scale.data<float>()[ch] +
                      bias.data<float>()[ch];
        EXPECT_NEAR(out[0].data<float>()[at], want, 1e-5);
      }
    EXPECT_NEAR(out[1].data<float>()[ch], mean.data<float>()[ch] * 0.8 + m * 0.2, 1e-6);
    EXPECT_NEAR(out[2].data<float>()[ch], var.data<float>()[ch] * 0.8 + v * 0.2, 1e-6);
  }
  // The running outputs only exist in training mode (opset 14+).
  bn.attrs.erase("training_mode");
  EXPECT_THROW(run(bn, {&x, &scale, &bias, &mean, &var}), Error);
}

template <class T>
void check_int_max_pool(uint32_t seed) {
  Tensor x(dtype_of<T>(), {1, 2, 5, 5});
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < x.size(); ++i)
    x.data<T>()[i] = static_cast<T>(static_cast<int>(rng() % 256) - (std::is_signed_v<T> ? 128 : 0));
  Node n = make("MaxPool",
                {{"kernel_shape", Attribute::of_ints({3, 3})},
                 {"strides", Attribute::of_ints({2, 2})},
                 {"pads", Attribute::of_ints({1, 1, 1, 1})}},
                12);
  Tensor y = run(n, {&x})[0];
  ASSERT_EQ(y.dtype(), x.dtype());
  ASSERT_EQ(y.shape(), (Shape{1, 2, 3, 3}));
  for (int64_t ch = 0; ch < 2; ++ch)
    for (int64_t oh = 0; oh < 3; ++oh)
      for (int64_t ow = 0; ow < 3; ++ow) {
        T best = std::numeric_limits<T>::lowest();
        for (int64_t ih = oh * 2 - 1; ih <= oh * 2 + 1; ++ih)
          for (int64_t iw = ow * 2 - 1; iw <= ow * 2 + 1; ++iw)
            if (ih >= 0 && ih < 5 && iw >= 0 && iw < 5)
              best = std::max(best, x.data<T>()[(ch * 5 + ih) * 5 + iw]);
        EXPECT_EQ(y.data<T>()[(ch * 3 + oh) * 3 + ow], best);
      }
}

TEST(NativeConformanceGaps, MaxPoolIntegerAndDoubleTypes) {
  check_int_max_pool<uint8_t>(20);
  check_int_max_pool<int8_t>(21);
  check_int_max_pool<double>(22);
  Tensor bad(DType::Int32, {1, 1, 2, 2});
  EXPECT_THROW(run(make("MaxPool", {{"kernel_shape", Attribute::of_ints({2, 2})}}), {&bad}), Error);
}

TEST(NativeConformanceGaps, DilatedCeilAveragePoolCountsTheWholeWindow) {
  // 1-D: 8 inputs, kernel 2, dilation 2, stride 3, ceil mode: windows start at 0, 3, 6; the last
  // one reads 6 and 8 (past the end). With count_include_pad the divisor stays 2 (ONNX reference).
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8};
  Tensor x = Tensor::from_vector<float>({1, 1, 8}, v);
  std::map<std::string, Attribute> attrs = {{"kernel_shape", Attribute::of_ints({2})},
                                            {"strides", Attribute::of_ints({3})},
                                            {"dilations", Attribute::of_ints({2})},
                                            {"ceil_mode", Attribute::of_int(1)},
                                            {"count_include_pad", Attribute::of_int(1)}};
  Tensor y = run(make("AveragePool", attrs, 19), {&x})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{(v[0] + v[2]) / 2, (v[3] + v[5]) / 2, v[6] / 2}));
  attrs["count_include_pad"] = Attribute::of_int(0);
  EXPECT_EQ(run(make("AveragePool", attrs, 19), {&x})[0].to_double_vector(),
            (std::vector<double>{(v[0] + v[2]) / 2, (v[3] + v[5]) / 2, v[6]}));
}

TEST(NativeConformanceGaps, ConvTransposeOutputShapeSetsThePads) {
  Tensor x = random<float>({1, 1, 3, 3}, 30), w = random<float>({1, 2, 3, 3}, 31);
  auto convt = [&](std::map<std::string, Attribute> attrs) {
    attrs["strides"] = Attribute::of_ints({3, 2});
    return run(make("ConvTranspose", attrs, 11), {&x, &w})[0];
  };
  // Natural extent 9x7; output_shape 10x8 gives total padding -1: end pads of -1, i.e. the same
  // as output_padding 1 (ONNX's test_convtranspose_output_shape).
  Tensor a = convt({{"output_shape", Attribute::of_ints({10, 8})}});
  Tensor b = convt({{"output_padding", Attribute::of_ints({1, 1})}});
  ASSERT_EQ(a.shape(), (Shape{1, 2, 10, 8}));
  EXPECT_EQ(a.to_double_vector(), b.to_double_vector());
  // Smaller than natural: total 2x2 split evenly, like pads 1,1,1,1.
  Tensor c = convt({{"output_shape", Attribute::of_ints({7, 5})}});
  Tensor d = convt({{"pads", Attribute::of_ints({1, 1, 1, 1})}});
  ASSERT_EQ(c.shape(), (Shape{1, 2, 7, 5}));
  EXPECT_EQ(c.to_double_vector(), d.to_double_vector());
  // Odd total 1: NOTSET/SAME_LOWER pad the start, SAME_UPPER the end.
  Tensor e = convt({{"output_shape", Attribute::of_ints({8, 6})}});
  Tensor f = convt({{"pads", Attribute::of_ints({1, 1, 0, 0})}});
  EXPECT_EQ(e.to_double_vector(), f.to_double_vector());
  Tensor g =
      convt({{"output_shape", Attribute::of_ints({8, 6})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}});
  Tensor h = convt({{"pads", Attribute::of_ints({0, 0, 1, 1})}});
  EXPECT_EQ(g.to_double_vector(), h.to_double_vector());
}

}  // namespace
}  // namespace collage
