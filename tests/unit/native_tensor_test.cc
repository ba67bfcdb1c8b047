// Native data-movement kernels: Concat, Split, Slice, Gather, Pad,
// DepthToSpace, SpaceToDepth, Dropout.
#include <limits>

#include "tests/unit/native_data_helpers.h"

namespace collage {
namespace {

using namespace data_test;

Node axis_node(const std::string& op, int64_t axis, size_t outputs = 1) {
  return make_node(op, {{"axis", Attribute::of_int(axis)}}, outputs);
}

TEST(NativeDataConcat, AxesDtypesAndEmptyInputs) {
  Tensor a = i64({2, 2}, {1, 2, 3, 4}), b = i64({2, 1}, {5, 6});
  Tensor out = run1(axis_node("Concat", -1), {a, b});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<int64_t>(out), (std::vector<int64_t>{1, 2, 5, 3, 4, 6}));
  Tensor rows = run1(axis_node("Concat", 0), {a, i64({0, 2}, {}), i64({1, 2}, {7, 8})});
  EXPECT_EQ(rows.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<int64_t>(rows), (std::vector<int64_t>{1, 2, 3, 4, 7, 8}));
  Tensor flags = run1(axis_node("Concat", 0), {boolean({1}, {true}), boolean({2}, {false, true})});
  EXPECT_EQ(values<bool>(flags), (std::vector<bool>{true, false, true}));
  Tensor single = run1(axis_node("Concat", 1), {f32({1, 2}, {1, 2})});
  EXPECT_EQ(values<float>(single), (std::vector<float>{1, 2}));
  Tensor middle =
      run1(axis_node("Concat", 1), {iota_f32({2, 1, 2}), f32({2, 2, 2}, {10, 11, 12, 13, 14, 15, 16, 17})});
  EXPECT_EQ(values<float>(middle), (std::vector<float>{0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17}));
}

TEST(NativeDataConcat, MismatchesThrow) {
  EXPECT_EQ(error_kind([&] {
              run1(axis_node("Concat", 0), {iota_f32({2, 2}), iota_f32({2})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(axis_node("Concat", 0), {iota_f32({2, 2}), iota_f32({2, 3})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(axis_node("Concat", 0), {iota_f32({2}), iota_i64({2})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(axis_node("Concat", 2), {iota_f32({2, 2})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Concat"), {iota_f32({2, 2})}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataSplit, EqualUnevenAndExplicit) {
  Tensor x = iota_f32({7});
  std::vector<Tensor> parts = run(axis_node("Split", 0, 3), {x});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(values<float>(parts[0]), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(values<float>(parts[1]), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(values<float>(parts[2]), (std::vector<float>{6}));

  Tensor m = iota_i64({2, 5});
  std::vector<Tensor> cols = run(axis_node("Split", -1, 2), {m, i64s({2, 3})});
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int64_t>(cols[0]), (std::vector<int64_t>{0, 1, 5, 6}));
  EXPECT_EQ(values<int64_t>(cols[1]), (std::vector<int64_t>{2, 3, 4, 7, 8, 9}));
  std::vector<Tensor> with_empty = run(axis_node("Split", 1, 3), {m, i64s({0, 5, 0})});
  EXPECT_EQ(with_empty[0].shape(), (Shape{2, 0}));
  EXPECT_EQ(values<int64_t>(with_empty[1]), values<int64_t>(m));
  EXPECT_EQ(error_kind([&] { run(axis_node("Split", 1, 2), {m, i64s({2, 2})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run(axis_node("Split", 1, 3), {m, i64s({2, 3})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run(axis_node("Split", 1, 2), {m, i64s({6, -1})}); }), ErrorKind::InvalidModel);
}

std::vector<float> slice_1d(const Tensor& x, int64_t start, int64_t end, int64_t step) {
  return values<float>(run1(make_node("Slice"), {x, i64s({start}), i64s({end}), i64s({0}), i64s({step})}));
}

TEST(NativeDataSlice, ClampingAndNegativeSteps) {
  Tensor x = iota_f32({10});
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(slice_1d(x, 2, 5, 1), (std::vector<float>{2, 3, 4}));
  EXPECT_EQ(slice_1d(x, -3, max, 1), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(slice_1d(x, -100, 3, 1), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(slice_1d(x, 100, 1000, 1), (std::vector<float>{}));
  EXPECT_EQ(slice_1d(x, 1, 8, 3), (std::vector<float>{1, 4, 7}));
  EXPECT_EQ(slice_1d(x, -1, min, -1), (std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(slice_1d(x, 8, 1, -3), (std::vector<float>{8, 5, 2}));
  EXPECT_EQ(slice_1d(x, 100, -100, -4), (std::vector<float>{9, 5, 1}));
  EXPECT_EQ(slice_1d(x, max, 7, -1), (std::vector<float>{9, 8}));
  EXPECT_EQ(slice_1d(x, 3, 5, -1), (std::vector<float>{}));
  EXPECT_EQ(slice_1d(x, 5, 0, min), (std::vector<float>{5}));
  EXPECT_EQ(slice_1d(x, 0, 10, max), (std::vector<float>{0}));
}

TEST(NativeDataSlice, AxesStepsAndIntTypes) {
  Tensor x = iota_i64({3, 4});
  // Negative axis, step 2 on the columns; rows untouched.
  Tensor cols = run1(make_node("Slice"), {x, i64s({0}), i64s({4}), i64s({-1}), i64s({2})});
  EXPECT_EQ(cols.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<int64_t>(cols), (std::vector<int64_t>{0, 2, 4, 6, 8, 10}));
  // Both axes reversed, int32 parameters, axes/steps in non-ascending order.
  Tensor both = run1(make_node("Slice"),
                     {x, i32({2}, {-1, -1}), i32({2}, {-5, 0}), i32({2}, {1, 0}), i32({2}, {-2, -1})});
  EXPECT_EQ(both.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int64_t>(both), (std::vector<int64_t>{11, 9, 7, 5}));
  // Default axes and steps.
  Tensor def = run1(make_node("Slice"), {x, i64s({1, 1}), i64s({3, 3})});
  EXPECT_EQ(values<int64_t>(def), (std::vector<int64_t>{5, 6, 9, 10}));
  Tensor bytes =
      run1(make_node("Slice"), {u8({4}, {1, 2, 3, 4}), i64s({3}), i64s({0}), Tensor(), i64s({-1})});
  EXPECT_EQ(values<uint8_t>(bytes), (std::vector<uint8_t>{4, 3, 2}));
  EXPECT_EQ(
      values<float>(run1(make_node("Slice"), {iota_f32({0}), i64s({0}), i64s({5}), i64s({0}), i64s({-1})})),
      (std::vector<float>{}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Slice"), {x, i64s({0}), i64s({1}), i64s({0}), i64s({0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Slice"), {x, i64s({0}), i64s({1}), i64s({2})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Slice"), {x, i64s({0, 0}), i64s({1})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Slice"), {x, i64s({0, 0}), i64s({1, 1}), i64s({1, -1})});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeDataGather, AxesNegativeIndicesAndShapes) {
  Tensor x = iota_f32({3, 2});
  Tensor rows = run1(make_node("Gather"), {x, i64s({2, -3, -1})});
  EXPECT_EQ(rows.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(rows), (std::vector<float>{4, 5, 0, 1, 4, 5}));
  Tensor cols = run1(axis_node("Gather", -1), {x, i32({2, 2}, {1, 0, 0, -1})});
  EXPECT_EQ(cols.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(values<float>(cols), (std::vector<float>{1, 0, 0, 1, 3, 2, 2, 3, 5, 4, 4, 5}));
  Tensor scalar = run1(make_node("Gather"), {iota_i64({4}), Tensor::scalar<int64_t>(-2)});
  EXPECT_EQ(scalar.shape(), (Shape{}));
  EXPECT_EQ(values<int64_t>(scalar), (std::vector<int64_t>{2}));
  EXPECT_EQ(run1(make_node("Gather"), {x, i64({0}, {})}).shape(), (Shape{0, 2}));
  EXPECT_EQ(values<bool>(run1(make_node("Gather"), {boolean({3}, {true, false, true}), i64s({1, 2})})),
            (std::vector<bool>{false, true}));
  EXPECT_EQ(error_kind([&] { run1(make_node("Gather"), {x, i64s({3})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Gather"), {x, i64s({-4})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(axis_node("Gather", 2), {x, i64s({0})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Gather"), {x, f32({1}, {0})}); }), ErrorKind::Unsupported);
}

Node pad_node(const std::string& mode) { return make_node("Pad", {{"mode", Attribute::of_string(mode)}}); }

TEST(NativeDataPad, ConstantWithValueAndAxes) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Tensor out = run1(make_node("Pad"), {x, i64s({1, 0, 0, 1}), Tensor::scalar<float>(1.5f)});
  EXPECT_EQ(out.shape(), (Shape{3, 3}));
  EXPECT_EQ(values<float>(out), (std::vector<float>{1.5f, 1.5f, 1.5f, 1, 2, 1.5f, 3, 4, 1.5f}));
  Tensor zeros = run1(make_node("Pad"), {x, i64s({0, 1, 0, 0})});
  EXPECT_EQ(values<float>(zeros), (std::vector<float>{0, 1, 2, 0, 3, 4}));
  Tensor axis = run1(make_node("Pad"), {x, i64s({2, 1}), Tensor(), i64s({-1})});
  EXPECT_EQ(axis.shape(), (Shape{2, 5}));
  EXPECT_EQ(values<float>(axis), (std::vector<float>{0, 0, 1, 2, 0, 0, 0, 3, 4, 0}));
  Tensor ints = run1(make_node("Pad"), {i64({2}, {5, 6}), i64s({1, 2}), Tensor::scalar<int64_t>(-1)});
  EXPECT_EQ(values<int64_t>(ints), (std::vector<int64_t>{-1, 5, 6, -1, -1}));
}

TEST(NativeDataPad, ReflectEdgeWrap) {
  Tensor x = f32({3}, {1, 2, 3});
  EXPECT_EQ(values<float>(run1(pad_node("reflect"), {x, i64s({2, 2})})),
            (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  // Pads longer than the axis keep reflecting back and forth, like numpy.pad.
  EXPECT_EQ(values<float>(run1(pad_node("reflect"), {x, i64s({5, 0})})),
            (std::vector<float>{2, 1, 2, 3, 2, 1, 2, 3}));
  EXPECT_EQ(values<float>(run1(pad_node("edge"), {x, i64s({2, 1})})), (std::vector<float>{1, 1, 1, 2, 3, 3}));
  EXPECT_EQ(values<float>(run1(pad_node("wrap"), {x, i64s({2, 4})})),
            (std::vector<float>{2, 3, 1, 2, 3, 1, 2, 3, 1}));
  Tensor m = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r2 = run1(pad_node("reflect"), {m, i64s({1, 1, 1, 1})});
  EXPECT_EQ(r2.shape(), (Shape{4, 5}));
  EXPECT_EQ(values<float>(r2),
            (std::vector<float>{5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2}));
  Tensor e2 = run1(pad_node("edge"), {m, i64s({0, 1, 1, 0})});
  EXPECT_EQ(e2.shape(), (Shape{3, 4}));
  EXPECT_EQ(values<float>(e2), (std::vector<float>{1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6}));
  EXPECT_EQ(values<float>(run1(pad_node("reflect"), {f32({1}, {7}), i64s({2, 1})})),
            (std::vector<float>{7, 7, 7, 7}));
}

TEST(NativeDataPad, NegativePadsCrop) {
  Tensor x = f32({4}, {1, 2, 3, 4});
  EXPECT_EQ(values<float>(run1(make_node("Pad"), {x, i64s({-1, 1})})), (std::vector<float>{2, 3, 4, 0}));
  EXPECT_EQ(values<float>(run1(make_node("Pad"), {x, i64s({-1, -2})})), (std::vector<float>{2}));
  // Crop first, then reflect within what remains.
  Tensor y = f32({5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(values<float>(run1(pad_node("reflect"), {y, i64s({2, -1})})),
            (std::vector<float>{3, 2, 1, 2, 3, 4}));
  EXPECT_EQ(values<float>(run1(pad_node("edge"), {y, i64s({-3, 2})})), (std::vector<float>{4, 5, 5, 5}));
  EXPECT_EQ(run1(make_node("Pad"), {x, i64s({-2, -2})}).shape(), (Shape{0}));
  EXPECT_EQ(error_kind([&] { run1(make_node("Pad"), {x, i64s({-3, -2})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(pad_node("reflect"), {x, i64s({-4, 1})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Pad"), {x, i64s({1, 1, 1})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(pad_node("mirror"), {x, i64s({1, 1})}); }), ErrorKind::Unsupported);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("Pad"), {x, i64s({std::numeric_limits<int64_t>::min(), 0})});
            }),
            ErrorKind::InvalidModel);
}

// Spec formulas: DCR reads channel (i*b + j)*C' + c, CRD reads c*b*b + i*b + j.
float depth_to_space_ref(const Tensor& x, bool dcr, int64_t b, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3), oc = C / (b * b);
  const int64_t i = h % b, j = w % b;
  const int64_t ch = dcr ? (i * b + j) * oc + c : c * b * b + i * b + j;
  return x.data<float>()[((n * C + ch) * H + h / b) * W + w / b];
}

TEST(NativeDataDepthSpace, DepthToSpaceBothModes) {
  Tensor tiny = iota_f32({1, 8, 1, 1});
  Node dcr = make_node("DepthToSpace", {{"blocksize", Attribute::of_int(2)}});
  Node crd =
      make_node("DepthToSpace", {{"blocksize", Attribute::of_int(2)}, {"mode", Attribute::of_string("CRD")}});
  EXPECT_EQ(values<float>(run1(dcr, {tiny})), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_EQ(values<float>(run1(crd, {tiny})), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));

  Tensor x = iota_f32({2, 8, 2, 3});
  for (bool is_dcr : {true, false}) {
    Tensor out = run1(is_dcr ? dcr : crd, {x});
    ASSERT_EQ(out.shape(), (Shape{2, 2, 4, 6}));
    const float* o = out.data<float>();
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < 2; ++c)
        for (int64_t h = 0; h < 4; ++h)
          for (int64_t w = 0; w < 6; ++w)
            EXPECT_EQ(o[((n * 2 + c) * 4 + h) * 6 + w], depth_to_space_ref(x, is_dcr, 2, n, c, h, w));
  }
  EXPECT_EQ(error_kind([&] { run1(dcr, {iota_f32({1, 6, 1, 1})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(dcr, {iota_f32({8, 1, 1})}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataDepthSpace, SpaceToDepthInvertsDcr) {
  Node s2d = make_node("SpaceToDepth", {{"blocksize", Attribute::of_int(2)}});
  EXPECT_EQ(values<float>(run1(s2d, {iota_f32({1, 1, 2, 2})})), (std::vector<float>{0, 1, 2, 3}));
  Tensor x = iota_i64({2, 3, 4, 6});
  Tensor packed = run1(s2d, {x});
  ASSERT_EQ(packed.shape(), (Shape{2, 12, 2, 3}));
  // Output channel (i*b + j)*C + c at (h, w) holds input (c, h*b + i, w*b + j).
  EXPECT_EQ(packed.data<int64_t>()[((1 * 12 + (1 * 2 + 0) * 3 + 2) * 2 + 1) * 3 + 2],
            ((1 * 3 + 2) * 4 + 3) * 6 + 4);
  Tensor back = run1(make_node("DepthToSpace", {{"blocksize", Attribute::of_int(2)}}), {packed});
  EXPECT_EQ(back.shape(), x.shape());
  EXPECT_EQ(values<int64_t>(back), values<int64_t>(x));
  EXPECT_EQ(error_kind([&] { run1(s2d, {iota_f32({1, 1, 3, 2})}); }), ErrorKind::InvalidModel);
}

TEST(NativeDataDropout, InferencePassThroughWithMask) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  std::vector<Tensor> outs = run(make_node("Dropout", {}, 2), {x, Tensor::scalar<float>(0.5f)});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(values<float>(outs[0]), values<float>(x));
  EXPECT_EQ(outs[1].dtype(), DType::Bool);
  EXPECT_EQ(outs[1].shape(), x.shape());
  EXPECT_EQ(values<bool>(outs[1]), (std::vector<bool>(4, true)));
  EXPECT_EQ(run(make_node("Dropout"), {x}).size(), 1u);
  EXPECT_EQ(run(make_node("Dropout"), {x, Tensor(), boolean({}, {false})}).size(), 1u);
}

TEST(NativeDataDropout, TrainingModeKeepsScaledElementsWhereTheMaskSays) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Node seeded = make_node("Dropout", {{"seed", Attribute::of_int(7)}}, 2);  // an int, as the spec has it
  std::vector<Tensor> outs = run(seeded, {x, Tensor::scalar<float>(0.25f), boolean({}, {true})});
  ASSERT_EQ(outs.size(), 2u);
  std::vector<float> y = values<float>(outs[0]), in = values<float>(x);
  std::vector<bool> mask = values<bool>(outs[1]);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_FLOAT_EQ(y[i], mask[i] ? in[i] / 0.75f : 0.0f) << i;
  // A seed makes the draw repeatable; a ratio outside [0, 1) is refused.
  EXPECT_EQ(values<bool>(run(seeded, {x, Tensor::scalar<float>(0.25f), boolean({}, {true})})[1]), mask);
  EXPECT_EQ(error_kind([&] {
              run(seeded, {x, Tensor::scalar<float>(1.0f), boolean({}, {true})});
            }),
            ErrorKind::InvalidModel);
}

}  // namespace
}  // namespace collage
