// The native backend: every op the product accepts, single and fused with the
// TVM-style rule (conv/gemm + element-wise epilogue, injective chains,
// reduction + epilogue).
#include "backends/native/native_spec.h"

#include "backends/native/native_kernel.h"
#include "backends/native/native_ops.h"
#include "core/composite_kernel.h"

namespace collage {

const BackendSpec& native_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "native";
    s.version = "1";
    s.rules.push_back(std::make_shared<TvmStyleRule>([](const Graph&, const Node& n) {
      return (n.domain.empty() || n.domain == "com.microsoft") && native::supports_op(n.op_type);
    }));
    s.limits.max_nodes = 8;
    s.compile = [](const Graph& graph, const SubGraph& sub,
                   const CompileOptions&) -> std::unique_ptr<Kernel> {
      return native::make_fused_kernel(graph, sub);
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
