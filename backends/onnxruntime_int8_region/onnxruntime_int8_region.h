// onnxruntime-int8-region: the graph-level form of onnxruntime-int8. A region is one spinning
// ONNX Runtime session (as onnxruntime-region) in which every MatMul of constant [K, N] weights
// runs in dynamic int8 with the shared 7-bit weights (core/backend_api/int8_weights.h), the rest
// in fp32. Its refine seed, the whole graph on it, is what ORT computes on the placement's
// `export --qdq` model when every such MatMul is int8; one session instead of one per layer
// is what keeps a second thread busy between layers. Reduced precision: it takes part only
// under `tune --accuracy`, and the refined placement is verified under that budget.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onnxruntime_int8_region_backend();

}  // namespace collage
