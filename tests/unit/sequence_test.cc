// Sequences and optionals as values: typed by import (dynamic shapes only), run by the native
// kernels, compared item by item, written and read as SequenceProto/OptionalProto, carried by
// artifacts; misuse refused naming the node. Expected values are computed here from the inputs.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/ir/tensor_compare.h"
#include "core/runtime/artifact.h"
#include "onnx_test_model.h"
#include "temp_dir.h"

namespace collage {
namespace {

using testing::OnnxTestModel;
using testing::run_native;

Graph import_dynamic(const OnnxTestModel& m) {
  ImportOptions options;
  options.evaluator = native::node_evaluator();
  options.dynamic_shapes = true;
  return import_onnx_bytes(m.bytes(), ".", options);
}

Tensor iota(Shape shape) {
  Tensor t(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = static_cast<float>(i) * 0.5f - 1.0f;
  return t;
}

// x [3,4] split along axis 1 into widths 1 and 3, then: the count, the last part, and the
// parts joined again.
OnnxTestModel split_model() {
  OnnxTestModel model(17);
  model.input("x", {3, 4});
  model.initializer("widths", Tensor::from_vector<int64_t>({2}, {1, 3}));
  model.initializer("last", Tensor::scalar<int64_t>(-1));
  OnnxTestModel::attr_int(model.node("SplitToSequence", {"x", "widths"}, {"parts"}), "axis", 1);
  model.node("SequenceLength", {"parts"}, {"count"});
  model.node("SequenceAt", {"parts", "last"}, {"tail"});
  OnnxTestModel::attr_int(model.node("ConcatFromSequence", {"parts"}, {"joined"}), "axis", 1);
  for (const char* out : {"count", "tail", "joined"}) model.output(out);
  return model;
}

TEST(Sequences, SplitCountReadAndJoinAgain) {
  Graph g = import_dynamic(split_model());
  EXPECT_EQ(g.value(g.find_value("parts")).kind, ValueKind::Sequence);
  EXPECT_EQ(g.value(g.find_value("parts")).dtype, DType::Float32);
  EXPECT_FALSE(g.value(g.find_value("parts")).shape_known);
  Tensor x = iota({3, 4});
  std::vector<Tensor> out = run_native(g, {x});
  EXPECT_EQ(out[0].to_int64_vector(), std::vector<int64_t>{2});
  ASSERT_EQ(out[1].shape(), (Shape{3, 3}));
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(out[1].data<float>()[r * 3 + c], x.data<float>()[r * 4 + 1 + c]) << r << "," << c;
  ASSERT_EQ(out[2].shape(), x.shape());
  for (int64_t i = 0; i < x.size(); ++i) EXPECT_EQ(out[2].data<float>()[i], x.data<float>()[i]);
}

// [a, b] with c inserted at `pos`, then the first item erased, stacked on a new axis 0.
OnnxTestModel insert_model() {
  OnnxTestModel model(17);
  for (const char* name : {"a", "b", "c"}) model.input(name, {2});
  model.input("pos", {}, onnx::TensorProto::INT64);
  model.initializer("first", Tensor::scalar<int64_t>(0));
  model.node("SequenceConstruct", {"a", "b"}, {"ab"});
  model.node("SequenceInsert", {"ab", "c", "pos"}, {"abc"});
  model.node("SequenceErase", {"abc", "first"}, {"rest"});
  auto& stack = model.node("ConcatFromSequence", {"rest"}, {"y"});
  OnnxTestModel::attr_int(stack, "axis", 0);
  OnnxTestModel::attr_int(stack, "new_axis", 1);
  model.output("y");
  return model;
}

TEST(Sequences, InsertAndEraseAtPositionsAndAPositionOutsideIsAnInputError) {
  Graph g = import_dynamic(insert_model());
  const Tensor a = Tensor::from_vector<float>({2}, {1, 2}), b = Tensor::from_vector<float>({2}, {3, 4}),
               c = Tensor::from_vector<float>({2}, {5, 6});
  // pos 1: [a, c, b] -> [c, b]; pos -2 (= 0 of 2): [c, a, b] -> [a, b]; pos 2 (the end): [a, b, c] -> [b, c].
  const std::vector<std::pair<int64_t, std::vector<float>>> cases = {
      {1, {5, 6, 3, 4}}, {-2, {1, 2, 3, 4}}, {2, {3, 4, 5, 6}}};
  for (const auto& [pos, want] : cases) {
    std::vector<Tensor> out = run_native(g, {a, b, c, Tensor::scalar<int64_t>(pos)});
    ASSERT_EQ(out[0].shape(), (Shape{2, 2})) << pos;
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(out[0].data<float>()[i], want[i]) << pos << " " << i;
  }
  try {
    run_native(g, {a, b, c, Tensor::scalar<int64_t>(5)});
    FAIL() << "a position past the end ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("SequenceInsert"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("position 5 is outside a sequence of 2"), std::string::npos)
        << e.what();
  }
}

TEST(Sequences, StaticImportRefusesNamingTheValueAndTheWayOut) {
  try {
    testing::import_model(split_model());
    FAIL() << "a sequence imported with static shapes";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    // The kind of refusal the explorer answers by opening the model with dynamic shapes.
    EXPECT_NE(dynamic_cast<const ValueDependentShapeError*>(&e), nullptr);
    EXPECT_NE(std::string(e.what()).find("'parts' is a sequence"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--shapes dynamic"), std::string::npos) << e.what();
  }
}

TEST(Sequences, ATensorOpGivenASequenceIsRefusedNamingTheNode) {
  OnnxTestModel model(17);
  model.input("x", {2});
  model.node("SequenceConstruct", {"x"}, {"s"});
  model.node("Relu", {"s"}, {"y"});
  model.output("y");
  try {
    Graph g = import_dynamic(model);
    run_native(g, {Tensor::from_vector<float>({2}, {1, -1})});
    FAIL() << "Relu ran on a sequence";
  } catch (const Error& e) {
    EXPECT_TRUE(e.kind() == ErrorKind::InvalidModel || e.kind() == ErrorKind::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("Relu"), std::string::npos) << e.what();
  }
}

// An optional of `elem_type` holding nothing (Optional's TYPE_PROTO attribute).
void empty_optional(OnnxTestModel& model, const std::string& out, int elem_type) {
  auto& n = model.node("Optional", {}, {out});
  auto* a = n.add_attribute();
  a->set_name("type");
  a->set_type(onnx::AttributeProto::TYPE_PROTO);
  a->mutable_tp()->mutable_tensor_type()->set_elem_type(elem_type);
}

TEST(Optionals, AnEmptyOneHasNoElementAndReadingItIsAnInputError) {
  OnnxTestModel model(18);
  model.input("x", {2});
  empty_optional(model, "none", onnx::TensorProto::FLOAT);
  model.node("Optional", {"x"}, {"some"});
  model.node("OptionalHasElement", {"none"}, {"has_none"});
  model.node("OptionalHasElement", {"some"}, {"has_some"});
  model.node("OptionalGetElement", {"some"}, {"got"});
  for (const char* out : {"has_none", "has_some", "got"}) model.output(out);
  Graph g = import_dynamic(model);
  EXPECT_EQ(g.value(g.find_value("none")).kind, ValueKind::OptionalTensor);
  const Tensor x = Tensor::from_vector<float>({2}, {7, 8});
  std::vector<Tensor> out = run_native(g, {x});
  EXPECT_EQ(out[0].to_int64_vector(), std::vector<int64_t>{0});
  EXPECT_EQ(out[1].to_int64_vector(), std::vector<int64_t>{1});
  EXPECT_EQ(out[2].to_double_vector(), (std::vector<double>{7, 8}));

  OnnxTestModel bad(18);
  bad.input("x", {2});
  empty_optional(bad, "none", onnx::TensorProto::FLOAT);
  bad.node("OptionalGetElement", {"none"}, {"y"});
  bad.output("y");
  try {
    run_native(import_dynamic(bad), {x});
    FAIL() << "an empty optional gave an element";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("holds no value"), std::string::npos) << e.what();
  }
}

TEST(Sequences, ValueFilesAndComparisonsGoItemByItem) {
  testing::ScopedTempDir dir;
  const Tensor seq = Tensor::sequence(DType::Float32, {Tensor::from_vector<float>({2}, {1, 2}),
                                                       Tensor::from_vector<float>({1, 3}, {3, 4, 5})});
  const std::string seq_path = (dir.path() / "seq.pb").string(),
                    none_path = (dir.path() / "none.pb").string();
  write_tensor_file(seq, "seq", seq_path);
  write_tensor_file(Tensor::none(DType::Float32), "none", none_path);
  Tensor back = read_value_file(seq_path, ValueKind::Sequence, DType::Float32);
  EXPECT_TRUE(bitwise_equal(back, seq));
  EXPECT_TRUE(read_value_file(none_path, ValueKind::OptionalTensor, DType::Float32).is_none());
  // An empty OptionalProto read as a sequence (the protos share field 1, the name): an input
  // error or an empty sequence, never a crash or a made-up item.
  Tensor misread;
  try {
    misread = read_value_file(none_path, ValueKind::Sequence, DType::Float32);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
  }
  if (misread.defined()) {
    EXPECT_TRUE(misread.is_sequence() && misread.items().empty());
  }

  Tensor other = Tensor::sequence(DType::Float32, {Tensor::from_vector<float>({2}, {1, 2}),
                                                   Tensor::from_vector<float>({1, 3}, {3, 9, 5})});
  TensorComparison c = compare_tensors(other, seq, Tolerance{});
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.elements, 5u);
  EXPECT_EQ(c.mismatches, 1u);
  EXPECT_EQ(c.first_mismatch, 3);  // item 1, element 1: after item 0's two elements
  EXPECT_FALSE(bitwise_equal(other, seq));
  EXPECT_TRUE(compare_tensors(Tensor::sequence(DType::Float32, {}), seq, Tolerance{}).shape_mismatch);
}

TEST(Sequences, ArtifactsCarryTheValueKinds) {
  Graph g = import_dynamic(split_model());
  Artifact a = parse_artifact(serialize_artifact(native_artifact(g)), "test");
  EXPECT_EQ(a.graph.value(a.graph.find_value("parts")).kind, ValueKind::Sequence);
  const Tensor x = iota({3, 4});
  std::vector<Tensor> want = run_native(g, {x}), got = run_native(a.graph, {x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) EXPECT_TRUE(bitwise_equal(got[o], want[o])) << o;
}

}  // namespace
}  // namespace collage
