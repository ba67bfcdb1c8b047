// Shapes decided as the model runs (ImportOptions::dynamic_shapes): import leaves them unknown
// instead of refusing, the executor takes whatever the kernels give (a memory plan traced on
// smaller values included), and only backends that take such shapes are offered their nodes: the
// native kernels, and OpenBLAS for a Gemm or MatMul whose rows the run decides (a detector's box head).
// Expected values are computed here from the inputs.
#include <gtest/gtest.h>

#include "backends/blas/blas_spec.h"
#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "backends/onednn/onednn_spec.h"
#include "core/runtime/executor.h"
#include "core/runtime/memory_plan.h"
#include "core/tuning/candidates.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::OnnxTestModel;

// y = Relu(x[NonZero(x > 0)] * 2) + 1: the kept count depends on the data.
OnnxTestModel kept_model() {
  OnnxTestModel model(17);
  model.input("x", {8});
  model.initializer("zero", Tensor::scalar<float>(0.0f));
  model.initializer("two", Tensor::scalar<float>(2.0f));
  model.initializer("one", Tensor::scalar<float>(1.0f));
  model.initializer("axis0", Tensor::from_vector<int64_t>({1}, {0}));
  model.node("Greater", {"x", "zero"}, {"pos"});
  model.node("NonZero", {"pos"}, {"idx"});
  model.node("Squeeze", {"idx", "axis0"}, {"flat"});
  model.node("Gather", {"x", "flat"}, {"kept"});
  model.node("Mul", {"kept", "two"}, {"m"});
  model.node("Relu", {"m"}, {"r"});
  model.node("Add", {"r", "one"}, {"y"});
  model.output("y");
  return model;
}

Graph import_dynamic(const OnnxTestModel& m) {
  ImportOptions options;
  options.evaluator = native::node_evaluator();
  options.dynamic_shapes = true;
  return import_onnx_bytes(m.bytes(), ".", options);
}

std::vector<float> expected(const std::vector<float>& x) {
  std::vector<float> y;
  for (float v : x)
    if (v > 0) y.push_back(v * 2 + 1);
  return y;
}

TEST(DynamicShapes, StaticImportRefusesAndDynamicImportLeavesTheShapesToTheRun) {
  EXPECT_THROW(testing::import_model(kept_model()), ValueDependentShapeError);
  Graph g = import_dynamic(kept_model());
  EXPECT_FALSE(g.value(g.outputs[0]).shape_known);
  EXPECT_EQ(g.value(g.outputs[0]).dtype, DType::Float32);
  Executor ex(g, native::native_steps(g));
  for (const std::vector<float>& x :
       {std::vector<float>{1, -2, 3, 0, 5, -6, 7, 8}, {-1, -1, -1, 4, -1, -1, -1, -1}}) {
    std::vector<Tensor> out = ex.run({Tensor::from_vector<float>({8}, x)});
    const std::vector<float> want = expected(x);
    ASSERT_EQ(out[0].shape(), (Shape{static_cast<int64_t>(want.size())}));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(out[0].data<float>()[i], want[i]);
  }
}

// A plan traced where one value is kept, run where all eight are: the larger buffers go to the
// heap, nothing overflows its planned slot, and the values are right.
TEST(DynamicShapes, AMemoryPlanTracedOnSmallerValuesStillRunsLargerOnes) {
  Graph g = import_dynamic(kept_model());
  Executor ex(g, native::native_steps(g));
  const std::vector<float> few = {-1, -1, 2, -1, -1, -1, -1, -1}, all = {1, 2, 3, 4, 5, 6, 7, 8};
  ex.use_memory_plan(plan_memory(ex.trace_buffers({Tensor::from_vector<float>({8}, few)})));
  std::vector<Tensor> out = ex.run({Tensor::from_vector<float>({8}, all)});
  const std::vector<float> want = expected(all);
  ASSERT_EQ(out[0].size(), 8);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(out[0].data<float>()[i], want[i]);
}

TEST(DynamicShapes, ANodeTouchingADynamicShapeIsOfferedAloneAndOnlyToBackendsThatTakeThem) {
  Graph g = import_dynamic(kept_model());
  const IndexSet dynamic = nodes_with_dynamic_shapes(g);
  EXPECT_GT(dynamic.popcount(), 0u);
  size_t offered = 0;
  for (const Candidate& c : enumerate_candidates(g, {&native_backend(), &onednn_backend()})) {
    if (!c.nodes.intersects(dynamic)) continue;
    ++offered;
    EXPECT_EQ(c.backend, "native") << c.label;
    EXPECT_EQ(c.nodes.popcount(), 1u) << c.label;
  }
  EXPECT_EQ(offered, dynamic.popcount()) << "each such node still has its native kernel";
}

// rows = X's rows whose largest element is positive (their count decided by the data); then
// y = Gemm(rows, W^T, C) and z = MatMul(rows, B), as a detector's box head runs on its proposals.
OnnxTestModel kept_rows_model() {
  OnnxTestModel model(17);
  model.input("x", {5, 4});
  model.initializer("zero", Tensor::scalar<float>(0.0f));
  model.initializer("axis0", Tensor::from_vector<int64_t>({1}, {0}));
  model.initializer("w", Tensor::from_vector<float>({3, 4}, {1, 2, 3, 4, -1, 0, 1, 0, 0.5f, 0.5f, -2, 1}));
  model.initializer("c", Tensor::from_vector<float>({3}, {0.25f, -1, 2}));
  model.initializer("b", Tensor::from_vector<float>({4, 2}, {1, -1, 2, 0, 0, 3, -0.5f, 1}));
  auto& peak = model.node("ReduceMax", {"x"}, {"peak"});
  OnnxTestModel::attr_ints(peak, "axes", {1});
  OnnxTestModel::attr_int(peak, "keepdims", 0);
  model.node("Greater", {"peak", "zero"}, {"pos"});
  model.node("NonZero", {"pos"}, {"idx"});
  model.node("Squeeze", {"idx", "axis0"}, {"flat"});
  model.node("Gather", {"x", "flat"}, {"rows"});
  auto& gemm = model.node("Gemm", {"rows", "w", "c"}, {"y"});
  OnnxTestModel::attr_int(gemm, "transB", 1);
  OnnxTestModel::attr_float(gemm, "alpha", 2.0f);
  model.node("MatMul", {"rows", "b"}, {"z"});
  model.output("y");
  model.output("z");
  return model;
}

TEST(DynamicShapes, OpenBlasRunsAGemmAndAMatMulWhoseRowsTheRunDecides) {
  Graph g = import_dynamic(kept_rows_model());
  auto single = [&](NodeId n) {
    IndexSet s(g.nodes.size());
    s.add(n);
    return make_subgraph(g, s);
  };
  std::map<std::string, NodeId> offered;  // op -> node, blas's single-node candidates
  for (const Candidate& c : enumerate_candidates(g, {&blas_backend()}))
    if (c.nodes.popcount() == 1)
      offered[g.node(static_cast<NodeId>(c.nodes.indices()[0])).op_type] =
          static_cast<NodeId>(c.nodes.indices()[0]);
  ASSERT_TRUE(offered.count("Gemm") && offered.count("MatMul"));
  const std::vector<float> w = {1, 2, 3, 4, -1, 0, 1, 0, 0.5f, 0.5f, -2, 1}, c = {0.25f, -1, 2},
                           b = {1, -1, 2, 0, 0, 3, -0.5f, 1};
  HeapAllocator heap;
  for (int64_t kept : {3, 0, 1}) {
    std::vector<float> rows;
    for (int64_t r = 0; r < kept; ++r)
      for (int k = 0; k < 4; ++k) rows.push_back(static_cast<float>(r * 4 + k) * 0.5f - 1);
    const Tensor x = Tensor::from_vector<float>({kept, 4}, rows);
    for (const char* op : {"Gemm", "MatMul"}) {
      const NodeId n = offered.at(op);
      std::unique_ptr<Kernel> kernel = blas_backend().compile(g, single(n), CompileOptions{});
      const Tensor* args[] = {&x};
      std::vector<Tensor> out = kernel->run(args, heap);
      const int64_t cols = std::string(op) == "Gemm" ? 3 : 2;
      ASSERT_EQ(out[0].shape(), (Shape{kept, cols})) << op;
      for (int64_t r = 0; r < kept; ++r)
        for (int64_t j = 0; j < cols; ++j) {
          float want = 0;
          for (int k = 0; k < 4; ++k)
            want += rows[static_cast<size_t>(r * 4 + k)] *
                    (cols == 3 ? w[static_cast<size_t>(j * 4 + k)] : b[static_cast<size_t>(k * 2 + j)]);
          if (cols == 3) want = 2 * want + c[static_cast<size_t>(j)];
          EXPECT_FLOAT_EQ(out[0].data<float>()[r * cols + j], want) << op << " row " << r << " col " << j;
        }
    }
  }
  // Rows that do not fit the weight are a clear error, not a read past the input.
  const Tensor wrong = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::unique_ptr<Kernel> gemm = blas_backend().compile(g, single(offered.at("Gemm")), CompileOptions{});
  const Tensor* args[] = {&wrong};
  EXPECT_THROW(gemm->run(args, heap), Error);
}

}  // namespace
}  // namespace collage
