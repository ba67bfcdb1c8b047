// ONNX Resize as oneDNN's resampling primitive, claimed only where oneDNN's index
// arithmetic (scale = output / input extent, half-pixel centres, edge clamping) is
// exactly ONNX's: float32, 1-3 spatial axes, N and C kept, no antialias, no `axes`,
// and scales (when given) equal to output / input; mode linear with half_pixel or
// pytorch_half_pixel (every output extent > 1), or mode nearest at integer
// upsampling factors with asymmetric + floor, or half_pixel / pytorch_half_pixel +
// round_prefer_floor / round_prefer_ceil (all of them pick source index o / factor).
#pragma once

#include <memory>

#include "core/backend_api/backend.h"

namespace collage::onednn {

bool resize_supported(const Graph& graph, const Node& node);
// Throws Error(Unsupported) outside resize_supported().
std::unique_ptr<Kernel> compile_resize(const Graph& graph, const SubGraph& sub, const Node& node);

}  // namespace collage::onednn
