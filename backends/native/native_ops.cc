#include "backends/native/native_ops.h"

#include <algorithm>

#include "backends/native/data_ops_internal.h"

namespace collage::native {

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    register_conv_ops(t);
    register_matmul_ops(t);
    register_einsum_ops(t);
    register_pool_ops(t);
    register_norm_ops(t);
    register_reduce_ops(t);
    register_resize_ops(t);
    register_elementwise_ops(t);
    register_shape_ops(t);
    register_tensor_ops(t);
    register_index_ops(t);
    register_arg_ops(t);
    register_loss_ops(t);
    register_local_norm_ops(t);
    register_random_ops(t);
    register_quant_ops(t);
    register_rnn_ops(t);
    register_detection_ops(t);
    register_grid_ops(t);
    register_select_ops(t);
    register_unpool_ops(t);
    register_control_flow_ops(t);
    register_sequence_ops(t);
    register_image_ops(t);
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

namespace {

// The half type float32 outputs are rounded to (Undefined: none), see run_op.
DType half_result_type(const Node& node, KernelInputs inputs) {
  if (node.has_attr("dtype")) return DType::Undefined;
  if (!inputs.empty() && inputs[0] && is_half_dtype(inputs[0]->dtype())) return inputs[0]->dtype();
  DType half = DType::Undefined;
  for (const Tensor* t : inputs) {
    if (!t) continue;
    DType d = t->dtype();
    if (is_half_dtype(d)) {
      if (half != DType::Undefined && half != d) return DType::Undefined;
      half = d;
    } else if (d == DType::Float32 || d == DType::Float64) {
      return DType::Undefined;
    }
  }
  return half;
}

std::vector<Tensor> run_widened(OpFunction fn, const Node& node, KernelInputs inputs,
                                TensorAllocator& alloc) {
  HeapAllocator heap;
  std::vector<Tensor> widened;
  widened.reserve(inputs.size());
  std::vector<const Tensor*> args;
  for (const Tensor* t : inputs) {
    if (t && is_half_dtype(t->dtype())) {
      Tensor f = heap.allocate(DType::Float32, t->shape());
      convert_elements(node, t->dtype(), t->raw(), DType::Float32, f.raw(), t->size());
      widened.push_back(std::move(f));
      args.push_back(&widened.back());
    } else {
      args.push_back(t);
    }
  }
  const DType half = half_result_type(node, inputs);
  std::vector<Tensor> outs = fn(node, args, heap);
  if (half == DType::Undefined) return outs;
  for (Tensor& out : outs) {
    if (!out.defined() || out.dtype() != DType::Float32) continue;
    Tensor h = alloc.allocate(half, out.shape());
    convert_elements(node, DType::Float32, out.raw(), half, h.raw(), out.size());
    out = std::move(h);
  }
  return outs;
}

}  // namespace

std::vector<Tensor> run_op(OpFunction fn, const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  if (takes_non_tensor_values(node)) return fn(node, inputs, alloc);  // items keep their own types
  bool any_half = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (t && !t->is_dense())
      throw Error(ErrorKind::InvalidModel, node.describe() + ": input " + std::to_string(i) + " is " +
                                               describe_value(*t) + "; the op takes tensors");
    any_half = any_half || (t && is_half_dtype(t->dtype()));
  }
  if (!any_half || node.op_type == "Cast" || node.op_type == "CastLike") return fn(node, inputs, alloc);
  return run_widened(fn, node, inputs, alloc);
}

std::vector<Tensor> evaluate_node(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  return run_op(find_op(node), node, inputs, alloc);
}

}  // namespace collage::native
