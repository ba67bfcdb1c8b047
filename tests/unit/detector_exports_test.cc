// torchvision's detectors as PyTorch exports them, narrow (tests/data/exports, written by its
// export_exports.py; expected outputs are ONNX Runtime's): imported with shapes decided as the model
// runs, tuned over every available backend, the placement keeps the detections ORT gives and the
// backbone's convolutions leave the native kernels, since their shapes are static.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/ir/tensor_compare.h"
#include "core/search/tuner.h"
#include "core/tensor_io/tensor_proto.h"

namespace collage {
namespace {

namespace fs = std::filesystem;

class DetectorExports : public ::testing::TestWithParam<std::string> {};

TEST_P(DetectorExports, TheTunedPlacementKeepsOrtsDetectionsWithTheBackboneOffTheNativeKernels) {
  const fs::path dir = fs::path(COLLAGE_EXPORTS_DIR) / ("test_" + GetParam());
  ImportOptions io;
  io.evaluator = native::node_evaluator();
  io.dynamic_shapes = true;
  Graph g = import_onnx_file((dir / "model.onnx").string(), io);

  TuneOptions options;
  options.measure.min_time_ms = 0.2;
  options.measure.min_samples = 3;
  options.measure.warmup_runs = 1;
  options.contests.rounds = 0;
  const std::vector<const BackendSpec*> backends = default_backends();
  TuneResult r = tune(g, backends, native::node_evaluator(), options, nullptr);

  size_t convs = 0, convs_off_native = 0;
  for (const PlacedKernel& k : r.placement.kernels)
    for (NodeId n : k.nodes)
      if (g.node(n).op_type == "Conv") {
        ++convs;
        if (k.backend != "native") ++convs_off_native;
      }
  ASSERT_GT(convs, 20u);
  // Any fp32 backend beside the native one runs convolutions (oneDNN does on both machine kinds). A
  // small layer may still measure fastest natively; a backbone left to the native kernels because
  // its shapes were taken for dynamic ones would put them all there.
  std::cout << GetParam() << ": " << convs_off_native << " of " << convs
            << " convolutions off the native kernels\n";
  if (backends.size() > 1) {
    EXPECT_GE(convs_off_native * 10, convs * 9) << convs_off_native << " of " << convs;
  }

  Executor placed(g, placement_steps(g, r.placement, backends, CompileOptions{}));
  std::vector<Tensor> outputs =
      placed.run({read_tensor_file((dir / "test_data_set_0" / "input_0.pb").string())});
  ASSERT_EQ(outputs.size(), 3u);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor want =
        read_tensor_file((dir / "test_data_set_0" / ("output_" + std::to_string(i) + ".pb")).string());
    ASSERT_EQ(outputs[i].shape(), want.shape())
        << g.value(g.outputs[i]).name;  // the same number of detections
    TensorComparison c = compare_tensors(outputs[i], want, Tolerance{1e-4, 1e-3, 0});
    EXPECT_TRUE(c.ok()) << g.value(g.outputs[i]).name << ": element " << c.first_mismatch << " is "
                        << c.got_value << ", ONNX Runtime gives " << c.want_value;
  }
}

INSTANTIATE_TEST_SUITE_P(Narrow, DetectorExports,
                         ::testing::Values("ssdlite_narrow", "fasterrcnn_narrow", "retinanet_narrow"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace collage
