// `collage export --qdq OUT.onnx`: the model with the placement's int8 fully connected layers
// (MatMul, Gemm) written as standard ONNX integer ops, so other runtimes run the same quantization (ONNX
// Runtime fuses the pattern into its DynamicQuantizeMatMul). Each rewritten MatMul y = x W:
//   DynamicQuantizeLinear(x) -> xq, xs, xzp      (per tensor, u8, range holding 0)
//   MatMulInteger(xq, Wq, xzp) -> acc            (Wq int8, the kernel's own 7-bit weights)
//   Cast(acc -> float) * (xs * Ws) -> y          (Ws the per-column weight scales)
// Every other node is written as it was; initializers no node reads any more are dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
}

namespace collage {

struct QdqMatmul {
  std::string node;          // the MatMul's name in the ONNX file
  int64_t k = 0, n = 0;      // weights [K, N]
  std::vector<int8_t> q;     // [K, N] row-major
  std::vector<float> scale;  // [N]: W ~= q * scale per column
};

// Appends y = x W in the form above to `graph`: the initializers PREFIX/weight_q and
// PREFIX/weight_scale (PREFIX = m.node + "/qdq") and the five nodes, reading value `x` and
// writing value `y`; m.q and m.scale must hold K * N and N values. The one writer of this form:
// `export --qdq` and onnxruntime-int8's regions.
void append_int8_matmul(onnx::GraphProto& graph, const QdqMatmul& m, const std::string& x,
                        const std::string& y);

// Reads `onnx_path`, rewrites each listed MatMul or Gemm (InvalidInput naming a node the file lacks
// or that is neither; for a Gemm, q and scale are B as [K, N] with transB and alpha folded in, and
// its C times beta is added after the product), writes `out_path`. Returns the nodes rewritten.
size_t write_qdq_model(const std::string& onnx_path, const std::vector<QdqMatmul>& matmuls,
                       const std::string& out_path);

}  // namespace collage
