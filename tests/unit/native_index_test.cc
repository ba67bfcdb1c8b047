// backends/native/index_ops.cc: what the node suite does not pin down (ties, a
// hostile index, k beyond the matrix, every element written).
#include <gtest/gtest.h>

#include "native_data_helpers.h"

namespace collage {
namespace {

using data_test::make_node;
using data_test::run1;
using data_test::values;

TEST(NativeIndex, ArgMaxTiesPickFirstOrLastAndWorkOnIntegers) {
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

TEST(NativeIndex, TriluWritesEveryElementForAnyK) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (int64_t k : {-5, -1, 0, 1, 7}) {
    for (int64_t upper : {0, 1}) {
      Tensor y =
          run1(make_node("Trilu", {{"upper", Attribute::of_int(upper)}}), {x, Tensor::scalar<int64_t>(k)});
      std::vector<float> got = values<float>(y);
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t c = 0; c < 3; ++c) {
          bool keep = upper ? c - r >= k : c - r <= k;
          EXPECT_EQ(got[static_cast<size_t>(r * 3 + c)], keep ? static_cast<float>(r * 3 + c + 1) : 0.0f)
              << "k " << k << " upper " << upper;
        }
    }
  }
}

TEST(NativeIndex, GatherElementsRefusesAnIndexOutOfRange) {
  Tensor data = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor ok = Tensor::from_vector<int64_t>({2, 2}, {0, -1, 1, 0});
  EXPECT_EQ(values<float>(run1(make_node("GatherElements", {{"axis", Attribute::of_int(1)}}), {data, ok})),
            (std::vector<float>{1, 2, 4, 3}));
  Tensor bad = Tensor::from_vector<int64_t>({2, 2}, {0, 2, 1, 0});
  try {
    run1(make_node("GatherElements", {{"axis", Attribute::of_int(1)}}), {data, bad});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidModel);
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

TEST(NativeIndex, CumSumExclusiveReverse) {
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

}  // namespace
}  // namespace collage
