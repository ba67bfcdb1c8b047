// oneDNN kernels: one primitive per candidate (convolution, deconvolution,
// matmul, pooling, softmax, normalisations, eltwise, binary), fused groups as
// post-ops. Weights are reordered once at compile time into the layout the
// primitive prefers; activations are converted from/to plain NC... layout
// inside the kernel when the primitive picks a blocked one.
#pragma once

#include <memory>
#include <string>

#include "core/backend_api/backend.h"

namespace collage::onednn {

std::unique_ptr<Kernel> compile(const Graph& graph, const SubGraph& sub, const CompileOptions& options);
std::string library_version();
// What both oneDNN backends report as their version (the cost key and the placement's
// backend_versions): the library's, plus a revision of our use of it, raised whenever a
// kernel of ours computes differently so that a cost DB's older costs are not reused.
// r2: 3x3 convolutions as Winograd (winograd_pays).
std::string backend_version();
void set_threads(int threads);

// Shared by the spec's predicates and the kernels, so claims match what compiles.
bool eltwise_supported(const Graph& graph, const Node& node);  // op -> eltwise stages
bool block_root(const Graph& graph, const Node& node);         // last node of x*Sigmoid(x) or the erf GELU
bool binary_op(const std::string& op_type);                    // Add, Sub, Mul, Div, Max, Min
bool pool_supported(const Graph& graph, const Node& node);     // an exact oneDNN pooling exists

}  // namespace collage::onednn
