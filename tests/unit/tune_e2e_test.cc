// End to end: tune each small sample over all backends, then run the placement
// and compare with the native reference.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/search/tuner.h"
#include "resources/samples/zoo.h"
#include "tests/unit/backend_test_models.h"
#include "tests/unit/temp_dir.h"

namespace collage {
namespace {

TEST(TuneEndToEnd, PlacementsOfEverySampleMatchTheNativeReference) {
  testing::ScopedTempDir dir("collage_e2e");
  for (const auto& info : samples::sample_list()) {
    if (!info.small) continue;
    auto path = dir.path() / (info.name + ".onnx");
    samples::build_sample(info.name).save(path.string());
    ImportOptions io;
    io.evaluator = native::node_evaluator();
    Graph g = import_onnx_file(path.string(), io);
    std::filesystem::remove(path);
    TuneOptions options;
    options.measure.min_time_ms = 0.5;
    options.measure.min_samples = 3;
    options.measure.warmup_runs = 1;
    TuneResult r = tune(g, all_backends(), native::node_evaluator(), options, nullptr);
    ASSERT_FALSE(r.placement.kernels.empty());
    std::set<std::string> used;
    for (const PlacedKernel& k : r.placement.kernels) used.insert(k.backend);
    Executor placed(g, placement_steps(g, r.placement, all_backends(), CompileOptions{}));
    Executor reference(g, native::native_steps(g));
    auto got = placed.run(r.inputs), want = reference.run(r.inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < got.size(); ++o) {
      auto a = got[o].to_double_vector(), b = want[o].to_double_vector();
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 1e-4 + 1e-3 * std::fabs(b[i]))
            << info.name << " output " << o << "[" << i << "]";
    }
    // JSON round trip keeps an executable placement.
    Placement again = placement_from_json(placement_to_json(r.placement, g), g, all_backends());
    EXPECT_EQ(again.kernels.size(), r.placement.kernels.size());
    std::cout << info.name << ": " << r.placement.kernels.size() << " kernels on " << used.size()
              << " backends, " << r.candidates.size() << " candidates\n";
  }
}

// A backend of min_threads 2 (a serial variant) repeats its library at 1 thread: a tune of
// 1 thread offers none of its candidates, a tune of 2 every one its library has.
TEST(TuneEndToEnd, ABackendTakesPartFromItsMinThreadsOn) {
  BackendSpec twin = native_backend();
  twin.name = "native-twin";
  twin.min_threads = 2;
  Graph g = testing::dense_model(2, 16, 8);
  for (int threads : {1, 2}) {
    TuneOptions options;
    options.measure.threads = threads;
    options.measure.min_time_ms = 0.1;
    options.measure.min_samples = 3;
    options.measure.warmup_runs = 1;
    TuneResult r = tune(g, {&native_backend(), &twin}, native::node_evaluator(), options, nullptr);
    size_t natives = 0, twins = 0;
    for (const Candidate& c : r.candidates) (c.backend == twin.name ? twins : natives) += 1;
    ASSERT_GT(natives, 0u);
    EXPECT_EQ(twins, threads >= twin.min_threads ? natives : 0u) << threads << " thread(s)";
  }
  TuneOptions pinned;
  pinned.pins.pinned[0] = twin.name;
  try {
    tune(g, {&native_backend(), &twin}, native::node_evaluator(), pinned, nullptr);
    ADD_FAILURE() << "a pin to a backend not taking part at 1 thread was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("takes part only at 2 threads or more"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(backends_for_threads({&native_backend(), &twin}, 1).size(), 1u);
  EXPECT_EQ(backends_for_threads({&native_backend(), &twin}, 3).size(), 2u);
}

}  // namespace
}  // namespace collage
