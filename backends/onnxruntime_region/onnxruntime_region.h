// onnxruntime-region: ONNX Runtime as a graph-level backend. The refinement (core/search/refine.h)
// moves whole convex regions onto one ORT session each, where ORT's own graph optimizer fuses
// across the region (layouts, Conv+activation, attention); its seed "every kernel ORT can take
// goes to ORT" is the whole graph on ONNX Runtime, so the refined placement is measured
// against ORT alone. Single ops and small groups come from the op-level `onnxruntime` backend.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onnxruntime_region_backend();

}  // namespace collage
