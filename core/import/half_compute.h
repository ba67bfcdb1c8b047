// Import stage 3 for float16/bfloat16 models: compute in float32.
//
// None of the CPU libraries we place on has half-precision kernels for this
// machine's ISA in the Debian versions we use (oneDNN 2.6 has no f16 CPU
// primitives; bf16 would lose precision on f16 data), so a half model placed as
// written could only run on the native backend. Like ONNX Runtime's CPU provider
// (which casts around ops lacking f16 kernels and removes the cast pairs), the
// graph computes in float32 and keeps the model's interface:
//  - half graph inputs stay half; one Cast to float32 feeds their consumers;
//  - half graph outputs stay half; a final Cast rounds them;
//  - an explicit Cast/CastLike to a half type stays (its rounding is the model's
//    intent) and is followed by a Cast back to float32 for its consumers;
//  - half constants become float32; every other half value becomes float32, and
//    ops that name a half output type (EyeLike, Random*, Bernoulli,
//    ConstantOfShape) name float32.
// Invariant after the pass: a half value is a graph input, a graph output or the
// output of a Cast, and only Casts consume half values.
#pragma once

#include "core/import/onnx_import.h"
#include "core/ir/graph.h"

namespace collage::import_detail {

// Returns the number of values lowered to float32 (0: the model has no half values).
int compute_half_in_float32(Graph& graph, ImportReport& report);

}  // namespace collage::import_detail
