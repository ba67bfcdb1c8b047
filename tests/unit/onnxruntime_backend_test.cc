// backends/onnxruntime: ONNX Runtime as one more backend, loaded at run time. Without the
// library it is unavailable and says why (the CLI tests cover a missing and a too-old library);
// with it, its kernels agree with the native reference (SampleCandidates checks every one on
// the small samples), a region ORT refuses is an Unsupported candidate carrying ORT's message,
// a kernel runs in the executor's buffers, again and again, onnxruntime-serial's kernels
// start no thread of their own, a region stops OpenMP's idle workers before it runs, and every
// session allocates from one shared allocator.
#include "backends/onnxruntime/onnxruntime_backend.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onnxruntime/ort_allocator.h"
#include "backends/onnxruntime/ort_model.h"
#include "backends/onnxruntime/ort_runtime.h"
#include "backends/onnxruntime_region/onnxruntime_region.h"
#include "backends/onnxruntime_serial/onnxruntime_serial.h"
#include "backends/registry.h"

namespace collage {
namespace {

using namespace collage::testing;

TEST(OnnxRuntime, IsLoadedOrUnavailableWithTheReason) {
  const std::string why = unavailable_reason(onnxruntime_backend());
  EXPECT_EQ(why, ort::unavailable_reason());
  if (ort::runtime()) {
    EXPECT_EQ(why, "");
    EXPECT_FALSE(ort::runtime()->version.empty());
    EXPECT_NE(onnxruntime_backend().version.find(ort::runtime()->version), std::string::npos)
        << "the cost key names ORT's version";
    return;
  }
  EXPECT_NE(why.find("ONNX Runtime"), std::string::npos) << why;
  for (const BackendSpec* b : available_backends()) EXPECT_NE(b->name, "onnxruntime");
}

TEST(OnnxRuntime, RegionsMatchTheNativeReferenceRunAfterRun) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  Graph g = dense_model(4, 64, 48);
  std::vector<Tensor> values = reference_values(g);
  IndexSet all(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) all.add(i);
  for (int threads : {1, 2}) {
    CandidateCheck r = check_candidate(g, onnxruntime_backend(), all, values, 1e-4, 1e-5, threads);
    ASSERT_TRUE(r.supported);
    EXPECT_TRUE(r.mismatch.empty()) << r.mismatch;
  }
  // One kernel, run twice on fresh inputs: ORT reads the buffers it is handed each time.
  SubGraph sub = make_subgraph(g, all);
  std::unique_ptr<Kernel> kernel = onnxruntime_backend().compile(g, sub, CompileOptions{});
  for (uint64_t seed : {5, 6}) {
    std::vector<Tensor> v = reference_values(g, {}, seed);
    std::vector<const Tensor*> args;
    for (ValueId in : sub.inputs) args.push_back(&v[static_cast<size_t>(in)]);
    HeapAllocator alloc;
    std::vector<Tensor> got = kernel->run(args, alloc);
    const Tensor& want = v[static_cast<size_t>(sub.outputs[0])];
    ASSERT_EQ(got[0].shape(), want.shape());
    for (int64_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[0].data<float>()[i], want.data<float>()[i],
                  1e-4 + 1e-4 * std::fabs(want.data<float>()[i]));
  }
}

// x [2, 5, 16] -> MatMul + bias -> Softmax(softmax_axis) -> LayerNormalization -> * 0.5.
Graph rows_model(int64_t softmax_axis) {
  OnnxTestModel model(17);
  model.input("x", {2, 5, 16});
  model.initializer("w", random_tensor_f32({16, 12}, 31));
  model.initializer("b", random_tensor_f32({12}, 32));
  model.initializer("scale", random_tensor_f32({12}, 33));
  model.initializer("shift", random_tensor_f32({12}, 34));
  Tensor half(DType::Float32, {});
  half.data<float>()[0] = 0.5f;
  model.initializer("half", half);
  model.node("MatMul", {"x", "w"}, {"mm"});
  model.node("Add", {"mm", "b"}, {"mb"});
  OnnxTestModel::attr_int(model.node("Softmax", {"mb"}, {"sm"}), "axis", softmax_axis);
  OnnxTestModel::attr_int(model.node("LayerNormalization", {"sm", "scale", "shift"}, {"ln"}), "axis", -1);
  model.node("Mul", {"ln", "half"}, {"y"});
  model.output("y");
  return import_model(model);
}

// A row-wise region (its Softmax over the last axis, named as 2 of rank 3) runs at several
// threads as blocks of rows, each on one of OpenMP's threads; one over another axis cannot, and
// runs whole on ORT's own pool. Both agree with the native reference at every thread count.
TEST(OnnxRuntime, RowWiseRegionsRunAsBlocksOfRowsAndAgreeWithTheReference) {
  for (int64_t axis : {2, 1}) {
    Graph g = rows_model(axis);
    IndexSet all = all_nodes(g);
    EXPECT_EQ(ort::row_splittable(g, make_subgraph(g, all)), axis == 2) << "Softmax axis " << axis;
    if (!ort::runtime()) continue;
    std::vector<Tensor> values = reference_values(g);
    for (int threads : {1, 2, 3}) {
      CandidateCheck r = check_candidate(g, onnxruntime_backend(), all, values, 1e-5, 1e-5, threads);
      ASSERT_TRUE(r.supported) << r.mismatch;
      EXPECT_TRUE(r.mismatch.empty())
          << "Softmax axis " << axis << ", " << threads << " threads: " << r.mismatch;
    }
  }
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
}

size_t threads_of_this_process() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// onnxruntime-serial is onnxruntime's kernels with no pool: at 2 threads its session starts no
// worker (an onnxruntime kernel of a region that is not row-wise starts one), and it agrees with
// the native reference. It offers exactly onnxruntime's candidates, under ORT's version.
TEST(OnnxRuntime, SerialKernelsRunOnTheCallingThreadAlone) {
  const BackendSpec& serial = onnxruntime_serial_backend();
  EXPECT_EQ(serial.min_threads, 2);
  EXPECT_EQ(serial.version, onnxruntime_backend().version);
  EXPECT_EQ(unavailable_reason(serial), unavailable_reason(onnxruntime_backend()));
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  Graph g = rows_model(1);  // Softmax over axis 1: not row-wise, so onnxruntime uses ORT's pool
  IndexSet all = all_nodes(g);
  std::vector<Tensor> values = reference_values(g);
  CandidateCheck check = check_candidate(g, serial, all, values, 1e-5, 1e-5, 2);
  ASSERT_TRUE(check.supported) << check.mismatch;
  EXPECT_TRUE(check.mismatch.empty()) << check.mismatch;
  const SubGraph sub = make_subgraph(g, all);
  std::vector<const Tensor*> args;
  for (ValueId in : sub.inputs) args.push_back(&values[static_cast<size_t>(in)]);
  CompileOptions two;
  two.threads = 2;
  auto compile_and_run = [&](const BackendSpec& b) {
    std::unique_ptr<Kernel> k = b.compile(g, sub, two);
    HeapAllocator alloc;
    k->run(args, alloc);
    return k;
  };
  auto warm = compile_and_run(serial);  // ORT's environment exists from here on
  const size_t before = threads_of_this_process();
  auto serial_kernel = compile_and_run(serial);
  EXPECT_EQ(threads_of_this_process(), before) << "a serial kernel started a thread";
  auto pooled_kernel = compile_and_run(onnxruntime_backend());
  EXPECT_GT(threads_of_this_process(), before) << "onnxruntime at 2 threads started no pool worker";
}

// OpenMP's workers, idle after an OpenMP kernel, spin on the cores a region's pool then needs: a
// region at 2 threads stops them before it runs (the next OpenMP kernel starts them again), while
// an op-level kernel, whose blocks of rows run on OpenMP's own threads, leaves them be.
TEST(OnnxRuntime, ARegionAtTwoThreadsStopsOpenMPsIdleWorkersFirst) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  Graph g = rows_model(2);  // row-wise: the op-level kernel runs as blocks on OpenMP's threads
  IndexSet all = all_nodes(g);
  std::vector<Tensor> values = reference_values(g);
  const SubGraph sub = make_subgraph(g, all);
  std::vector<const Tensor*> args;
  for (ValueId in : sub.inputs) args.push_back(&values[static_cast<size_t>(in)]);
  CompileOptions two;
  two.threads = 2;
  HeapAllocator alloc;
  std::unique_ptr<Kernel> region = onnxruntime_region_backend().compile(g, sub, two);
  std::unique_ptr<Kernel> op_level = onnxruntime_backend().compile(g, sub, two);
  region->run(args, alloc);  // its pool exists from here on
  auto openmp_kernel = [] {
    int team = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    team = omp_get_num_threads();
    return team;
  };
  ASSERT_EQ(openmp_kernel(), 2);
  const size_t with_workers = threads_of_this_process();
  op_level->run(args, alloc);
  EXPECT_EQ(threads_of_this_process(), with_workers) << "an op-level kernel stopped OpenMP's workers";
  region->run(args, alloc);
  // The stopped worker leaves the process as it is released; a bounded wait for the kernel's view.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (threads_of_this_process() >= with_workers && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(threads_of_this_process(), with_workers - 1)
      << "OpenMP's idle worker outlived the region's start";
  EXPECT_EQ(openmp_kernel(), 2);
  EXPECT_EQ(threads_of_this_process(), with_workers) << "the next OpenMP kernel has its workers again";
}

// Every session allocates from the one allocator registered with the environment: blocks of 1 MiB
// and up are whole 2 MiB extents, a freed one serves the next request of its extent, and a region
// whose intermediate tensor is 2 MiB gets it there.
TEST(OnnxRuntime, SessionsShareOneAllocatorOfHugePageExtents) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  const char* off = std::getenv("COLLAGE_ORT_SHARED_ALLOCATOR");
  if (off && std::string(off) == "0") GTEST_SKIP() << "COLLAGE_ORT_SHARED_ALLOCATOR=0";
  ASSERT_TRUE(ort::runtime()->env_allocator) << "ORT " << ort::runtime()->version << " took no allocator";
  ort::OrtAllocator* a = ort::shared_allocator(ort::runtime()->cpu);
  constexpr size_t kMiB = size_t{1} << 20;
  void* small = a->alloc(a, 100);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 64, 0u);
  void* big = a->alloc(a, 3 * kMiB);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % (2 * kMiB), 0u);
  static_cast<char*>(big)[4 * kMiB - 1] = 1;  // the whole 4 MiB extent is the block's
  a->free(a, big);
  const size_t extents = ort::shared_allocator_extents();
  void* again = a->alloc(a, 4 * kMiB - 1);  // a kept 4 MiB extent: `big`, or one an earlier session freed
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(ort::shared_allocator_extents(), extents) << "a new extent was made where a kept one fits";
  a->free(a, again);
  a->free(a, small);

  // x [512, 256] -> MatMul -> h [512, 1024] (2 MiB, ORT's own) -> Relu -> y.
  OnnxTestModel model(17);
  model.input("x", {512, 256});
  model.initializer("w", random_tensor_f32({256, 1024}, 41));
  model.node("MatMul", {"x", "w"}, {"h"});
  model.node("Relu", {"h"}, {"y"});
  model.output("y");
  Graph g = import_model(model);
  IndexSet all(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) all.add(i);
  const size_t before = ort::shared_allocator_extents();
  std::vector<Tensor> values = reference_values(g);
  CandidateCheck r = check_candidate(g, onnxruntime_backend(), all, values, 1e-4, 1e-4, 1);
  ASSERT_TRUE(r.supported);
  EXPECT_TRUE(r.mismatch.empty()) << r.mismatch;
  EXPECT_GT(ort::shared_allocator_extents(), before) << "the session allocated its 2 MiB tensor elsewhere";
}

// A node of an opset ORT does not know: compiling its region is Unsupported with ORT's words.
TEST(OnnxRuntime, ARegionOrtRefusesIsUnsupportedWithOrtsMessage) {
  if (!ort::runtime()) GTEST_SKIP() << "no ONNX Runtime library: " << ort::unavailable_reason();
  Graph g = dense_model(2, 8, 4);
  for (Node& n : g.nodes) n.opset = 999;
  IndexSet first(g.nodes.size());
  first.add(0);
  try {
    onnxruntime_backend().compile(g, make_subgraph(g, first), CompileOptions{});
    ADD_FAILURE() << "ORT accepted opset 999";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("onnxruntime: the region was refused: ", 0), 0u) << what;
    EXPECT_GT(what.size(), std::string("onnxruntime: the region was refused: ").size() + 10) << what;
  }
}

}  // namespace
}  // namespace collage
