// core/ir/accuracy: the budget's syntax and what each bound measures.
#include "core/ir/accuracy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/ir/error.h"

namespace collage {
namespace {

Tensor make(const Shape& shape, std::vector<float> v) {
  Tensor t(DType::Float32, shape);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

TEST(AccuracyBudget, ParsesTheDocumentedItemsAndPrintsThemBack) {
  AccuracyBudget b = parse_accuracy("top1,max-rel=5e-2,cosine=0.999");
  EXPECT_TRUE(b.top1);
  EXPECT_DOUBLE_EQ(b.max_rel, 5e-2);
  EXPECT_DOUBLE_EQ(b.cosine, 0.999);
  EXPECT_EQ(parse_accuracy(b.to_string()).to_string(), b.to_string());
  EXPECT_FALSE(AccuracyBudget{}.enabled());
  EXPECT_TRUE(parse_accuracy("cosine=0.99").enabled());
}

TEST(AccuracyBudget, RefusesWhatItDoesNotKnowNamingTheItem) {
  for (const char* bad :
       {"cosin=0.9", "max-rel", "max-rel=abc", "max-rel=2", "top1=1", "", ",", "cosine=0.9x"}) {
    try {
      parse_accuracy(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << bad;
      EXPECT_NE(std::string(e.what()).find("--accuracy"), std::string::npos) << e.what();
    }
  }
}

TEST(AccuracyMeasure, MaxRelIsTheLargestErrorOverTheOutputsPeak) {
  Tensor want = make({4}, {10, -2, 0.001f, 0});
  Tensor got = make({4}, {10, -2, 0.101f, 0});  // 0.1 off on a near-zero element: 1% of the peak
  AccuracyBudget b = parse_accuracy("max-rel=2e-2");
  AccuracyMeasure m = measure_accuracy(got, want, b, "y", false);
  EXPECT_NEAR(m.max_rel, 0.1 / 10, 1e-6);
  EXPECT_TRUE(m.ok()) << m.failure;
  AccuracyMeasure tight = measure_accuracy(got, want, parse_accuracy("max-rel=5e-3"), "y", false);
  EXPECT_FALSE(tight.ok());
  EXPECT_NE(tight.failure.find("y: error 0.01"), std::string::npos) << tight.failure;
}

TEST(AccuracyMeasure, CosineAndTop1PerRowOfTheLastAxis) {
  Tensor want = make({2, 3}, {1, 5, 2, 9, 1, 0});
  Tensor same_order = make({2, 3}, {1.1f, 4.9f, 2, 8, 1, 0.5f});
  Tensor swapped = make({2, 3}, {1, 5, 2, 1, 9, 0});  // row 2's argmax moves
  AccuracyBudget top1 = parse_accuracy("top1");
  EXPECT_TRUE(measure_accuracy(same_order, want, top1, "logits", true).ok());
  AccuracyMeasure m = measure_accuracy(swapped, want, top1, "logits", true);
  EXPECT_FALSE(m.top1);
  EXPECT_FALSE(m.ok());
  // A kernel's own output has no classes: top1 is not applied to it.
  EXPECT_TRUE(measure_accuracy(swapped, want, top1, "logits", false).ok());
  double dot = 1 * 1 + 5 * 5 + 2 * 2 + 9 * 1 + 1 * 9, n = 1 + 25 + 4 + 81 + 1;
  EXPECT_NEAR(m.cosine, dot / n, 1e-9);  // both have the same norm
  EXPECT_FALSE(measure_accuracy(swapped, want, parse_accuracy("cosine=0.9"), "logits", false).ok());
}

TEST(AccuracyMeasure, EqualInfinitiesAgreeAndOtherNonFiniteValuesFail) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor want = make({3}, {-inf, 1, 2});
  AccuracyBudget b = parse_accuracy("max-rel=1e-3");
  EXPECT_TRUE(measure_accuracy(make({3}, {-inf, 1, 2}), want, b, "s", false).ok());
  EXPECT_FALSE(measure_accuracy(make({3}, {0, 1, 2}), want, b, "s", false).ok());
  EXPECT_FALSE(measure_accuracy(make({3}, {-inf, std::nanf(""), 2}), want, b, "s", false).ok());
  EXPECT_FALSE(measure_accuracy(make({2}, {1, 2}), want, b, "s", false).ok());  // shape
}

}  // namespace
}  // namespace collage
