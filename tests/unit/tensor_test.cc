#include "core/ir/tensor.h"

#include <gtest/gtest.h>

namespace collage {
namespace {

TEST(Tensor, ShapeSizeRejectsNegativeAndOverflow) {
  EXPECT_EQ(shape_size({2, 3, 4}), 24);
  EXPECT_EQ(shape_size({}), 1);
  EXPECT_EQ(shape_size({5, 0, 7}), 0);
  EXPECT_THROW(shape_size({-1, 3}), Error);
  EXPECT_THROW(shape_size({int64_t{1} << 40, int64_t{1} << 40}), Error);
}

TEST(Tensor, ReshapeSharesStorageCloneDoesNot) {
  Tensor t = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = t.reshaped({3, 2});
  Tensor c = t.clone();
  t.data<float>()[0] = 42;
  EXPECT_EQ(r.data<float>()[0], 42);
  EXPECT_EQ(c.data<float>()[0], 1);
  EXPECT_THROW(t.reshaped({4}), Error);
}

TEST(Tensor, TypedAccessChecksDtype) {
  Tensor t = Tensor::from_vector<int64_t>({2}, {7, -3});
  EXPECT_THROW(t.data<float>(), Error);
  EXPECT_EQ(t.to_double_vector()[1], -3.0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
}

}  // namespace
}  // namespace collage
