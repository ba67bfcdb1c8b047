// Integer widths of the element-wise kernels: wrapping, division/modulo sign
// rules and integer Pow, on edges the ONNX node tests do not reach.
#include <cstdint>
#include <limits>

#include "tests/unit/native_data_helpers.h"

namespace collage::data_test {
namespace {

template <class T>
Tensor of(Shape shape, const std::vector<T>& v) {
  return Tensor::from_vector<T>(std::move(shape), v);
}

TEST(NativeDtype, SmallIntegersWrapLikeNumpy) {
  EXPECT_EQ(values<int8_t>(run1(make_node("Add"), {of<int8_t>({2}, {127, -128}), of<int8_t>({2}, {1, -1})})),
            (std::vector<int8_t>{-128, 127}));
  // 65535 * 65535 would overflow int after promotion; it must wrap in uint16.
  EXPECT_EQ(
      values<uint16_t>(run1(make_node("Mul"), {of<uint16_t>({1}, {65535}), of<uint16_t>({1}, {65535})})),
      (std::vector<uint16_t>{1}));
  EXPECT_EQ(values<uint8_t>(run1(make_node("Sub"), {of<uint8_t>({1}, {1}), of<uint8_t>({1}, {2})})),
            (std::vector<uint8_t>{255}));
  EXPECT_EQ(values<int8_t>(run1(make_node("Div"), {of<int8_t>({2}, {-128, -7}), of<int8_t>({2}, {-1, 2})})),
            (std::vector<int8_t>{-128, -3}));
  EXPECT_EQ(values<int16_t>(run1(make_node("Neg"), {of<int16_t>({2}, {-32768, 5})})),
            (std::vector<int16_t>{-32768, -5}));
  EXPECT_EQ(values<uint32_t>(run1(make_node("Abs"), {of<uint32_t>({1}, {4000000000u})})),
            (std::vector<uint32_t>{4000000000u}));
}

TEST(NativeDtype, IntegerModuloSignRules) {
  Tensor a = of<int8_t>({4}, {-7, 7, -7, 7});
  Tensor b = of<int8_t>({4}, {3, -3, -3, 3});
  // fmod=0: sign of the divisor; fmod=1: sign of the dividend.
  EXPECT_EQ(values<int8_t>(run1(make_node("Mod"), {a, b})), (std::vector<int8_t>{2, -2, -1, 1}));
  EXPECT_EQ(values<int8_t>(run1(make_node("Mod", {{"fmod", Attribute::of_int(1)}}), {a, b})),
            (std::vector<int8_t>{-1, 1, -1, 1}));
  EXPECT_EQ(
      values<uint64_t>(run1(make_node("Mod"), {of<uint64_t>({1}, {~uint64_t{0}}), of<uint64_t>({1}, {10})})),
      (std::vector<uint64_t>{5}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Mod"), {of<uint8_t>({1}, {1}), of<uint8_t>({1}, {0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Div"), {of<uint16_t>({1}, {1}), of<uint16_t>({1}, {0})});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeDtype, IntegerPow) {
  EXPECT_EQ(values<int64_t>(run1(make_node("Pow"), {i64({3}, {3, -2, 2}), i64({3}, {4, 3, 62})})),
            (std::vector<int64_t>{81, -8, int64_t{1} << 62}));
  // Negative exponents truncate 1/x^n toward zero.
  EXPECT_EQ(values<int32_t>(run1(make_node("Pow"), {i32({3}, {2, 1, -1}), i32({3}, {-1, -5, -3})})),
            (std::vector<int32_t>{0, 1, -1}));
  // Float exponent on an integer base: computed in double, truncated.
  EXPECT_EQ(values<int32_t>(run1(make_node("Pow"), {i32({2}, {2, 10}), f32({2}, {0.5f, 2.0f})})),
            (std::vector<int32_t>{1, 100}));
  EXPECT_EQ(values<float>(run1(make_node("Pow"), {f32({1}, {2}), of<uint8_t>({1}, {10})})),
            (std::vector<float>{1024}));
}

TEST(NativeDtype, ClipAndCompareOnSmallIntegers) {
  EXPECT_EQ(values<uint8_t>(run1(make_node("Clip"), {u8({3}, {0, 100, 250}), u8({}, {10}), u8({}, {200})})),
            (std::vector<uint8_t>{10, 100, 200}));
  EXPECT_EQ(
      values<bool>(run1(make_node("Less"), {of<uint64_t>({2}, {1, ~uint64_t{0}}), of<uint64_t>({1}, {2})})),
      (std::vector<bool>{true, false}));
}

TEST(NativeDtype, BitShiftAndBitwise) {
  Node left = make_node("BitShift", {{"direction", Attribute::of_string("LEFT")}});
  Node right = make_node("BitShift", {{"direction", Attribute::of_string("RIGHT")}});
  // Shifting by the width or more gives 0 (no undefined behaviour).
  EXPECT_EQ(values<uint8_t>(run1(left, {u8({3}, {1, 1, 255}), u8({3}, {7, 8, 200})})),
            (std::vector<uint8_t>{128, 0, 0}));
  EXPECT_EQ(values<uint64_t>(run1(right, {of<uint64_t>({1}, {~uint64_t{0}}), of<uint64_t>({1}, {63})})),
            (std::vector<uint64_t>{1}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("BitShift", {{"direction", Attribute::of_string("UP")}}),
                   {u8({1}, {1}), u8({1}, {1})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(left, {i32({1}, {1}), i32({1}, {1})}); }), ErrorKind::Unsupported);
  EXPECT_EQ(values<int16_t>(run1(make_node("BitwiseNot"), {of<int16_t>({2}, {0, -1})})),
            (std::vector<int16_t>{-1, 0}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("BitwiseAnd"), {f32({1}, {1}), f32({1}, {1})});
            }),
            ErrorKind::Unsupported);
}

TEST(NativeDtype, IsInfDetectFlagsAndCelu) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = f32({4}, {inf, -inf, 1.0f, std::numeric_limits<float>::quiet_NaN()});
  EXPECT_EQ(values<bool>(run1(make_node("IsInf"), {x})), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(values<bool>(run1(make_node("IsInf", {{"detect_positive", Attribute::of_int(0)}}), {x})),
            (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(values<bool>(run1(make_node("IsInf", {{"detect_negative", Attribute::of_int(0)}}), {x})),
            (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(values<bool>(run1(make_node("IsNaN"), {x})), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Celu", {{"alpha", Attribute::of_float(0.0f)}}), {x});
            }),
            ErrorKind::InvalidModel);
}

}  // namespace
}  // namespace collage::data_test
