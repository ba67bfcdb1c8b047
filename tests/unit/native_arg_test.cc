// backends/native/arg_ops.cc: what the node suite does not pin down (ties,
// integer inputs, exclusive/reverse sums).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "native_data_helpers.h"

namespace collage {
namespace {

using data_test::make_node;
using data_test::run1;
using data_test::values;

TEST(NativeArg, ArgMaxTiesPickFirstOrLastAndWorkOnIntegers) {
  Tensor x = Tensor::from_vector<int64_t>({2, 3}, {5, 9, 9, 1, 1, 0});
  EXPECT_EQ(values<int64_t>(run1(make_node("ArgMax", {{"axis", Attribute::of_int(1)}}), {x})),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(values<int64_t>(run1(make_node("ArgMax", {{"axis", Attribute::of_int(1)},
                                                      {"select_last_index", Attribute::of_int(1)}}),
                                 {x})),
            (std::vector<int64_t>{2, 1}));
  Tensor m =
      run1(make_node("ArgMin", {{"axis", Attribute::of_int(0)}, {"keepdims", Attribute::of_int(0)}}), {x});
  EXPECT_EQ(m.shape(), (Shape{3}));
  EXPECT_EQ(values<int64_t>(m), (std::vector<int64_t>{1, 1, 1}));
}

TEST(NativeArg, CumSumExclusiveReverse) {
  Tensor x = Tensor::from_vector<float>({4}, {1, 2, 3, 4});
  Tensor axis = Tensor::scalar<int64_t>(0);
  auto cs = [&](int64_t exclusive, int64_t reverse) {
    return values<float>(run1(make_node("CumSum", {{"exclusive", Attribute::of_int(exclusive)},
                                                   {"reverse", Attribute::of_int(reverse)}}),
                              {x, axis}));
  };
  EXPECT_EQ(cs(0, 0), (std::vector<float>{1, 3, 6, 10}));
  EXPECT_EQ(cs(1, 0), (std::vector<float>{0, 1, 3, 6}));
  EXPECT_EQ(cs(0, 1), (std::vector<float>{10, 9, 7, 4}));
  EXPECT_EQ(cs(1, 1), (std::vector<float>{9, 7, 4, 0}));
}

TEST(NativeLocalNorm, GroupNormAndLpPoolRefuseBadAttributes) {
  Tensor x(DType::Float32, {1, 6, 2, 2});
  Tensor three = Tensor::from_vector<float>({3}, {1, 1, 1});
  auto kind = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.kind();
    }
    return ErrorKind::Internal;  // nothing thrown
  };
  Node gn = make_node("GroupNormalization", {{"num_groups", Attribute::of_int(4)}});
  gn.opset = 18;
  EXPECT_EQ(kind([&] { run1(gn, {x, three, three}); }), ErrorKind::InvalidModel);  // 4 does not divide 6
  gn.attrs["num_groups"] = Attribute::of_int(3);
  EXPECT_EQ(run1(gn, {x, three, three}).shape(), x.shape());
  Node lp = make_node("LpPool", {{"kernel_shape", Attribute::of_ints({2, 2})}, {"p", Attribute::of_int(0)}});
  EXPECT_EQ(kind([&] { run1(lp, {x}); }), ErrorKind::InvalidModel);
  lp.attrs["p"] = Attribute::of_int(3);
  Tensor ones = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 1, 1, 1});
  EXPECT_NEAR(values<float>(run1(lp, {ones}))[0], std::cbrt(4.0), 1e-6);
}

}  // namespace
}  // namespace collage
