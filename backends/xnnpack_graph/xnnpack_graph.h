// xnnpack-graph: a graph-level backend. A whole region becomes one XNNPACK
// subgraph/runtime; activations stay NHWC inside it and are converted only at
// its boundary; XNNPACK applies its own fusions (clamps into convolutions).
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& xnnpack_graph_backend();

}  // namespace collage
