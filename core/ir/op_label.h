// The short label a node box shows: the op type plus what an engineer reads
// first. Conv/ConvTranspose: kernel size, stride (when not 1), output channels,
// groups (when not 1): "Conv 3×3 /2 · 64", "Conv 1×1 · 256 g32",
// "ConvTranspose 4×4 ↑2 · 64"; pools: "MaxPool 3×3 /2"; Gemm/MatMul: output
// features, "Gemm · 1000". Anything else (or unknown shapes): the op type. UTF-8.
#pragma once

#include <string>

#include "core/ir/graph.h"

namespace collage {

std::string op_label(const Graph& graph, NodeId node);

}  // namespace collage
