// onednn-region: a graph-level oneDNN backend. A convex region becomes one chain
// of oneDNN primitives created with format_tag::any, so activations stay in the
// blocked layout the primitives pick (nChw16c on AVX-512) from one primitive to
// the next. Reorders happen only where a value enters or leaves the region, or
// where two primitives disagree on a layout.
//
// Inside the kernel: Conv+BatchNormalization are folded; element-wise ops and a
// residual Add (full-shape operand read in the convolution's own layout) become
// post-ops of the producing convolution when it is their only reader; weights
// are reordered once at compile time; intermediate buffers are planned by
// liveness into a few arenas owned by the kernel and reused between runs.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& onednn_region_backend();

}  // namespace collage
