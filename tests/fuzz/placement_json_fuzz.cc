// Placement JSON import (versions 1 and 2), validated against a fixed model
// (resources/models/resnet_small.onnx).
#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "core/import/onnx_import.h"
#include "core/search/placement.h"
#include "core/search/placement_buckets.h"
#include "tests/fuzz/fuzz_harness.h"

namespace collage::fuzz {

namespace {
const Graph& fixed_graph() {
  static const Graph graph = [] {
    ImportOptions options;
    options.evaluator = native::node_evaluator();
    return import_onnx_file(COLLAGE_FUZZ_MODEL, options);
  }();
  return graph;
}
}  // namespace

int fuzz_placement_json(const uint8_t* data, size_t size) {
  const Graph& graph = fixed_graph();
  return guarded("placement_json", [&] {
    std::string text(reinterpret_cast<const char*>(data), size);
    // A version-2 file (a placement per shape bucket): each bucket's document against the model.
    for (const PlacementFileBucket& bucket : read_placement_buckets(text))
      placement_from_json(bucket.placement_json, graph, {&native_backend()});
  });
}

}  // namespace collage::fuzz

COLLAGE_FUZZ_TARGET(fuzz_placement_json)
