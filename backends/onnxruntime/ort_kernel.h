// A sub-graph run by ONNX Runtime: one InferenceSession over the region's own ONNX model
// (ort_model.h), graph optimizations at their highest level inside it. The executor's buffers
// are handed to ORT as they are, inputs and preallocated outputs alike: nothing is copied at
// the boundary. Threads (Pool): the session's own intra-op pool of `threads`, whose workers
// block as soon as they are idle (Blocking), leaving the cores to the OpenMP pool the other
// backends' kernels run on, or spin while the region runs (Spinning). Spinning pays where ORT
// runs long stretches of small parallel ops (EfficientNet-B0 whole at 2 threads: 6.4 ms
// spinning, 8.1 ms blocking, ORT alone 6.7 ms), so the graph-level backends spin. RowBlocks
// gives the session no pool at all: a row_splittable region (ort_model.h) runs as `threads`
// blocks of rows at once, each on one of OpenMP's threads, so that nothing waits for a second
// pool to wake between the OpenMP kernels around it; any other region falls back to Blocking.
// SpinningBetweenRuns is Spinning for a region that is a run's only kernel: no other pool
// wants the cores between its runs, so its workers keep spinning after Run returns, as ORT
// alone does, and back-to-back runs do not each wake them.
#pragma once

#include <memory>

#include "backends/onnxruntime/ort_model.h"
#include "core/ir/kernel.h"
#include "core/ir/subgraph.h"

namespace collage::ort {

enum class Pool { Blocking, Spinning, SpinningBetweenRuns, RowBlocks };

// Spinning, or SpinningBetweenRuns for a placement's only kernel.
inline Pool spinning(bool sole_kernel) { return sole_kernel ? Pool::SpinningBetweenRuns : Pool::Spinning; }

// Throws Error(Unsupported) naming ORT's message when ORT refuses the region (or is not loaded).
// `int8`: which of the region's MatMuls run in dynamic int8 (ort_model.h); with RowBlocks each
// block quantizes its own rows (its own scale), which is what the measured accuracy then holds.
std::unique_ptr<Kernel> compile_region(const Graph& graph, const SubGraph& sub, int threads, Pool pool,
                                       Int8 int8 = Int8::None);

// Whether ORT's CPU execution provider is offered a node: default-domain ops whose tensors are
// of the types its CPU kernels take; ORT itself decides at compile time (a refusal is an
// invalid candidate with its reason).
bool offered(const Graph& graph, const Node& node);

}  // namespace collage::ort
