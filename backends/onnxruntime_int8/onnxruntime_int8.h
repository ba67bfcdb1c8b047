// onnxruntime-int8: ONNX Runtime's dynamic int8 fully connected layers (MLAS's DynamicQuantizeMatMul,
// VNNI where the CPU has it) as a reduced-precision backend beside onednn-int8: it takes part only
// under `tune --accuracy`, and the search chooses between the two (and fp32) by measured cost.
// A candidate is a MatMul of constant [K, N] weights with its bias Add and a Relu or residual Add,
// run as one ONNX Runtime session whose MatMul is written in dynamic int8 with the same 7-bit
// per-column weights as onednn-int8 (core/backend_api/int8_weights.h) and `export --qdq`, so the
// QDQ model an ORT user runs computes what the placement computed. Unavailable without the library.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onnxruntime_int8_backend();

}  // namespace collage
