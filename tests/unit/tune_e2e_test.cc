// End to end: tune each small sample over all backends, then run the placement
// and compare with the native reference.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/search/tuner.h"
#include "resources/samples/zoo.h"
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

}  // namespace
}  // namespace collage
