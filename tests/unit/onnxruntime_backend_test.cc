// backends/onnxruntime: ONNX Runtime as one more backend, loaded at run time. Without the
// library it is unavailable and says why (the CLI tests cover a missing and a too-old library);
// with it, its kernels agree with the native reference (SampleCandidates checks every one on
// the small samples), a region ORT refuses is an Unsupported candidate carrying ORT's message,
// and a kernel runs in the executor's buffers, again and again.
#include "backends/onnxruntime/onnxruntime_backend.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onnxruntime/ort_runtime.h"
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
