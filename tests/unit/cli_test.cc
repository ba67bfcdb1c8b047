// Runs the real `collage` binary: bad input must give exit code 2 and one clear
// line on stderr, never a crash.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "cli_fixture.h"
#include "core/tensor_io/tensor_proto.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::CliResult;
using testing::CliTest;
using testing::OnnxTestModel;
namespace fs = std::filesystem;

std::string small_model() {
  OnnxTestModel m(13);
  m.input("x", {-1, 4});
  m.initializer("w", Tensor::from_vector<float>({4}, {1, -2, 3, -4}));
  m.node("Mul", {"x", "w"}, {"t"});
  m.node("Relu", {"t"}, {"y:out"});
  m.output("y:out");
  return m.bytes();
}

TEST_F(CliTest, InfoAndRunOnAValidModel) {
  std::string model = write("m.onnx", small_model());
  CliResult info = cli("info " + model + " --dim batch=3");
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("float32 [3,4]"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("Relu"), std::string::npos);

  Tensor x = Tensor::from_vector<float>({3, 4}, {1, 1, 1, 1, -1, -1, -1, -1, 2, 0, 2, 0});
  std::string xin = (dir_ / "x.pb").string();
  write_tensor_file(x, "x", xin);
  CliResult run = cli("run " + model + " --dim batch=3 --input x=" + xin + " --repeat 3 --output-dir " +
                      (dir_ / "out").string());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("median "), std::string::npos);
  EXPECT_NE(run.out.find(" ms, min "), std::string::npos);
  Tensor y = read_tensor_file((dir_ / "out" / "y_out.pb").string());  // ':' sanitised to '_'
  ASSERT_EQ(y.shape(), (Shape{3, 4}));
  std::vector<float> expect = {1, 0, 3, 0, 0, 2, 0, 4, 2, 0, 6, 0};  // relu(x * w)
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y.data<float>()[i], expect[static_cast<size_t>(i)]);
}

TEST_F(CliTest, HostileFilesExitTwo) {
  expect_bad_input("info " + write("empty.onnx", ""), "empty");
  std::string full = small_model();
  expect_bad_input("info " + write("trunc.onnx", full.substr(0, full.size() / 2)), "m");
  std::mt19937 rng(1);
  std::string junk(2048, '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  expect_bad_input("run " + write("junk.onnx", junk), "junk.onnx");
  expect_bad_input("info " + (dir_ / "missing.onnx").string(), "no such file");

  OnnxTestModel dangling(13);
  dangling.input("x", {4});
  dangling.node("Add", {"x", "nowhere"}, {"y"});
  dangling.output("y");
  expect_bad_input("info " + write("dangling.onnx", dangling.bytes()), "nowhere");

  OnnxTestModel cycle(13);
  cycle.input("x", {4});
  cycle.node("Add", {"x", "b"}, {"a"});
  cycle.node("Relu", {"a"}, {"b"});
  cycle.output("b");
  expect_bad_input("run " + write("cycle.onnx", cycle.bytes()), "cycle");

  OnnxTestModel absurd(13);
  absurd.input("x", {1 << 30, 1 << 30, 1 << 30});
  absurd.node("Relu", {"x"}, {"y"});
  absurd.output("y");
  expect_bad_input("run " + write("absurd.onnx", absurd.bytes()), "memory budget");
}

// What a mutation run of hostile models found: each is one clear line and exit 2.
TEST_F(CliTest, HostileModelsFoundByMutationExitTwo) {
  OnnxTestModel conv(17);
  conv.input("x", {1, 2, 8, 8});
  conv.initializer("w", Tensor(DType::Float32, {2, 2, 3, 3}));
  OnnxTestModel::attr_ints(conv.node("Conv", {"x", "w"}, {"y"}), "strides", {0, 0});
  conv.output("y");
  expect_bad_input("info " + write("stride0.onnx", conv.bytes()), "attribute strides has 0");

  OnnxTestModel big(17);
  big.input("x", {1 << 16, 1 << 16});
  big.node("Relu", {"x"}, {"y"});
  big.output("y");
  expect_bad_input("run " + write("big.onnx", big.bytes()) + " --memory-budget 1G", "memory budget");
  expect_bad_input("info " + write("big2.onnx", big.bytes()) + " --memory-budget 1X", "--memory-budget 1X");
}

TEST_F(CliTest, BadArgumentsExitTwo) {
  std::string model = write("m.onnx", small_model());
  expect_bad_input("run " + model + " --repeat zero", "--repeat");
  expect_bad_input("run " + model + " --frobnicate 3", "--frobnicate");
  expect_bad_input("run " + model + " --input nope=x.pb", "nope");
  expect_bad_input("run " + model + " --dim seq=4", "seq");
  expect_bad_input("run " + model + " --input x=" + (dir_ / "missing.pb").string(), "missing.pb");
  std::string wrong = (dir_ / "wrong.pb").string();
  write_tensor_file(Tensor(DType::Float32, {2, 2}), "x", wrong);
  expect_bad_input("run " + model + " --input x=" + wrong, "[1,4]");
  expect_bad_input("tune " + model + " --epsilon fast", "--epsilon");
  expect_bad_input("tune " + model + " --backends cuda", "cuda");
  expect_bad_input("tune " + model + " --pin nowhere=native", "nowhere");
  expect_bad_input("tune " + model + " --no-cost-db --pin 0=xnnpack",
                   "pinned to 'xnnpack'");  // Mul by a constant: no XNNPACK kernel
  expect_bad_input("run " + model + " --placement " + write("bad.json", "{\"format\": 3}"), "placement");
  EXPECT_EQ(cli("frobnicate").exit_code, 2);
}

}  // namespace
}  // namespace collage
