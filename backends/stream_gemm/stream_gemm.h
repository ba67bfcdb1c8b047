// stream-gemm: the project's own GEMM for products whose constant weights stream from DRAM on
// every request (a transformer at a short sequence, small-batch MLPs): MatMul / Gemm with
// constant 2-D weights, fused with a bias Add and then a residual Add, a Relu or a GELU (erf or
// tanh, as exporters write it). See packed_gemm.h for how it keeps the weight stream overlapped
// with the arithmetic. Offered only where A fits in L2 beside a weight panel (rows * k <= 160K
// floats) and the CPU has AVX2 and FMA; larger products run at the FMA peak in oneDNN already.
#pragma once

#include "core/backend_api/backend.h"

namespace collage {

const BackendSpec& stream_gemm_backend();

}  // namespace collage
