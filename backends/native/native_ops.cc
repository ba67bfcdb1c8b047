#include "backends/native/native_ops.h"

#include <algorithm>

namespace collage::native {

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    register_conv_ops(t);
    register_matmul_ops(t);
    register_pool_ops(t);
    register_norm_ops(t);
    register_reduce_ops(t);
    register_resize_ops(t);
    register_elementwise_ops(t);
    register_shape_ops(t);
    register_tensor_ops(t);
    register_index_ops(t);
    register_grid_ops(t);
    register_select_ops(t);
    register_unpool_ops(t);
    return t;
  }();
  return table;
}

bool supports_op(const std::string& op_type) { return op_table().count(op_type) != 0; }

std::vector<std::string> supported_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : op_table()) ops.push_back(name);
  std::sort(ops.begin(), ops.end());
  return ops;
}

OpFunction find_op(const Node& node) {
  bool known_domain = node.domain.empty() || (node.domain == "com.microsoft" && node.op_type == "Gelu");
  auto it = op_table().find(node.op_type);
  if (!known_domain || it == op_table().end())
    throw Error(ErrorKind::Unsupported,
                node.describe() + ": operator is not supported by the native backend");
  return it->second;
}

std::vector<Tensor> evaluate_node(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  return find_op(node)(node, inputs, alloc);
}

}  // namespace collage::native
