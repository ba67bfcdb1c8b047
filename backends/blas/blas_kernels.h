// OpenBLAS kernels: Gemm/MatMul through cblas_sgemm, 1-D/2-D Conv through
// im2col + sgemm, and an element-wise epilogue (bias, residual Add, activation)
// applied in the same pass over the output.
#pragma once

#include <memory>
#include <string>

#include "core/backend_api/backend.h"

namespace collage::blas {

// Throws Error(Unsupported) for sub-graphs outside the claimed patterns.
std::unique_ptr<Kernel> compile(const Graph& graph, const SubGraph& sub, const CompileOptions& options);
std::string library_version();
void set_threads(int threads);

}  // namespace collage::blas
