#include "core/backend_api/conv_folding.h"

#include <cmath>

namespace collage {

bool foldable_batch_norm(const Graph&, const Node& bn) {
  return bn.op_type == "BatchNormalization" && bn.outputs.size() == 1 && bn.attr_int("training_mode", 0) == 0;
}

bool starts_with_conv_batch_norm(const Graph& g, const SubGraph& sub) {
  if (sub.node_list.size() < 2) return false;
  const Node& conv = g.node(sub.node_list[0]);
  const Node& bn = g.node(sub.node_list[1]);
  if ((conv.op_type != "Conv" && conv.op_type != "ConvTranspose") || bn.op_type != "BatchNormalization" ||
      bn.inputs.at(0) != conv.outputs.at(0))
    return false;
  if (bn.inputs.size() < 5 || !foldable_batch_norm(g, bn)) return false;
  for (size_t i = 1; i < 5; ++i)
    if (bn.inputs[i] == kNoValue || !g.value(bn.inputs[i]).constant) return false;
  return true;
}

const Node* batch_norm_after(const Graph& g, const Node& conv, const IndexSet& nodes) {
  const Value& y = g.value(conv.outputs.at(0));
  if (y.consumers.size() != 1 || y.is_graph_output) return nullptr;
  NodeId c = y.consumers[0];
  const Node& bn = g.node(c);
  return foldable_batch_norm(g, bn) && nodes.contains(static_cast<size_t>(c)) ? &bn : nullptr;
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
  // The output channel each weight belongs to: Conv [M, C/g, k...]; ConvTranspose
  // [C, M/g, k...], where input channel c feeds the M/g outputs of its group.
  if (f.weight.rank() < 3 || f.weight.size() == 0)
    throw Error(ErrorKind::InvalidModel, conv.describe() + ": its weights are not [M, C/g, k...]");
  const bool transposed = conv.op_type == "ConvTranspose";
  const int64_t group = conv.attr_int("group", 1),
                taps = f.weight.size() / (f.weight.dim(0) * f.weight.dim(1));
  const int64_t m = transposed ? f.weight.dim(1) * group : f.weight.dim(0);
  auto channel_of = [&](int64_t e) {
    if (!transposed) return e / (f.weight.size() / m);
    int64_t c = e / (f.weight.dim(1) * taps), mo = (e / taps) % f.weight.dim(1);
    return c / (f.weight.dim(0) / group) * f.weight.dim(1) + mo;
  };
  // Parameters of another length than the weights' output channels (an artifact edited by hand,
  // a model import would have refused): no fold, and no read past them.
  for (const std::vector<double>* p : {&scale, &shift, &mean, &var})
    if (static_cast<int64_t>(p->size()) != m || (f.bias && f.bias->size() != m) || m <= 0 || taps <= 0)
      throw Error(ErrorKind::InvalidModel, bn.describe() + ": its parameters do not match " +
                                               conv.describe() + "'s " + std::to_string(m) +
                                               " output channels");
  std::vector<double> a(static_cast<size_t>(m));
  for (size_t oc = 0; oc < a.size(); ++oc) a[oc] = scale[oc] / std::sqrt(var[oc] + eps);
  Tensor w = f.weight.clone(), b(DType::Float32, {m});
  for (int64_t e = 0; e < w.size(); ++e)
    w.data<float>()[e] = static_cast<float>(w.data<float>()[e] * a[static_cast<size_t>(channel_of(e))]);
  for (int64_t oc = 0; oc < m; ++oc) {
    size_t c = static_cast<size_t>(oc);
    double old_bias = f.bias ? f.bias->data<float>()[oc] : 0.0;
    b.data<float>()[oc] = static_cast<float>((old_bias - mean[c]) * a[c] + shift[c]);
  }
  f.weight = w;
  f.bias = b;
  f.nodes_used = 2;
  return f;
}

}  // namespace collage
