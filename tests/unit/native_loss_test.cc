// Native loss kernels (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss) and the
// opset-18 Reduce* additions, ArgMax/ArgMin/CumSum: uncovered edges and bad inputs.
#include <cmath>
#include <limits>

#include "tests/unit/native_data_helpers.h"

namespace collage {
namespace {

using namespace data_test;

Node loss_node(const std::string& op, const std::string& reduction, size_t outputs = 1) {
  return make_node(op, {{"reduction", Attribute::of_string(reduction)}}, outputs);
}

TEST(NativeLoss, NllIgnoreIndexOutsideClassRangeIsSkipped) {
  Node n = make_node("NegativeLogLikelihoodLoss",
                     {{"reduction", Attribute::of_string("mean")}, {"ignore_index", Attribute::of_int(-1)}});
  Tensor out = run1(n, {f32({3, 2}, {-1, -2, -3, -4, -5, -6}), i64({3}, {1, -1, 0})});
  EXPECT_FLOAT_EQ(values<float>(out)[0], 3.5f);  // (2 + 5) / 2
}

TEST(NativeLoss, SoftmaxCrossEntropyReturnsLogProb) {
  auto outs = run(loss_node("SoftmaxCrossEntropyLoss", "none", 2), {f32({1, 2}, {0, 0}), i64({1}, {0})});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_NEAR(values<float>(outs[0])[0], std::log(2.0f), 1e-6);
  EXPECT_NEAR(values<float>(outs[1])[1], -std::log(2.0f), 1e-6);
}

TEST(NativeLoss, BadInputsThrow) {
  Node n = loss_node("NegativeLogLikelihoodLoss", "sum");
  EXPECT_EQ(error_kind([&] { run1(n, {iota_f32({2, 3}), i64({2}, {0, 3})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(n, {iota_f32({2, 3}), i64({2}, {0, -1})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(n, {iota_f32({3}), i64({}, {0})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(n, {iota_f32({2, 3}), i64({3}, {0, 0, 0})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(n, {iota_f32({2, 3}), f32({2}, {0, 0})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(n, {iota_f32({2, 3}), i64({2}, {0, 0}), iota_f32({2})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(loss_node("SoftmaxCrossEntropyLoss", "avg"), {iota_f32({2, 3}), i64({2}, {0, 0})});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeReduce, Opset18ReductionsAndEmptySetIdentities) {
  Tensor x = f32({2, 2}, {3, -4, 1, 2});
  EXPECT_EQ(values<float>(run1(make_node("ReduceL1"), {x, i64s({1})})), (std::vector<float>{7, 3}));
  EXPECT_NEAR(values<float>(run1(make_node("ReduceL2"), {x, i64s({0})}))[0], std::sqrt(10.0f), 1e-6);
  EXPECT_EQ(values<float>(run1(make_node("ReduceSumSquare"), {x}))[0], 30.0f);
  Tensor empty = f32({2, 0}, {});
  EXPECT_EQ(values<float>(run1(make_node("ReduceLogSum"), {empty, i64s({1})}))[0],
            -std::numeric_limits<float>::infinity());
  EXPECT_EQ(values<float>(run1(make_node("ReduceL2"), {empty, i64s({1})}))[1], 0.0f);
  EXPECT_EQ(values<float>(run1(make_node("ReduceMin"), {empty, i64s({1})}))[0],
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(values<bool>(run1(make_node("ReduceMax"), {boolean({2}, {false, true})}))[0], true);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("ReduceMax"), {i64({2, 0}, {}), i64s({1})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("ReduceSum"), {boolean({2}, {false, true})});
            }),
            ErrorKind::Unsupported);
}

}  // namespace
}  // namespace collage

namespace collage {
namespace {

using namespace data_test;

TEST(NativeDet, SingularPivotingAndBadShapes) {
  EXPECT_EQ(values<float>(run1(make_node("Det"), {f32({2, 2}, {1, 2, 2, 4})}))[0], 0.0f);
  EXPECT_FLOAT_EQ(values<float>(run1(make_node("Det"), {f32({2, 2}, {0, 1, 1, 0})}))[0], -1.0f);
  EXPECT_EQ(error_kind([&] { run1(make_node("Det"), {iota_f32({2, 3})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Det"), {iota_f32({2})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(make_node("Det"), {iota_i64({2, 2})}); }), ErrorKind::Unsupported);
}

TEST(NativeArg, BadInputsThrow) {
  Node argmax = make_node("ArgMax", {{"axis", Attribute::of_int(0)}});
  EXPECT_EQ(error_kind([&] { run1(argmax, {f32({0, 2}, {})}); }), ErrorKind::InvalidModel);
  Node far = make_node("ArgMin", {{"axis", Attribute::of_int(5)}});
  EXPECT_EQ(error_kind([&] { run1(far, {iota_f32({2, 2})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("CumSum"), {iota_f32({2, 2}), i64s({0, 1})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("CumSum"), {iota_f32({2, 2}), f32({1}, {0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("CumSum"), {iota_f32({2, 2}), i64s({-3})});
            }),
            ErrorKind::InvalidModel);
}

}  // namespace
}  // namespace collage
