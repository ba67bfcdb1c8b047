// Edge cases and bad-input errors of the native indexing, data-movement and
// resize kernels (ONNX's own cases run in the conformance runner).
#include <gtest/gtest.h>

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
