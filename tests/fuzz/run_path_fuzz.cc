// The run path: import, then execute with the native backend on deterministic random
// inputs, as `collage run` does. Models over the harness's memory or compute budget
// are skipped after import (that they import is already checked by onnx_import).
#include <cstring>

#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "core/ir/graph_analysis.h"
#include "core/ir/random_inputs.h"
#include "core/runtime/executor.h"
#include "tests/fuzz/fuzz_harness.h"

namespace collage::fuzz {

namespace {
// Every value of the graph at once must fit (what a run could hold live at worst), and
// the FLOP count must be small enough to keep an execution well under libFuzzer's timeout.
constexpr double kRunBytes = 64.0 * (1 << 20);
constexpr double kRunFlops = 5e7;

bool small_enough(const Graph& graph) {
  double bytes = 0, flops = 0;
  for (const Value& v : graph.values)
    if (!v.constant) bytes += static_cast<double>(shape_size(v.shape)) * dtype_size(v.dtype);
  for (NodeId n = 0; n < graph.num_nodes(); ++n) flops += node_cost(graph, n).flops;
  return bytes <= kRunBytes && flops <= kRunFlops;
}
}  // namespace

int fuzz_run_path(const uint8_t* data, size_t size) {
  return guarded("run_path", [&] {
    ImportOptions options;
    options.evaluator = native::node_evaluator();
    options.memory_budget_bytes = int64_t{64} << 20;
    std::string bytes(reinterpret_cast<const char*>(data), size);
    Graph graph = import_onnx_bytes(bytes, "/nonexistent-collage-fuzz", options);
    if (!small_enough(graph)) return;
    uint64_t seed = 1;
    for (size_t i = 0; i < size && i < 64; ++i) seed = seed * 131 + data[i];
    Executor executor(graph, native::native_steps(graph));
    executor.run(random_inputs(graph, seed));
  });
}

}  // namespace collage::fuzz

COLLAGE_FUZZ_TARGET(fuzz_run_path)
