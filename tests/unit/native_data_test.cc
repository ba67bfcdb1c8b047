// Native elementwise kernels: unary math, Clip, Cast, binary/variadic arithmetic
// with broadcasting, compare, logic, Where, PRelu.
#include <cmath>
#include <limits>

#include "tests/unit/native_data_helpers.h"

namespace collage {
namespace {

using namespace data_test;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct UnaryCase {
  const char* op;
  std::map<std::string, Attribute> attrs;
  std::function<double(double)> reference;
  bool positive_only = false;
};

TEST(NativeDataUnary, FloatOpsMatchReferenceFormulas) {
  const double selu_a = 1.67326319217681884765625, selu_g = 1.05070102214813232421875;
  const double pi = 3.14159265358979323846;
  std::vector<UnaryCase> cases = {
      {"Relu", {}, [](double x) { return x > 0 ? x : 0; }},
      {"LeakyRelu", {}, [](double x) { return x >= 0 ? x : 0.01 * x; }},
      {"LeakyRelu", {{"alpha", Attribute::of_float(0.5f)}}, [](double x) { return x >= 0 ? x : 0.5 * x; }},
      {"Elu", {}, [](double x) { return x >= 0 ? x : std::exp(x) - 1; }},
      {"Selu", {}, [&](double x) { return x > 0 ? selu_g * x : selu_g * selu_a * (std::exp(x) - 1); }},
      {"Sigmoid", {}, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Tanh", {}, [](double x) { return (std::exp(2 * x) - 1) / (std::exp(2 * x) + 1); }},
      {"Softplus", {}, [](double x) { return std::log(1 + std::exp(x)); }},
      {"Softsign", {}, [](double x) { return x / (1 + std::fabs(x)); }},
      {"HardSigmoid", {}, [](double x) { return std::min(1.0, std::max(0.0, 0.2 * x + 0.5)); }},
      {"HardSwish", {}, [](double x) { return x * std::min(6.0, std::max(0.0, x + 3)) / 6; }},
      {"Erf", {}, [](double x) { return std::erf(x); }},
      {"Gelu", {}, [](double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); }},
      {"Gelu",
       {{"approximate", Attribute::of_string("tanh")}},
       [&](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x))); }},
      {"Exp", {}, [](double x) { return std::exp(x); }},
      {"Log", {}, [](double x) { return std::log(x); }, true},
      {"Sqrt", {}, [](double x) { return std::sqrt(x); }, true},
      {"Neg", {}, [](double x) { return -x; }},
      {"Abs", {}, [](double x) { return x < 0 ? -x : x; }},
      {"Reciprocal", {}, [](double x) { return 1 / x; }, true},
      {"Floor", {}, [](double x) { return std::floor(x); }},
      {"Ceil", {}, [](double x) { return std::ceil(x); }},
      {"Sign", {}, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }},
      {"Shrink", {}, [](double x) { return x < -0.5 ? x : (x > 0.5 ? x : 0.0); }},
      {"Shrink",
       {{"bias", Attribute::of_float(1.0f)}, {"lambd", Attribute::of_float(1.5f)}},
       [](double x) { return x < -1.5 ? x + 1 : (x > 1.5 ? x - 1 : 0.0); }},
      {"Sin", {}, [](double x) { return std::sin(x); }},
      {"Cos", {}, [](double x) { return std::cos(x); }},
  };
  const std::vector<float> all = {-3.0f, -1.5f, -0.5f, 0.0f, 0.25f, 1.0f, 2.5f, 4.0f};
  const std::vector<float> positive = {0.25f, 1.0f, 2.5f, 4.0f, 9.0f, 0.01f};
  for (const UnaryCase& c : cases) {
    const std::vector<float>& in = c.positive_only ? positive : all;
    Tensor out = run1(make_node(c.op, c.attrs), {f32({2, static_cast<int64_t>(in.size() / 2)}, in)});
    ASSERT_EQ(out.shape(), (Shape{2, static_cast<int64_t>(in.size() / 2)})) << c.op;
    ASSERT_EQ(out.dtype(), DType::Float32) << c.op;
    std::vector<float> got = values<float>(out);
    for (size_t i = 0; i < in.size(); ++i)
      EXPECT_NEAR(got[i], c.reference(in[i]), 1e-5 + 1e-5 * std::fabs(c.reference(in[i])))
          << c.op << " x=" << in[i];
  }
}

TEST(NativeDataUnary, RoundIsHalfToEven) {
  Tensor out = run1(make_node("Round"), {f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f})});
  EXPECT_EQ(values<float>(out), (std::vector<float>{0, 2, 2, 0, -2, 2, -3}));
}

TEST(NativeDataUnary, StableForLargeMagnitudes) {
  std::vector<float> s = values<float>(run1(make_node("Sigmoid"), {f32({2}, {-100.0f, 100.0f})}));
  EXPECT_NEAR(s[0], 0.0f, 1e-30);
  EXPECT_EQ(s[1], 1.0f);
  std::vector<float> sp = values<float>(run1(make_node("Softplus"), {f32({2}, {-100.0f, 100.0f})}));
  EXPECT_NEAR(sp[0], 0.0f, 1e-30);
  EXPECT_EQ(sp[1], 100.0f);  // log(1 + e^100) is not inf
  EXPECT_TRUE(std::isnan(values<float>(run1(make_node("Relu"), {f32({1}, {kNan})}))[0]));
}

TEST(NativeDataUnary, IntegerNegAbsSign) {
  const int64_t lo = std::numeric_limits<int64_t>::min();
  Tensor x = i64({5}, {-5, 0, 7, lo, -1});
  EXPECT_EQ(values<int64_t>(run1(make_node("Neg"), {x})), (std::vector<int64_t>{5, 0, -7, lo, 1}));
  EXPECT_EQ(values<int64_t>(run1(make_node("Abs"), {x})), (std::vector<int64_t>{5, 0, 7, lo, 1}));
  EXPECT_EQ(values<int64_t>(run1(make_node("Sign"), {x})), (std::vector<int64_t>{-1, 0, 1, -1, -1}));
  Tensor y = i32({3}, {-4, 0, 9});
  EXPECT_EQ(values<int32_t>(run1(make_node("Neg"), {y})), (std::vector<int32_t>{4, 0, -9}));
  EXPECT_EQ(values<int32_t>(run1(make_node("Abs"), {y})), (std::vector<int32_t>{4, 0, 9}));
  EXPECT_EQ(values<int32_t>(run1(make_node("Sign"), {y})), (std::vector<int32_t>{-1, 0, 1}));
  EXPECT_EQ(error_kind([&] { run1(make_node("Exp"), {x}); }), ErrorKind::Unsupported);
}

TEST(NativeDataUnary, UnknownGeluApproximationIsUnsupported) {
  Node n = make_node("Gelu", {{"approximate", Attribute::of_string("fast")}});
  EXPECT_EQ(error_kind([&] { run1(n, {f32({1}, {1})}); }), ErrorKind::Unsupported);
  Node ms = make_node("Gelu");
  ms.domain = "com.microsoft";
  EXPECT_NEAR(values<float>(run1(ms, {f32({1}, {1.0f})}))[0], 0.5 * (1 + std::erf(1 / std::sqrt(2.0))), 1e-6);
}

TEST(NativeDataClip, BoundsOptionalAndTyped) {
  Tensor x = f32({6}, {-kInf, -2, -0.5f, 0.5f, 2, kInf});
  Node n = make_node("Clip");
  EXPECT_EQ(values<float>(run1(n, {x, Tensor::scalar<float>(-1), Tensor::scalar<float>(1)})),
            (std::vector<float>{-1, -1, -0.5f, 0.5f, 1, 1}));
  EXPECT_EQ(values<float>(run1(n, {x, Tensor(), Tensor::scalar<float>(0)})),
            (std::vector<float>{-kInf, -2, -0.5f, 0, 0, 0}));
  EXPECT_EQ(values<float>(run1(n, {x, Tensor::scalar<float>(0)})),
            (std::vector<float>{0, 0, 0, 0.5f, 2, kInf}));
  EXPECT_EQ(values<float>(run1(n, {x})), values<float>(x));
  // min > max: numpy.clip semantics, everything becomes max.
  EXPECT_EQ(values<float>(run1(n, {x, Tensor::scalar<float>(3), Tensor::scalar<float>(1)})),
            (std::vector<float>(6, 1.0f)));
  Tensor xi = i64({4}, {-100, -3, 3, 100});
  EXPECT_EQ(values<int64_t>(run1(n, {xi, Tensor::scalar<int64_t>(-5), Tensor::scalar<int64_t>(5)})),
            (std::vector<int64_t>{-5, -3, 3, 5}));
  EXPECT_EQ(error_kind([&] { run1(n, {x, f32({2}, {0, 1})}); }), ErrorKind::InvalidModel);
}

Node cast_node(DType to) { return make_node("Cast", {{"to", Attribute::of_int(static_cast<int64_t>(to))}}); }

TEST(NativeDataCast, FloatToIntTruncatesTowardZero) {
  Tensor x = f32({6}, {1.9f, -1.9f, 0.0f, 2.5f, -0.4f, 1e20f});
  EXPECT_EQ(values<int64_t>(run1(cast_node(DType::Int64), {x})),
            (std::vector<int64_t>{1, -1, 0, 2, 0, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(values<int32_t>(run1(cast_node(DType::Int32), {f32({2}, {-7.99f, kNan})})),
            (std::vector<int32_t>{-7, 0}));
  EXPECT_EQ(values<uint8_t>(run1(cast_node(DType::UInt8), {f32({2}, {200.7f, 3.2f})})),
            (std::vector<uint8_t>{200, 3}));
}

TEST(NativeDataCast, BoolAndIntConversions) {
  EXPECT_EQ(values<bool>(run1(cast_node(DType::Bool), {f32({4}, {0.0f, 0.5f, -2.0f, kNan})})),
            (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(values<bool>(run1(cast_node(DType::Bool), {i64({3}, {0, 5, -1})})),
            (std::vector<bool>{false, true, true}));
  EXPECT_EQ(values<float>(run1(cast_node(DType::Float32), {boolean({2}, {true, false})})),
            (std::vector<float>{1, 0}));
  EXPECT_EQ(values<int64_t>(run1(cast_node(DType::Int64), {boolean({2}, {false, true})})),
            (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(values<float>(run1(cast_node(DType::Float32), {i64({3}, {-3, 0, 1 << 20})})),
            (std::vector<float>{-3, 0, 1 << 20}));
  EXPECT_EQ(values<int32_t>(run1(cast_node(DType::Int32), {i64({2}, {-5, 123456})})),
            (std::vector<int32_t>{-5, 123456}));
  EXPECT_EQ(values<double>(run1(cast_node(DType::Float64), {f32({1}, {0.25f})})),
            (std::vector<double>{0.25}));
  Tensor same = run1(cast_node(DType::Float32), {f32({2, 1}, {1, 2})});
  EXPECT_EQ(same.shape(), (Shape{2, 1}));
  EXPECT_EQ(values<float>(same), (std::vector<float>{1, 2}));
}

TEST(NativeDataCast, UnsupportedTargets) {
  Tensor x = f32({1}, {1});
  EXPECT_EQ(error_kind([&] { run1(cast_node(DType::String), {x}); }), ErrorKind::Unsupported);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Cast", {{"to", Attribute::of_int(17)}}), {x});
            }),
            ErrorKind::Unsupported);  // float8: not held
  EXPECT_EQ(error_kind([&] { run1(make_node("Cast"), {x}); }), ErrorKind::InvalidModel);
  Tensor like = run1(make_node("CastLike"), {x, i64({0}, {})});
  EXPECT_EQ(values<int64_t>(like), (std::vector<int64_t>{1}));
}

// Applies f over the broadcast of a and b with the test's own index mapping.
template <class T, class R>
std::vector<R> naive_binary(const Tensor& a, const Tensor& b, const Shape& out,
                            const std::function<R(T, T)>& f) {
  std::vector<int64_t> ia = broadcast_source_indices(a.shape(), out),
                       ib = broadcast_source_indices(b.shape(), out);
  std::vector<R> r;
  for (size_t i = 0; i < ia.size(); ++i) r.push_back(f(a.data<T>()[ia[i]], b.data<T>()[ib[i]]));
  return r;
}

TEST(NativeDataBinary, BroadcastShapesAgainstNaiveReference) {
  struct ShapeCase {
    Shape a, b, out;
  };
  std::vector<ShapeCase> cases = {
      {{2, 3}, {2, 3}, {2, 3}},
      {{2, 3}, {3}, {2, 3}},
      {{2, 3}, {}, {2, 3}},
      {{}, {2, 3}, {2, 3}},
      {{2, 1}, {1, 3}, {2, 3}},
      {{2, 1, 3}, {4, 1}, {2, 4, 3}},
      {{1, 3, 1, 2}, {3, 4, 1}, {1, 3, 4, 2}},
      {{4, 1}, {2, 1, 3}, {2, 4, 3}},
      {{0, 3}, {3}, {0, 3}},
      {{3, 1, 5}, {3, 5}, {3, 3, 5}},
  };
  const std::map<std::string, std::function<float(float, float)>> ops = {
      {"Add", [](float x, float y) { return x + y; }},
      {"Sub", [](float x, float y) { return x - y; }},
      {"Mul", [](float x, float y) { return x * y; }},
      {"Div", [](float x, float y) { return x / y; }},
  };
  for (const ShapeCase& c : cases) {
    Tensor a = iota_f32(c.a), b = iota_f32(c.b);
    for (float& v : std::span(b.data<float>(), static_cast<size_t>(b.size()))) v = v * 0.5f + 1.0f;
    for (const auto& [op, f] : ops) {
      Tensor out = run1(make_node(op), {a, b});
      ASSERT_EQ(out.shape(), c.out) << op << " " << shape_to_string(c.a) << shape_to_string(c.b);
      EXPECT_EQ(values<float>(out), (naive_binary<float, float>(a, b, c.out, f)))
          << op << " " << shape_to_string(c.a) << " " << shape_to_string(c.b);
    }
  }
}

TEST(NativeDataBinary, IntegerArithmetic) {
  Tensor a = i64({4}, {7, -7, 7, -7}), b = i64({4}, {2, 2, -2, -2});
  EXPECT_EQ(values<int64_t>(run1(make_node("Div"), {a, b})), (std::vector<int64_t>{3, -3, -3, 3}));
  EXPECT_EQ(values<int64_t>(run1(make_node("Add"), {a, b})), (std::vector<int64_t>{9, -5, 5, -9}));
  EXPECT_EQ(values<int64_t>(run1(make_node("Sub"), {a, b})), (std::vector<int64_t>{5, -9, 9, -5}));
  EXPECT_EQ(values<int64_t>(run1(make_node("Mul"), {a, Tensor::scalar<int64_t>(3)})),
            (std::vector<int64_t>{21, -21, 21, -21}));
  // Large values stay exact (no float round trip).
  const int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_EQ(values<int64_t>(run1(make_node("Add"), {i64({1}, {big}), i64({1}, {2})})),
            (std::vector<int64_t>{big + 2}));
  const int64_t lo = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(values<int64_t>(run1(make_node("Div"), {i64({1}, {lo}), i64({1}, {-1})})),
            (std::vector<int64_t>{lo}));
  EXPECT_EQ(values<int32_t>(run1(make_node("Div"), {i32({2, 1}, {9, -9}), i32({2}, {4, -4})})),
            (std::vector<int32_t>{2, -2, -2, 2}));
  EXPECT_EQ(values<int32_t>(run1(make_node("Max"), {i32({3}, {1, 5, -2}), i32({1}, {0})})),
            (std::vector<int32_t>{1, 5, 0}));
  EXPECT_EQ(error_kind([&] { run1(make_node("Div"), {a, i64({1}, {0})}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataBinary, ModBothModes) {
  Tensor a = i64({4}, {-7, 7, 7, -7}), b = i64({4}, {3, -3, 3, -3});
  EXPECT_EQ(values<int64_t>(run1(make_node("Mod"), {a, b})), (std::vector<int64_t>{2, -2, 1, -1}));
  Node fm = make_node("Mod", {{"fmod", Attribute::of_int(1)}});
  EXPECT_EQ(values<int64_t>(run1(fm, {a, b})), (std::vector<int64_t>{-1, 1, 1, -1}));
  std::vector<float> f = values<float>(run1(fm, {f32({2}, {-5.5f, 5.5f}), f32({1}, {2.0f})}));
  EXPECT_EQ(f, (std::vector<float>{-1.5f, 1.5f}));
}

TEST(NativeDataBinary, PowFloatAndIntegerExponents) {
  Tensor base = f32({2, 2}, {2, 3, 4, 0.5f});
  std::vector<float> got = values<float>(run1(make_node("Pow"), {base, f32({2}, {2, 0.5f})}));
  std::vector<float> want = {4, std::sqrt(3.0f), 16, std::sqrt(0.5f)};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]);
  EXPECT_EQ(values<float>(run1(make_node("Pow"), {base, i64({}, {3})})),
            (std::vector<float>{8, 27, 64, 0.125f}));
  EXPECT_EQ(values<float>(run1(make_node("Pow"), {f32({1}, {-2}), i32({1}, {3})})), (std::vector<float>{-8}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Pow"), {boolean({1}, {true}), i64({1}, {2})});
            }),
            ErrorKind::Unsupported);
}

TEST(NativeDataBinary, BadInputsThrow) {
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Add"), {iota_f32({2, 3}), iota_f32({4})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Mul"), {iota_f32({2, 3}), iota_i64({3})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Sub"), {iota_f32({2})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Add"), {boolean({1}, {true}), boolean({1}, {true})});
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Sum"), {iota_f32({2, 3}), iota_f32({3}), iota_f32({2})});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeDataBinary, NumpyRulesAndFloat64) {
  // Legacy (opset < 7) axis broadcasting is rewritten by the importer; kernels see numpy rules only.
  Tensor a = iota_f32({2, 3}), b = f32({2}, {10, 20});
  EXPECT_EQ(error_kind([&] { run1(make_node("Add"), {a, b}); }), ErrorKind::InvalidModel);
  Tensor d = Tensor::from_vector<double>({2}, {0.1, 0.2}), e = Tensor::from_vector<double>({}, {1e-12});
  EXPECT_EQ(values<double>(run1(make_node("Add"), {d, e})), (std::vector<double>{0.1 + 1e-12, 0.2 + 1e-12}));
  EXPECT_EQ(values<bool>(run1(make_node("Less"), {d, e})), (std::vector<bool>{false, false}));
}

TEST(NativeDataVariadic, ThreeInputsBroadcastTogether) {
  Tensor a = f32({2, 1}, {1, 10}), b = f32({3}, {0.5f, 2, 30}), c = Tensor::scalar<float>(4);
  EXPECT_EQ(values<float>(run1(make_node("Sum"), {a, b, c})),
            (std::vector<float>{5.5f, 7, 35, 14.5f, 16, 44}));
  std::vector<float> mean = values<float>(run1(make_node("Mean"), {a, b, c}));
  std::vector<float> want = {5.5f / 3, 7.0f / 3, 35.0f / 3, 14.5f / 3, 16.0f / 3, 44.0f / 3};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(mean[i], want[i]);
  EXPECT_EQ(values<float>(run1(make_node("Max"), {a, b, c})), (std::vector<float>{4, 4, 30, 10, 10, 30}));
  EXPECT_EQ(values<float>(run1(make_node("Min"), {a, b, c})), (std::vector<float>{0.5f, 1, 1, 0.5f, 2, 4}));
  Tensor one = run1(make_node("Sum"), {a});
  EXPECT_EQ(one.shape(), (Shape{2, 1}));
  EXPECT_EQ(values<float>(one), (std::vector<float>{1, 10}));
  EXPECT_EQ(
      values<int64_t>(run1(make_node("Sum"), {i64({2}, {1, 2}), i64({1}, {10}), i64({2, 1}, {100, 200})})),
      (std::vector<int64_t>{111, 112, 211, 212}));
  std::vector<float> nan_max =
      values<float>(run1(make_node("Max"), {f32({2}, {kNan, 1}), f32({2}, {0, kNan})}));
  EXPECT_TRUE(std::isnan(nan_max[0]) && std::isnan(nan_max[1]));
  EXPECT_EQ(error_kind([&] { run1(make_node("Max"), {}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataCompare, AllTypesWithBroadcast) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2}, {2, 3});
  EXPECT_EQ(values<bool>(run1(make_node("Equal"), {a, b})), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(values<bool>(run1(make_node("Less"), {a, b})), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(values<bool>(run1(make_node("LessOrEqual"), {a, b})),
            (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(values<bool>(run1(make_node("Greater"), {a, b})), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(values<bool>(run1(make_node("GreaterOrEqual"), {a, f32({2, 1}, {2, 4})})),
            (std::vector<bool>{false, true, false, true}));
  Tensor ia = i64({3}, {-1, 0, 5}), ib = Tensor::scalar<int64_t>(0);
  EXPECT_EQ(values<bool>(run1(make_node("Equal"), {ia, ib})), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(values<bool>(run1(make_node("Greater"), {ia, ib})), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(values<bool>(run1(make_node("Less"), {i32({2}, {3, 4}), i32({2}, {4, 3})})),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(values<bool>(run1(make_node("Equal"), {boolean({2}, {true, false}), boolean({1}, {false})})),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(values<bool>(run1(make_node("Equal"), {f32({1}, {kNan}), f32({1}, {kNan})})),
            (std::vector<bool>{false}));
}

TEST(NativeDataLogic, NotAndOrXor) {
  Tensor a = boolean({2, 2}, {false, false, true, true}), b = boolean({2}, {false, true});
  EXPECT_EQ(values<bool>(run1(make_node("And"), {a, b})), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(values<bool>(run1(make_node("Or"), {a, b})), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(values<bool>(run1(make_node("Xor"), {a, b})), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(values<bool>(run1(make_node("Not"), {b})), (std::vector<bool>{true, false}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("And"), {iota_f32({2}), iota_f32({2})});
            }),
            ErrorKind::Unsupported);
}

TEST(NativeDataWhere, ThreeWayBroadcastAnyDtype) {
  Tensor cond = boolean({2, 1}, {true, false});
  Tensor x = f32({1, 3}, {1, 2, 3});
  Tensor y = Tensor::scalar<float>(-1);
  Tensor out = run1(make_node("Where"), {cond, x, y});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{1, 2, 3, -1, -1, -1}));
  Tensor xi = i64({3}, {10, 20, 30}), yi = i64({2, 1}, {-1, -2});
  Tensor ci = boolean({3}, {true, false, true});
  EXPECT_EQ(values<int64_t>(run1(make_node("Where"), {ci, xi, yi})),
            (std::vector<int64_t>{10, -1, 30, 10, -2, 30}));
  Tensor xb = boolean({1}, {true}), yb = boolean({1}, {false});
  EXPECT_EQ(values<bool>(run1(make_node("Where"), {ci, xb, yb})), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(values<uint8_t>(run1(make_node("Where"), {ci, u8({3}, {1, 2, 3}), u8({}, {9})})),
            (std::vector<uint8_t>{1, 9, 3}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Where"), {boolean({2}, {true, false}), xi, yi});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Where"), {ci, xi, y}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataPRelu, SlopeBroadcastsToX) {
  Tensor x = f32({1, 2, 2}, {-1, 2, -3, 4});
  Tensor slope = f32({2, 1}, {0.5f, 0.25f});
  EXPECT_EQ(values<float>(run1(make_node("PRelu"), {x, slope})), (std::vector<float>{-0.5f, 2, -0.75f, 4}));
  EXPECT_EQ(values<float>(run1(make_node("PRelu"), {x, f32({1}, {0.1f})})),
            (std::vector<float>{-0.1f, 2, -0.3f, 4}));
  // The slope may not widen X.
  EXPECT_EQ(error_kind([&] {
              run1(make_node("PRelu"), {x, f32({3, 1, 1}, {1, 2, 3})});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeDataIdentity, SharesStorageForAnyDtype) {
  Tensor x = i64({2}, {1, 2});
  Tensor out = run1(make_node("Identity"), {x});
  EXPECT_EQ(out.raw(), x.raw());
  EXPECT_EQ(out.dtype(), DType::Int64);
  EXPECT_EQ(out.shape(), x.shape());
}

}  // namespace
}  // namespace collage
