// onnxruntime: ONNX Runtime's CPU execution provider (its MLAS kernels) as one more backend of
// the mix. Candidates are single ops and fused groups (the TVM-style rule, as the native
// backend's), each compiled into a session of its own region model (ort_kernel.h). Without
// the library (ort_runtime.h) the backend is unavailable, saying why; its cost key holds the
// loaded library's version.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onnxruntime_backend();

}  // namespace collage
