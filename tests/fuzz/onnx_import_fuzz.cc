// ONNX import: parse, normalisation, shape inference and constant folding on arbitrary bytes,
// with static shapes and again with shapes decided as the model runs (bodies, sequences).
#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "tests/fuzz/fuzz_harness.h"

namespace collage::fuzz {

int fuzz_onnx_import(const uint8_t* data, size_t size) {
  return guarded("onnx_import", [&] {
    ImportOptions options;
    options.evaluator = native::node_evaluator();
    // The product's default budget is a quarter of RAM; libFuzzer's RSS limit is 2 GB.
    options.memory_budget_bytes = int64_t{256} << 20;
    std::string bytes(reinterpret_cast<const char*>(data), size);
    // No base dir with files in it: external data references must fail cleanly.
    for (bool dynamic : {false, true}) {
      options.dynamic_shapes = dynamic;
      try {
        import_onnx_bytes(bytes, "/nonexistent-collage-fuzz", options);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::Internal) throw;
      }
    }
  });
}

}  // namespace collage::fuzz

COLLAGE_FUZZ_TARGET(fuzz_onnx_import)
