// The native backend: every op the product accepts, single and fused with the
// TVM-style rule (conv/gemm + element-wise epilogue, injective chains,
// reduction + epilogue), plus the transformer blocks of core/backend_api/transformer_fusion.h
// (layer norm with residual Add, GELU with bias and MatMul, attention core).
#include "backends/native/native_spec.h"

#include "backends/native/native_kernel.h"
#include "backends/native/native_ops.h"
#include "core/backend_api/transformer_fusion.h"
#include "core/runtime/composite_kernel.h"

namespace collage {

const BackendSpec& native_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "native";
    // 2: the attention core's softmax in eight lanes; 3: erf without exp (a GELU at half the cost);
    // 4: the GELU kernel in eight or sixteen lanes, shared between the threads.
    s.version = "4";
    s.rules.push_back(std::make_shared<TvmStyleRule>([](const Graph&, const Node& n) {
      return (n.domain.empty() || n.domain == "com.microsoft") && native::supports_op(n.op_type);
    }));
    s.limits.max_nodes = 8;
    s.takes_dynamic_shapes = true;  // a node kernel computes its output shapes from its inputs
    s.patterns = {layer_norm_pattern(true), gelu_pattern(false, false), gelu_pattern(true, false),
                  gelu_pattern(true, true), attention_pattern(false),   attention_pattern(true)};
    s.limits.max_pattern_nodes = 16;  // decomposed LayerNorm + residual: 10; tanh GELU + bias + MatMul: 11
    s.compile = [](const Graph& graph, const SubGraph& sub,
                   const CompileOptions& options) -> std::unique_ptr<Kernel> {
      return native::make_fused_kernel(graph, sub, options.threads);
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
