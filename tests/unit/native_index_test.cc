// Edge cases and bad-input errors of the native indexing, data-movement and
// resize kernels (ONNX's own cases run in the conformance runner).
#include <gtest/gtest.h>

#include <cstdint>

#include "backends/native/native_ops.h"

namespace collage {
namespace {

Node make(const std::string& op, std::map<std::string, Attribute> attrs = {}, int64_t opset = 19) {
  Node n;
  n.name = "t";
  n.op_type = op;
  n.opset = opset;
  n.attrs = std::move(attrs);
  return n;
}

std::vector<Tensor> run(const Node& n, std::vector<const Tensor*> in) {
  HeapAllocator alloc;
  return native::evaluate_node(n, in, alloc);
}

ErrorKind kind_of(const Node& n, std::vector<const Tensor*> in) {
  try {
    run(n, in);
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::Internal;
}

TEST(NativeIndex, ResizeBadAttributesAreInvalid) {
  Tensor x = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor none(DType::Float32, {0});
  Tensor sizes = Tensor::from_vector<int64_t>({2}, {4, 4});
  Node n = make("Resize", {{"axes", Attribute::of_ints({2, 2})}});
  EXPECT_EQ(kind_of(n, {&x, &none, &none, &sizes}), ErrorKind::InvalidModel);  // repeated axis
  n.attrs["axes"] = Attribute::of_ints({2, 7});
  EXPECT_EQ(kind_of(n, {&x, &none, &none, &sizes}), ErrorKind::InvalidModel);  // out of range
  n.attrs["axes"] = Attribute::of_ints({3});
  EXPECT_EQ(kind_of(n, {&x, &none, &none, &sizes}), ErrorKind::InvalidModel);  // 2 sizes for 1 axis
  n.attrs["axes"] = Attribute::of_ints({2, 3});
  Tensor huge = Tensor::from_vector<int64_t>({2}, {int64_t{1} << 50, 4});
  EXPECT_EQ(kind_of(n, {&x, &none, &none, &huge}), ErrorKind::InvalidModel);
  n.attrs["keep_aspect_ratio_policy"] = Attribute::of_string("sideways");
  EXPECT_EQ(kind_of(n, {&x, &none, &none, &sizes}), ErrorKind::InvalidModel);
  n.attrs.erase("keep_aspect_ratio_policy");
  n.attrs["mode"] = Attribute::of_string("area");
  EXPECT_EQ(kind_of(n, {&x, &none, &none, &sizes}), ErrorKind::Unsupported);
}

TEST(NativeIndex, ResizeAntialiasOnUpsampleIsPlainLinear) {
  Tensor x = Tensor::from_vector<float>({1, 4}, {0, 10, 20, 30});
  Tensor none(DType::Float32, {0});
  Tensor scales = Tensor::from_vector<float>({2}, {1, 2});
  Node n = make("Resize", {{"mode", Attribute::of_string("linear")}});
  auto plain = run(n, {&x, &none, &scales})[0].to_double_vector();
  n.attrs["antialias"] = Attribute::of_int(1);
  EXPECT_EQ(run(n, {&x, &none, &scales})[0].to_double_vector(), plain);
}

}  // namespace
}  // namespace collage

namespace collage {
namespace {

TEST(NativeIndex, OutOfRangeIndicesAreInvalidInput) {
  Tensor data = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor bad = Tensor::from_vector<int64_t>({2, 1}, {0, 2});
  Tensor upd = Tensor::from_vector<float>({2, 1}, {9, 9});
  EXPECT_EQ(kind_of(make("GatherElements", {{"axis", Attribute::of_int(0)}}), {&data, &bad}),
            ErrorKind::InvalidInput);
  EXPECT_EQ(kind_of(make("ScatterElements"), {&data, &bad, &upd}), ErrorKind::InvalidInput);
  Tensor nd = Tensor::from_vector<int64_t>({1, 2}, {0, -3});
  EXPECT_EQ(kind_of(make("GatherND"), {&data, &nd}), ErrorKind::InvalidInput);
  Tensor nd_upd = Tensor::from_vector<float>({1}, {5});
  EXPECT_EQ(kind_of(make("ScatterND"), {&data, &nd, &nd_upd}), ErrorKind::InvalidInput);
  EXPECT_EQ(kind_of(make("ScatterND", {{"reduction", Attribute::of_string("avg")}}), {&data, &nd, &nd_upd}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(kind_of(make("GatherND", {{"batch_dims", Attribute::of_int(5)}}), {&data, &nd}),
            ErrorKind::InvalidModel);
}

TEST(NativeIndex, TriluHugeKIsSafe) {
  Tensor x = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  Tensor kmin = Tensor::from_vector<int64_t>({}, {INT64_MIN});
  Tensor kmax = Tensor::from_vector<int64_t>({}, {INT64_MAX});
  EXPECT_EQ(run(make("Trilu"), {&x, &kmin})[0].to_double_vector(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(run(make("Trilu"), {&x, &kmax})[0].to_double_vector(), (std::vector<double>{0, 0, 0, 0}));
  Node lower = make("Trilu", {{"upper", Attribute::of_int(0)}});
  EXPECT_EQ(run(lower, {&x, &kmin})[0].to_double_vector(), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(run(lower, {&x, &kmax})[0].to_double_vector(), (std::vector<double>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace collage

namespace collage {
namespace {

TEST(NativeIndex, GridSampleAndAffineGridBadInputs) {
  Tensor x(DType::Float32, {1, 1, 2, 2, 2});
  Tensor grid(DType::Float32, {1, 1, 1, 1, 3});
  Node n = make("GridSample", {{"mode", Attribute::of_string("cubic")}}, 20);
  EXPECT_EQ(kind_of(n, {&x, &grid}), ErrorKind::Unsupported);  // cubic is 2-D only
  n.attrs["mode"] = Attribute::of_string("linear");
  n.attrs["padding_mode"] = Attribute::of_string("wrap");
  EXPECT_EQ(kind_of(n, {&x, &grid}), ErrorKind::InvalidModel);
  Tensor bad_grid(DType::Float32, {1, 1, 1, 1, 2});
  EXPECT_EQ(kind_of(make("GridSample", {}, 20), {&x, &bad_grid}), ErrorKind::InvalidModel);
  Tensor theta(DType::Float32, {1, 2, 3});
  Tensor size = Tensor::from_vector<int64_t>({4}, {1, 1, -2, 3});
  EXPECT_EQ(kind_of(make("AffineGrid", {}, 20), {&theta, &size}), ErrorKind::InvalidModel);
}

}  // namespace
}  // namespace collage

namespace collage {
namespace {

TEST(NativeIndex, SelectOpsBadInputs) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor k = Tensor::from_vector<int64_t>({1}, {4});
  EXPECT_EQ(kind_of(make("TopK", {}, 11), {&x, &k}), ErrorKind::InvalidInput);  // K > axis size
  Tensor lens = Tensor::from_vector<int64_t>({3}, {1, 5, 1});
  EXPECT_EQ(kind_of(make("ReverseSequence", {}, 10), {&x, &lens}), ErrorKind::InvalidInput);
  Tensor ind = Tensor::from_vector<int64_t>({1}, {0});
  Tensor depth = Tensor::from_vector<int64_t>({1}, {-3});
  Tensor vals = Tensor::from_vector<float>({2}, {0, 1});
  EXPECT_EQ(kind_of(make("OneHot", {}, 11), {&ind, &depth, &vals}), ErrorKind::InvalidInput);
  Tensor cond = Tensor::from_vector<bool>({4}, {true, false, true, true});
  EXPECT_EQ(kind_of(make("Compress", {{"axis", Attribute::of_int(1)}}, 11), {&x, &cond}),
            ErrorKind::InvalidModel);  // condition longer than the axis
}

TEST(NativeIndex, TopKTiesKeepLowerIndexAndUniqueFirstOccurrence) {
  Tensor x = Tensor::from_vector<float>({5}, {3, 1, 3, 2, 1});
  Tensor k = Tensor::from_vector<int64_t>({1}, {3});
  auto out = run(make("TopK", {}, 11), {&x, &k});
  EXPECT_EQ(out[0].to_double_vector(), (std::vector<double>{3, 3, 2}));
  EXPECT_EQ(out[1].to_int64_vector(), (std::vector<int64_t>{0, 2, 3}));
  auto u = run(make("Unique", {{"sorted", Attribute::of_int(0)}}, 11), {&x});
  EXPECT_EQ(u[0].to_double_vector(), (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(u[1].to_int64_vector(), (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(u[2].to_int64_vector(), (std::vector<int64_t>{0, 1, 0, 2, 1}));
  EXPECT_EQ(u[3].to_int64_vector(), (std::vector<int64_t>{2, 2, 1}));
}

}  // namespace
}  // namespace collage

namespace collage {
namespace {

TEST(NativeIndex, UnpoolAndCol2ImBadInputs) {
  Tensor x = Tensor::from_vector<float>({1, 1, 1, 1}, {5});
  Tensor bad = Tensor::from_vector<int64_t>({1, 1, 1, 1}, {4});  // 2x2 output has 4 elements
  Node unpool =
      make("MaxUnpool",
           {{"kernel_shape", Attribute::of_ints({2, 2})}, {"strides", Attribute::of_ints({2, 2})}}, 11);
  EXPECT_EQ(kind_of(unpool, {&x, &bad}), ErrorKind::InvalidInput);
  Tensor cols(DType::Float32, {1, 4, 3});  // 3 blocks, but a 3x3 image with 2x2 blocks has 4
  Tensor image = Tensor::from_vector<int64_t>({2}, {3, 3});
  Tensor block = Tensor::from_vector<int64_t>({2}, {2, 2});
  EXPECT_EQ(kind_of(make("Col2Im", {}, 18), {&cols, &image, &block}), ErrorKind::InvalidModel);
}

}  // namespace
}  // namespace collage
