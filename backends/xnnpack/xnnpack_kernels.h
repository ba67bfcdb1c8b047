// XNNPACK operator-API kernels (the 2022 Debian build): NHWC convolution
// (incl. depthwise/grouped) and fully connected with fused output clamps
// (Relu, Clip), 2-D max/average/global-average pooling, broadcasting Add/Mul,
// and Relu/Clip as clamp. NCHW<->NHWC transposes happen inside the kernel.
#pragma once

#include <memory>

#include "core/backend_api/backend.h"

namespace collage::xnnpack {

std::unique_ptr<Kernel> compile(const Graph& graph, const SubGraph& sub, const CompileOptions& options);
void set_threads(int threads);

}  // namespace collage::xnnpack
