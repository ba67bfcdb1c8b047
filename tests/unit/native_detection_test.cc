// Native RoiAlign, DeformConv, TfIdfVectorizer and NonMaxSuppression (detection_ops.cc): weighting modes the
// ONNX node tests leave out, and every bad-input refusal.
#include <cmath>

#include "tests/unit/native_data_helpers.h"

namespace collage {
namespace {

using namespace data_test;

Node tfidf(const std::string& mode, std::vector<float> weights = {}) {
  std::map<std::string, Attribute> attrs = {{"mode", Attribute::of_string(mode)},
                                            {"min_gram_length", Attribute::of_int(1)},
                                            {"max_gram_length", Attribute::of_int(2)},
                                            {"max_skip_count", Attribute::of_int(0)},
                                            {"ngram_counts", Attribute::of_ints({0, 2})},
                                            {"ngram_indexes", Attribute::of_ints({0, 1, 2})},
                                            {"pool_int64s", Attribute::of_ints({7, 8, 7, 8})}};
  if (!weights.empty()) attrs["weights"] = Attribute::of_floats(weights);
  return make_node("TfIdfVectorizer", attrs);
}

TEST(NativeTfIdf, WeightingModes) {
  Tensor x = i64({2, 3}, {7, 8, 7, 1, 1, 1});
  // Row 0: unigram 7 twice, 8 once, bigram (7,8) once; row 1: nothing.
  EXPECT_EQ(values<float>(run1(tfidf("TF"), {x})), (std::vector<float>{2, 1, 1, 0, 0, 0}));
  EXPECT_EQ(values<float>(run1(tfidf("IDF", {0.5f, 2.0f, 3.0f}), {x})),
            (std::vector<float>{0.5f, 2, 3, 0, 0, 0}));
  EXPECT_EQ(values<float>(run1(tfidf("TFIDF", {0.5f, 2.0f, 3.0f}), {x})),
            (std::vector<float>{1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(values<float>(run1(tfidf("IDF"), {x})), (std::vector<float>{1, 1, 1, 0, 0, 0}));
}

TEST(NativeTfIdf, RefusesBadAttributes) {
  Tensor x = i64({3}, {7, 8, 7});
  auto with = [](Node n, const std::string& key, Attribute a) {
    n.attrs[key] = std::move(a);
    return n;
  };
  EXPECT_EQ(error_kind([&] { run1(tfidf("BM25"), {x}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(with(tfidf("TF"), "max_gram_length", Attribute::of_int(3)), {x}); }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(with(tfidf("TF"), "ngram_counts", Attribute::of_ints({0, 3})), {x});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(with(tfidf("TF"), "ngram_indexes", Attribute::of_ints({0, -1, 2})), {x});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(with(tfidf("TF"), "ngram_indexes", Attribute::of_ints({0, 1})), {x});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(with(tfidf("TF"), "max_skip_count", Attribute::of_int(-1)), {x}); }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(tfidf("TFIDF", {1.0f}), {x}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(tfidf("TF"), {i64({1, 1, 3}, {7, 8, 7})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(tfidf("TF"), {f32({3}, {7, 8, 7})}); }), ErrorKind::Unsupported);
}

TEST(NativeRoiAlign, AverageOfConstantPlaneAndRefusals) {
  Tensor x = f32({1, 1, 4, 4}, std::vector<float>(16, 3.0f));
  Tensor rois = f32({1, 4}, {0, 0, 3, 3});
  Node n = make_node("RoiAlign",
                     {{"output_height", Attribute::of_int(2)}, {"output_width", Attribute::of_int(2)}});
  Tensor y = run1(n, {x, rois, i64({1}, {0})});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  for (float v : values<float>(y)) EXPECT_FLOAT_EQ(v, 3.0f);
  EXPECT_EQ(error_kind([&] { run1(n, {x, rois, i64({1}, {1})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(n, {x, f32({1, 3}, {0, 0, 3}), i64({1}, {0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(n, {x, rois, i64({2}, {0, 0})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("RoiAlign", {{"mode", Attribute::of_string("min")}}), {x, rois, i64({1}, {0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(
      error_kind([&] {
        run1(make_node("RoiAlign", {{"coordinate_transformation_mode", Attribute::of_string("asymmetric")}}),
             {x, rois, i64({1}, {0})});
      }),
      ErrorKind::InvalidModel);
  EXPECT_EQ(
      error_kind([&] {
        run1(make_node("RoiAlign", {{"output_height", Attribute::of_int(0)}}), {x, rois, i64({1}, {0})});
      }),
      ErrorKind::InvalidModel);
  EXPECT_EQ(
      error_kind([&] {
        run1(make_node("RoiAlign", {{"sampling_ratio", Attribute::of_int(-2)}}), {x, rois, i64({1}, {0})});
      }),
      ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(n, {x, f32({1, 4}, {0, 0, INFINITY, 3}), i64({1}, {0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(n, {x, f32({1, 4}, {0, 0, 1e6f, 1e6f}), i64({1}, {0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(n, {f32({1, 4, 4}, std::vector<float>(16, 1)), rois, i64({1}, {0})});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeDeformConv, ZeroOffsetsEqualConvAndRefusals) {
  Tensor x = iota_f32({1, 2, 4, 4});
  Tensor w = f32({2, 2, 2, 2}, {1, 0, 0, 1, 0.5f, 0.5f, -1, 2, 1, 1, 1, 1, 0, 0, 0, 3});
  std::map<std::string, Attribute> attrs = {{"pads", Attribute::of_ints({1, 0, 0, 1})},
                                            {"strides", Attribute::of_ints({2, 1})}};
  Tensor conv = run1(make_node("Conv", attrs), {x, w});
  Tensor offsets(DType::Float32, {1, 8, conv.dim(2), conv.dim(3)});
  Tensor y = run1(make_node("DeformConv", attrs), {x, w, offsets});
  ASSERT_EQ(y.shape(), conv.shape());
  auto a = values<float>(y), b = values<float>(conv);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], b[i]) << i;
  // A half-pixel shift in x averages neighbours; past the border it reads zeros.
  Tensor one = f32({1, 1, 1, 1}, {1});
  std::vector<float> off(32, 0.0f);
  for (int i = 16; i < 32; ++i) off[static_cast<size_t>(i)] = 0.5f;
  Tensor plane = iota_f32({1, 1, 4, 4});
  auto s = values<float>(run1(make_node("DeformConv"), {plane, one, f32({1, 2, 4, 4}, off)}));
  EXPECT_FLOAT_EQ(s[0], 0.5f);
  EXPECT_FLOAT_EQ(s[3], 1.5f);  // 3 * 0.5 + 0 * 0.5
  Node n = make_node("DeformConv");
  EXPECT_EQ(error_kind([&] {
              run1(n, {x, w, Tensor(DType::Float32, {1, 8, 2, 2})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("DeformConv", {{"group", Attribute::of_int(3)}}), {x, w, offsets});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("DeformConv", {{"offset_group", Attribute::of_int(0)}}), {x, w, offsets});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("DeformConv", {{"strides", Attribute::of_ints({0, 1})}}), {x, w, offsets});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("DeformConv", {{"pads", Attribute::of_ints({-1, 0, 0, 0})}}), {x, w, offsets});
            }),
            ErrorKind::InvalidModel);
  Tensor full(DType::Float32, {1, 8, 3, 3});
  EXPECT_EQ(error_kind([&] { run1(n, {x, w, full, f32({3}, {0, 0, 0})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(n, {x, w, full, Tensor(), Tensor(DType::Float32, {1, 3, 3, 3})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(n, {iota_f32({1, 2, 4}), w, full}); }), ErrorKind::Unsupported);
}

// Four unit-height boxes; IoUs worked out by hand: A and D are the same box (D's corners
// flipped), B overlaps A by 0.9 / 1.1 = 0.82, C is disjoint from all.
Tensor nms_boxes() { return f32({1, 4, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 1, 1, 0, 0}); }

TEST(NativeNonMaxSuppression, GreedyByScoreWithThresholds) {
  Tensor scores = f32({1, 2, 4}, {0.9f, 0.8f, 0.7f, 0.95f,   // class 0
                                  0.3f, 0.6f, 0.4f, 0.1f});  // class 1
  Node nms = make_node("NonMaxSuppression");
  // Class 0: D (0.95) first; A (IoU 1 with D) and B (0.82) suppressed at 0.5; C kept.
  // Class 1: only B scores above 0.5.
  Tensor y = run1(nms, {nms_boxes(), scores, i64({1}, {10}), f32({1}, {0.5f}), f32({1}, {0.5f})});
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{0, 0, 3, 0, 0, 2, 0, 1, 1}));
  // IoU threshold 0.9 keeps B (0.82 < 0.9) but not A; max 2 per class stops after D, B.
  y = run1(nms, {nms_boxes(), scores, i64({1}, {2}), f32({1}, {0.9f})});
  EXPECT_EQ(values<int64_t>(y), (std::vector<int64_t>{0, 0, 3, 0, 0, 1, 0, 1, 1, 0, 1, 2}));
  // max_output_boxes_per_class omitted: 0, no output.
  EXPECT_EQ(run1(nms, {nms_boxes(), scores}).shape(), (Shape{0, 3}));
}

TEST(NativeNonMaxSuppression, CenterPointBoxesAndRefusals) {
  // [x_center, y_center, w, h]: box 1 is box 0 moved by half its width (IoU 1/3).
  Tensor boxes = f32({1, 2, 4}, {0.5f, 0.5f, 1, 1, 1.0f, 0.5f, 1, 1});
  Tensor scores = f32({1, 1, 2}, {0.5f, 0.6f});
  Node nms = make_node("NonMaxSuppression", {{"center_point_box", Attribute::of_int(1)}});
  EXPECT_EQ(values<int64_t>(run1(nms, {boxes, scores, i64({1}, {5}), f32({1}, {0.3f})})),
            (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(values<int64_t>(run1(nms, {boxes, scores, i64({1}, {5}), f32({1}, {0.34f})})),
            (std::vector<int64_t>{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(error_kind([&] {
              run1(nms, {f32({1, 2, 3}, {0, 0, 0, 0, 0, 0}), scores});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(nms, {boxes, f32({1, 1, 3}, {0, 0, 0})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(nms, {boxes, scores, i64({1}, {5}), f32({1}, {1.5f})});
            }),
            ErrorKind::InvalidModel);
}

}  // namespace
// Many boxes of mixed sizes (a detector's candidates, two classes): the kernel's pruned search
// keeps exactly what the textbook greedy loop, written out here, keeps.
TEST(NativeNonMaxSuppression, ManyBoxesMatchTheGreedyLoop) {
  const int64_t n = 700;
  std::vector<float> boxes, scores;
  uint32_t seed = 7;
  auto next = [&] { return static_cast<float>((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f; };
  for (int64_t i = 0; i < n; ++i) {
    float y = next() * 50, x = next() * 50, h = 0.5f + next() * (i % 7 == 0 ? 30 : 4), w = 0.5f + next() * 4;
    boxes.insert(boxes.end(), {y, x, y + h, x + w});
  }
  for (int64_t i = 0; i < 2 * n; ++i) scores.push_back(next());
  const float iou = 0.3f;
  std::vector<int64_t> want;
  for (int64_t c = 0; c < 2; ++c) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    const float* s = scores.data() + c * n;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return s[a] > s[b]; });
    std::vector<int64_t> kept;
    for (int64_t i : order) {
      bool suppressed = false;
      for (int64_t k : kept) {
        const float* a = &boxes[static_cast<size_t>(k * 4)];
        const float* b = &boxes[static_cast<size_t>(i * 4)];
        float ih = std::min(a[2], b[2]) - std::max(a[0], b[0]),
              iw = std::min(a[3], b[3]) - std::max(a[1], b[1]);
        if (ih <= 0 || iw <= 0) continue;
        float inter = ih * iw, uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
        suppressed = suppressed || inter / uni > iou;
      }
      if (!suppressed) kept.push_back(i);
    }
    for (int64_t k : kept) want.insert(want.end(), {0, c, k});
  }
  Node nms = make_node("NonMaxSuppression");
  Tensor y = run1(nms, {f32({1, n, 4}, boxes), f32({1, 2, n}, scores), i64({1}, {n}), f32({1}, {iou})});
  EXPECT_GT(want.size() / 3, 50u);
  EXPECT_EQ(values<int64_t>(y), want);
}

}  // namespace collage
