// Hostile models and tensors found by fuzzing (tests/fuzz/): each is refused with a
// collage::Error naming the node or tensor, never a crash or an Internal error.
#include <gtest/gtest.h>

#include "core/tensor_io/tensor_proto.h"
#include "tests/unit/onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

// Expects an InvalidModel error whose message contains every one of `parts`.
template <typename F>
void expect_invalid_model(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidModel) << e.what();
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(ImportHardening, ConvStrideZeroIsRefusedBeforeOnnxInference) {
  OnnxTestModel m(13);
  m.input("x", {1, 1, 4, 4});
  m.initializer("w", Tensor(DType::Float32, {1, 1, 2, 2}));
  auto& conv = m.node("Conv", {"x", "w"}, {"y"});
  OnnxTestModel::attr_ints(conv, "strides", {0, 1});
  m.output("y");
  expect_invalid_model([&] { import_model(m); }, {"Conv_y", "strides", "positive"});
}

TEST(ImportHardening, MaxPoolDilationZeroIsRefused) {
  OnnxTestModel m(13);
  m.input("x", {1, 1, 4, 4});
  auto& pool = m.node("MaxPool", {"x"}, {"y"});
  OnnxTestModel::attr_ints(pool, "kernel_shape", {2, 2});
  OnnxTestModel::attr_ints(pool, "dilations", {1, 0});
  m.output("y");
  expect_invalid_model([&] { import_model(m); }, {"MaxPool_y", "dilations"});
}

TEST(ImportHardening, DanglingInputIsRefusedBeforeOnnxInference) {
  OnnxTestModel m(13);
  m.input("x", {2, 3});
  m.node("Shape", {"missing"}, {"s"});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  m.output("s");
  expect_invalid_model([&] { import_model(m); }, {"Shape_s", "'missing'", "not produced"});
}

TEST(ImportHardening, MissingRequiredAttributeIsRefusedBeforeOnnxInference) {
  OnnxTestModel m(13);
  m.input("x", {2, 3});
  m.node("Cast", {"x"}, {"y"});  // no 'to'
  m.output("y");
  expect_invalid_model([&] { import_model(m); }, {"Cast_y", "required attribute 'to'"});
}

TEST(ImportHardening, MoreOutputsThanTheOpHasAreRefused) {
  OnnxTestModel m(13);
  m.input("x", {2, 3});
  m.node("Relu", {"x"}, {"y", "extra"});
  m.output("y");
  expect_invalid_model([&] { import_model(m); }, {"Relu_y", "2 outputs", "at most 1"});
}

// Opset 18 is newer than libonnx's schemas: its newest schema (17) still bounds the outputs.
TEST(ImportHardening, MoreOutputsThanTheFoldedOpComputesAreRefused) {
  OnnxTestModel m(18);
  m.input("x", {3});
  m.initializer("c", Tensor::from_vector<float>({3}, {1.f, -2.f, 3.f}));
  m.node("Relu", {"c"}, {"r", "extra"});
  m.node("Add", {"x", "r"}, {"y"});
  m.output("y");
  expect_invalid_model([&] { import_model(m); }, {"Relu_r", "opset 18) has 2 outputs", "at most 1"});
}

TEST(ImportHardening, TensorDimsWithoutDataAreRefusedBeforeAllocating) {
  onnx::TensorProto proto;
  proto.set_name("big");
  proto.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1 << 20, 1 << 20, 1 << 10}) proto.add_dims(d);  // 2^50 elements, no data
  expect_invalid_model([&] { tensor_from_proto(proto, "."); }, {"'big'", "needs"});
  proto.set_raw_data(std::string(8, '\0'));
  expect_invalid_model([&] { tensor_from_proto(proto, "."); }, {"'big'", "bytes of data"});
}

TEST(ImportHardening, TypedDataStillLoads) {
  onnx::TensorProto proto;
  proto.set_name("t");
  proto.set_data_type(onnx::TensorProto::INT64);
  proto.add_dims(3);
  for (int64_t v : {4, 5, 6}) proto.add_int64_data(v);
  Tensor t = tensor_from_proto(proto, ".");
  ASSERT_EQ(t.size(), 3);
  EXPECT_EQ(t.data<int64_t>()[2], 6);
}

}  // namespace
}  // namespace collage
