// float16 / bfloat16: bit-exact conversions (round to nearest even, subnormals,
// overflow, NaN) and the native wrapper that computes half tensors in float32.
#include <cmath>
#include <cstdint>
#include <limits>

#include "tests/unit/native_data_helpers.h"

namespace collage::data_test {
namespace {

Tensor halves(DType dtype, Shape shape, const std::vector<float>& v) {
  Tensor t(dtype, std::move(shape));
  auto* p = static_cast<uint16_t*>(t.raw());
  for (size_t i = 0; i < v.size(); ++i)
    p[i] = dtype == DType::Float16 ? float_to_half(v[i]) : float_to_bfloat16(v[i]);
  return t;
}

std::vector<uint16_t> bits(const Tensor& t) {
  const auto* p = static_cast<const uint16_t*>(t.raw());
  return std::vector<uint16_t>(p, p + t.size());
}

TEST(NativeHalf, Float16ConversionEdges) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);  // halfway to 65536: rounds to even = inf
  EXPECT_EQ(float_to_half(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);         // 1.5 subnormal units: tie -> 2
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie -> even
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie -> even (up)
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(half_to_float(0xFC00), -std::numeric_limits<float>::infinity());
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every non-NaN half survives a round trip
    const auto h = static_cast<uint16_t>(b);
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;
    ASSERT_EQ(float_to_half(half_to_float(h)), h) << b;
  }
}

TEST(NativeHalf, BFloat16ConversionEdges) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(3.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
}

TEST(NativeHalf, CastToAndFromHalfTypes) {
  Node to_f16 = make_node("Cast", {{"to", Attribute::of_int(10)}});
  Node to_bf16 = make_node("Cast", {{"to", Attribute::of_int(16)}});
  Node to_f32 = make_node("Cast", {{"to", Attribute::of_int(1)}});
  Tensor h = run1(to_f16, {f32({3}, {1.0f, -0.5f, 1e6f})});
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(bits(h), (std::vector<uint16_t>{0x3C00, 0xB800, 0x7C00}));
  EXPECT_EQ(values<float>(run1(to_f32, {h})),
            (std::vector<float>{1.0f, -0.5f, std::numeric_limits<float>::infinity()}));
  Tensor b = run1(to_bf16, {i64({2}, {3, -256})});
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  EXPECT_EQ(values<int64_t>(run1(make_node("Cast", {{"to", Attribute::of_int(7)}}), {b})),
            (std::vector<int64_t>{3, -256}));
}

TEST(NativeHalf, KernelsComputeInFloat32AndRoundBack) {
  for (DType d : {DType::Float16, DType::BFloat16}) {
    Tensor a = halves(d, {3}, {1.0f, 2.0f, 3.0f});
    Tensor b = halves(d, {1}, {0.5f});
    Tensor sum = run1(make_node("Add"), {a, b});
    EXPECT_EQ(sum.dtype(), d);
    EXPECT_EQ(sum.to_double_vector(), (std::vector<double>{1.5, 2.5, 3.5}));
    // Bool outputs stay bool; int64 shape outputs stay int64.
    EXPECT_EQ(run1(make_node("Less"), {a, halves(d, {1}, {2.0f})}).dtype(), DType::Bool);
    EXPECT_EQ(run1(make_node("Shape"), {a}).dtype(), DType::Int64);
    // Where: the data operands decide the result type, not the bool condition.
    Tensor w = run1(make_node("Where"), {boolean({3}, {true, false, true}), a, b});
    EXPECT_EQ(w.dtype(), d);
    EXPECT_EQ(w.to_double_vector(), (std::vector<double>{1.0, 0.5, 3.0}));
    // A float32 base keeps its type even with a half exponent.
    EXPECT_EQ(run1(make_node("Pow"), {f32({1}, {2.0f}), halves(d, {1}, {3.0f})}).dtype(), DType::Float32);
    EXPECT_EQ(run1(make_node("Pow"), {a, f32({1}, {2.0f})}).dtype(), d);
  }
}

}  // namespace
}  // namespace collage::data_test
