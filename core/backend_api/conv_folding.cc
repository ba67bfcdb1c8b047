#include "core/backend_api/conv_folding.h"

#include <cmath>

namespace collage {

bool starts_with_conv_batch_norm(const Graph& g, const SubGraph& sub) {
  if (sub.node_list.size() < 2) return false;
  const Node& conv = g.node(sub.node_list[0]);
  const Node& bn = g.node(sub.node_list[1]);
  if (conv.op_type != "Conv" || bn.op_type != "BatchNormalization" || bn.inputs.at(0) != conv.outputs.at(0))
    return false;
  if (bn.inputs.size() < 5 || bn.outputs.size() != 1) return false;
  for (size_t i = 1; i < 5; ++i)
    if (bn.inputs[i] == kNoValue || !g.value(bn.inputs[i]).constant) return false;
  return true;
}

FoldedConv fold_conv(const Graph& g, const SubGraph& sub) {
  const Node& conv = g.node(sub.node_list.at(0));
  if (conv.inputs.size() < 2 || !g.value(conv.inputs[1]).constant)
    throw Error(ErrorKind::Unsupported, conv.describe() + ": weights must be constant");
  FoldedConv f;
  f.weight = *g.value(conv.inputs[1]).constant;
  if (conv.inputs.size() > 2 && conv.inputs[2] != kNoValue) {
    if (!g.value(conv.inputs[2]).constant)
      throw Error(ErrorKind::Unsupported, conv.describe() + ": bias must be constant");
    f.bias = *g.value(conv.inputs[2]).constant;
  }
  if (!starts_with_conv_batch_norm(g, sub)) return f;
  const Node& bn = g.node(sub.node_list[1]);
  auto param = [&](size_t i) { return g.value(bn.inputs[i]).constant->to_double_vector(); };
  std::vector<double> scale = param(1), shift = param(2), mean = param(3), var = param(4);
  const double eps = bn.attr_float("epsilon", 1e-5f);
  const int64_t m = f.weight.dim(0), per_channel = f.weight.size() / m;
  Tensor w = f.weight.clone(), b(DType::Float32, {m});
  for (int64_t oc = 0; oc < m; ++oc) {
    size_t c = static_cast<size_t>(oc);
    double a = scale[c] / std::sqrt(var[c] + eps);
    for (int64_t i = 0; i < per_channel; ++i)
      w.data<float>()[oc * per_channel + i] = static_cast<float>(w.data<float>()[oc * per_channel + i] * a);
    double old_bias = f.bias ? f.bias->data<float>()[oc] : 0.0;
    b.data<float>()[oc] = static_cast<float>((old_bias - mean[c]) * a + shift[c]);
  }
  f.weight = w;
  f.bias = b;
  f.nodes_used = 2;
  return f;
}

}  // namespace collage
