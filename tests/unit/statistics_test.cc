#include "core/ir/statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace collage {
namespace {

TEST(Median, MiddleSampleOrMeanOfTheMiddleTwo) {
  EXPECT_EQ(median({7}), 7.0);
  EXPECT_EQ(median({5, 1, 3, 9, 4}), 4.0);  // sorted: 1 3 4 5 9
  EXPECT_EQ(median({5, 1, 3, 9}), 4.0);     // sorted: 1 3 5 9 -> (3 + 5) / 2
  EXPECT_EQ(median({2, 2, 7, 2, 6}), 2.0);
  EXPECT_EQ(median({0.25, 0.75}), 0.5);
}

TEST(Median, AgreesWithSortingOnEveryPermutation) {
  std::vector<double> v = {3, 1, 4, 1, 5, 9};  // sorted: 1 1 3 4 5 9 -> 3.5
  std::sort(v.begin(), v.end());
  do {
    ASSERT_EQ(median(v), 3.5);
  } while (std::next_permutation(v.begin(), v.end()));
}

TEST(Median, OfNoSamplesIsAnError) {
  try {
    median({});
    ADD_FAILURE() << "a median of nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Internal);
  }
}

}  // namespace
}  // namespace collage
