// A sub-graph run by ONNX Runtime: one InferenceSession over the region's own ONNX model
// (ort_model.h), graph optimizations at their highest level inside it. The executor's buffers
// are handed to ORT as they are, inputs and preallocated outputs alike: nothing is copied at
// the boundary. Threads: the session's own intra-op pool of `threads`; with `spin` false its
// workers block as soon as they are idle, leaving the cores to the OpenMP pool the other
// backends' kernels run on. Spinning pays where ORT runs long stretches of small parallel ops
// (EfficientNet-B0 whole at 2 threads: 6.4 ms spinning, 8.1 ms blocking, ORT alone 6.7 ms), so
// the graph-level backend spins and the op-level one does not; measured fitness judges the mix.
#pragma once

#include <memory>

#include "backends/onnxruntime/ort_model.h"
#include "core/ir/kernel.h"
#include "core/ir/subgraph.h"

namespace collage::ort {

// Throws Error(Unsupported) naming ORT's message when ORT refuses the region (or is not loaded).
// `int8`: which of the region's MatMuls run in dynamic int8 (ort_model.h).
std::unique_ptr<Kernel> compile_region(const Graph& graph, const SubGraph& sub, int threads, bool spin,
                                       Int8 int8 = Int8::None);

// Whether ORT's CPU execution provider is offered a node: default-domain ops whose tensors are
// of the types its CPU kernels take; ORT itself decides at compile time (a refusal is an
// invalid candidate with its reason).
bool offered(const Graph& graph, const Node& node);

}  // namespace collage::ort
