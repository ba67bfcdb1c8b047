// Native shape kernels (Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Shape,
// Size, Expand, Tile) and generators (Constant, ConstantOfShape, Range).
#include <cmath>
#include <limits>

#include "tests/unit/native_data_helpers.h"

namespace collage {
namespace {

using namespace data_test;

Shape reshape_to(const Tensor& data, const std::vector<int64_t>& shape, int64_t allowzero = 0) {
  Node n = make_node("Reshape", {{"allowzero", Attribute::of_int(allowzero)}});
  return run1(n, {data, i64s(shape)}).shape();
}

TEST(NativeDataShape, ReshapeZeroCopiesAndMinusOneInfers) {
  Tensor x = iota_f32({2, 3, 4});
  EXPECT_EQ(reshape_to(x, {0, -1}), (Shape{2, 12}));
  EXPECT_EQ(reshape_to(x, {-1, 4}), (Shape{6, 4}));
  EXPECT_EQ(reshape_to(x, {0, 0, 2, 2}), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(reshape_to(x, {24}), (Shape{24}));
  EXPECT_EQ(reshape_to(Tensor::scalar<float>(1), {1, 1}), (Shape{1, 1}));
  EXPECT_EQ(reshape_to(iota_f32({1}), {}), (Shape{}));
  // allowzero=1: 0 is a real zero-size dimension.
  EXPECT_EQ(reshape_to(iota_f32({0, 3}), {3, 0}, 1), (Shape{3, 0}));
  EXPECT_EQ(reshape_to(iota_f32({0, 3}), {-1, 3}), (Shape{0, 3}));
  Tensor r = run1(make_node("Reshape"), {x, i64s({4, 6})});
  EXPECT_EQ(r.raw(), x.raw());  // a view
  EXPECT_EQ(values<float>(r), values<float>(x));
}

TEST(NativeDataShape, ReshapeRejectsBadShapes) {
  Tensor x = iota_f32({2, 3, 4});
  EXPECT_EQ(error_kind([&] { reshape_to(x, {5, -1}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { reshape_to(x, {2, 3}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { reshape_to(x, {-1, -1}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { reshape_to(x, {-2, 12}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { reshape_to(x, {2, 3, 4, 0}); }), ErrorKind::InvalidModel);  // no input dim 3
  EXPECT_EQ(error_kind([&] { reshape_to(x, {0, 12}, 1); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { reshape_to(iota_f32({0, 3}), {0, -1}, 1); }), ErrorKind::InvalidModel);
}

TEST(NativeDataShape, FlattenAxes) {
  Tensor x = iota_f32({2, 3, 4});
  auto flat = [&](int64_t axis) {
    return run1(make_node("Flatten", {{"axis", Attribute::of_int(axis)}}), {x}).shape();
  };
  EXPECT_EQ(run1(make_node("Flatten"), {x}).shape(), (Shape{2, 12}));
  EXPECT_EQ(flat(0), (Shape{1, 24}));
  EXPECT_EQ(flat(3), (Shape{24, 1}));
  EXPECT_EQ(flat(-1), (Shape{6, 4}));
  EXPECT_EQ(flat(-3), (Shape{1, 24}));
  EXPECT_EQ(error_kind([&] { flat(4); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { flat(-4); }), ErrorKind::InvalidModel);
}

TEST(NativeDataShape, TransposeMatchesIndexFormula) {
  Tensor x = iota_i64({2, 3, 4});
  Tensor rev = run1(make_node("Transpose"), {x});
  ASSERT_EQ(rev.shape(), (Shape{4, 3, 2}));
  const int64_t* r = rev.data<int64_t>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(r[(k * 3 + j) * 2 + i], (i * 3 + j) * 4 + k);

  Tensor p = run1(make_node("Transpose", {{"perm", Attribute::of_ints({1, 0, 2})}}), {x});
  ASSERT_EQ(p.shape(), (Shape{3, 2, 4}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(p.data<int64_t>()[(j * 2 + i) * 4 + k], (i * 3 + j) * 4 + k);

  Tensor b =
      run1(make_node("Transpose", {{"perm", Attribute::of_ints({1, 0})}}), {u8({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(values<uint8_t>(b), (std::vector<uint8_t>{1, 4, 2, 5, 3, 6}));
  Tensor empty = run1(make_node("Transpose"), {iota_f32({0, 3})});
  EXPECT_EQ(empty.shape(), (Shape{3, 0}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Transpose", {{"perm", Attribute::of_ints({0, 0, 1})}}), {x});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Transpose", {{"perm", Attribute::of_ints({1, 0})}}), {x});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeDataShape, SqueezeAndUnsqueeze) {
  Tensor x = iota_f32({1, 3, 1, 2});
  EXPECT_EQ(run1(make_node("Squeeze"), {x}).shape(), (Shape{3, 2}));
  EXPECT_EQ(run1(make_node("Squeeze"), {x, i64s({-2})}).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(run1(make_node("Squeeze"), {x, i64s({0, 2})}).shape(), (Shape{3, 2}));
  EXPECT_EQ(run1(make_node("Squeeze"), {x}).raw(), x.raw());
  EXPECT_EQ(error_kind([&] { run1(make_node("Squeeze"), {x, i64s({1})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Squeeze"), {x, i64s({4})}); }), ErrorKind::InvalidModel);

  Tensor y = iota_f32({2, 3});
  EXPECT_EQ(run1(make_node("Unsqueeze"), {y, i64s({0, -1})}).shape(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(run1(make_node("Unsqueeze"), {y, i64s({1})}).shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(run1(make_node("Unsqueeze"), {y, i64s({-2})}).shape(),
            (Shape{2, 1, 3}));  // relative to output rank 3
  EXPECT_EQ(run1(make_node("Unsqueeze"), {y, i64s({3, 1})}).shape(), (Shape{2, 1, 3, 1}));
  EXPECT_EQ(run1(make_node("Unsqueeze"), {Tensor::scalar<int64_t>(5), i64s({0})}).shape(), (Shape{1}));
  EXPECT_EQ(error_kind([&] { run1(make_node("Unsqueeze"), {y, i64s({1, 1})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Unsqueeze"), {y, i64s({3})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Unsqueeze"), {y}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataShape, ShapeWithStartEndClamped) {
  Tensor x = iota_f32({2, 3, 4, 5});
  auto shape_of = [&](std::map<std::string, Attribute> attrs) {
    Tensor out = run1(make_node("Shape", std::move(attrs)), {x});
    EXPECT_EQ(out.dtype(), DType::Int64);
    return values<int64_t>(out);
  };
  EXPECT_EQ(shape_of({}), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(shape_of({{"start", Attribute::of_int(1)}, {"end", Attribute::of_int(-1)}}),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(shape_of({{"start", Attribute::of_int(-10)}}), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(shape_of({{"end", Attribute::of_int(100)}, {"start", Attribute::of_int(-1)}}),
            (std::vector<int64_t>{5}));
  EXPECT_EQ(shape_of({{"start", Attribute::of_int(3)}, {"end", Attribute::of_int(1)}}),
            (std::vector<int64_t>{}));
  EXPECT_EQ(values<int64_t>(run1(make_node("Shape"), {Tensor::scalar<float>(1)})), (std::vector<int64_t>{}));
  Tensor size = run1(make_node("Size"), {x});
  EXPECT_EQ(size.shape(), (Shape{}));
  EXPECT_EQ(values<int64_t>(size), (std::vector<int64_t>{120}));
}

TEST(NativeDataShape, ExpandIsBidirectional) {
  Tensor x = f32({3, 1}, {1, 2, 3});
  Tensor out = run1(make_node("Expand"), {x, i64s({2, 1, 4})});
  ASSERT_EQ(out.shape(), (Shape{2, 3, 4}));
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(static_cast<float>(j + 1));
  EXPECT_EQ(values<float>(out), want);
  // A shape of 1s keeps the input's larger dims.
  EXPECT_EQ(values<float>(run1(make_node("Expand"), {x, i64s({1, 1})})), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(values<bool>(run1(make_node("Expand"), {boolean({2}, {true, false}), i64s({2, 2})})),
            (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(error_kind([&] { run1(make_node("Expand"), {x, i64s({2, 4})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Expand"), {x, i64s({-3, 1})}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataShape, TileRepeatsEachAxis) {
  Tensor x = iota_i64({2, 3});
  Tensor out = run1(make_node("Tile"), {x, i64s({2, 3})});
  ASSERT_EQ(out.shape(), (Shape{4, 9}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 9; ++j) EXPECT_EQ(out.data<int64_t>()[i * 9 + j], (i % 2) * 3 + j % 3);
  EXPECT_EQ(values<float>(run1(make_node("Tile"), {f32({2}, {1, 2}), i64s({3})})),
            (std::vector<float>{1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(run1(make_node("Tile"), {x, i64s({0, 1})}).shape(), (Shape{0, 3}));
  EXPECT_EQ(error_kind([&] { run1(make_node("Tile"), {x, i64s({2})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Tile"), {x, i64s({1, -1})}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataGenerate, ConstantFromEachAttributeKind) {
  Attribute tensor_attr;
  tensor_attr.kind = AttrKind::Tensor;
  tensor_attr.t = i32({2, 2}, {1, 2, 3, 4});
  Tensor t = run1(make_node("Constant", {{"value", tensor_attr}}), {});
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int32_t>(t), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_NE(t.raw(), tensor_attr.t.raw());

  Tensor f = run1(make_node("Constant", {{"value_float", Attribute::of_float(2.5f)}}), {});
  EXPECT_EQ(f.shape(), (Shape{}));
  EXPECT_EQ(values<float>(f), (std::vector<float>{2.5f}));
  Tensor fs = run1(make_node("Constant", {{"value_floats", Attribute::of_floats({1, 2})}}), {});
  EXPECT_EQ(fs.shape(), (Shape{2}));
  EXPECT_EQ(values<float>(fs), (std::vector<float>{1, 2}));
  Tensor i = run1(make_node("Constant", {{"value_int", Attribute::of_int(-7)}}), {});
  EXPECT_EQ(i.dtype(), DType::Int64);
  EXPECT_EQ(values<int64_t>(i), (std::vector<int64_t>{-7}));
  Tensor is = run1(make_node("Constant", {{"value_ints", Attribute::of_ints({4, 5, 6})}}), {});
  EXPECT_EQ(values<int64_t>(is), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Constant", {{"value_string", Attribute::of_string("x")}}), {});
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(error_kind([&] { run1(make_node("Constant"), {}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataGenerate, ConstantOfShape) {
  Tensor zeros = run1(make_node("ConstantOfShape"), {i64s({2, 3})});
  EXPECT_EQ(zeros.dtype(), DType::Float32);
  EXPECT_EQ(values<float>(zeros), (std::vector<float>(6, 0.0f)));
  Attribute value;
  value.kind = AttrKind::Tensor;
  value.t = i64({1}, {7});
  Tensor sevens = run1(make_node("ConstantOfShape", {{"value", value}}), {i64s({3})});
  EXPECT_EQ(sevens.dtype(), DType::Int64);
  EXPECT_EQ(values<int64_t>(sevens), (std::vector<int64_t>{7, 7, 7}));
  EXPECT_EQ(run1(make_node("ConstantOfShape"), {i64s({})}).shape(), (Shape{}));
  EXPECT_EQ(run1(make_node("ConstantOfShape"), {i64s({2, 0})}).shape(), (Shape{2, 0}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("ConstantOfShape"), {i64s({2, -1})});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeDataGenerate, RangeFloatAndInt) {
  auto range = [](Tensor a, Tensor b, Tensor c) { return run1(make_node("Range"), {a, b, c}); };
  Tensor f = range(Tensor::scalar<float>(0), Tensor::scalar<float>(1), Tensor::scalar<float>(0.3f));
  ASSERT_EQ(f.shape(), (Shape{4}));  // ceil(1 / 0.3) = 4
  std::vector<float> fv = values<float>(f);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(fv[static_cast<size_t>(i)], 0.3 * i, 1e-6);
  EXPECT_EQ(values<int64_t>(
                range(Tensor::scalar<int64_t>(10), Tensor::scalar<int64_t>(4), Tensor::scalar<int64_t>(-3))),
            (std::vector<int64_t>{10, 7}));
  EXPECT_EQ(values<int64_t>(
                range(Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(1))),
            (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(range(Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(2)).shape(),
            (Shape{0}));
  EXPECT_EQ(error_kind([&] {
              range(Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(0));
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              range(Tensor::scalar<float>(0), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(1));
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              range(Tensor::scalar<float>(0), Tensor::scalar<float>(1e30f), Tensor::scalar<float>(1e-30f));
            }),
            ErrorKind::InvalidModel);
}

}  // namespace
}  // namespace collage
