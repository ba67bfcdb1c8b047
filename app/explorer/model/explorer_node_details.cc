// ExplorerController's read-only views of one node or name scope: the plain data the
// inspector renders (node_details.h): attributes (bodies with their op mix and placement),
// tensors, costs of the candidates covering it, why it runs where it does.
#include "app/explorer/model/explorer_controller.h"
#include "core/ir/graph_analysis.h"
#include "core/ir/subgraph.h"

namespace collage {

namespace {

QString attribute_text(const Attribute& a) {
  QString value;
  switch (a.kind) {
    case AttrKind::Int:
      return QString::number(a.i);
    case AttrKind::Float:
      return QString::number(a.f);
    case AttrKind::String:
      return QString::fromStdString(a.s);
    case AttrKind::Ints:
      for (int64_t x : a.ints) value += QString::number(x) + " ";
      return value;
    case AttrKind::Floats:
      for (float x : a.floats) value += QString::number(x) + " ";
      return value;
    case AttrKind::Graph:  // a body: its size and op mix, commonest first
      return QString("body of %1 nodes: %2")
          .arg(a.g->nodes.size())
          .arg(QString::fromStdString(op_mix(*a.g, all_nodes(*a.g))));
    default:
      return "…";
  }
}

}  // namespace

ScopeDetails ExplorerController::scope_details(int scope) const {
  if (!graph_) return {};
  return collage::scope_details(*graph_, placement_ ? &*placement_ : nullptr, scope);
}

NodeDetails ExplorerController::node_details(int node) const {
  NodeDetails d;
  if (!graph_ || node < 0 || node >= graph_->num_nodes()) return d;
  const Node& n = graph_->node(node);
  d.id = node;
  d.name = QString::fromStdString(n.name);
  d.op_type = QString::fromStdString(n.op_type);
  d.opset = n.opset;
  NodeCost cost = node_cost(*graph_, node);
  d.flops = cost.flops;
  d.bytes_read = cost.bytes_read;
  d.bytes_written = cost.bytes_written;
  for (const auto& [key, a] : n.attrs) {
    QString text = attribute_text(a);
    // A placed body: where its nodes run, as the tune placed it.
    if (const Placement* body = placement_ ? find_body_placement(*placement_, n.name, key) : nullptr)
      text += QString("; placed: %1").arg(QString::fromStdString(placement_summary(*body)));
    d.attributes.emplace_back(QString::fromStdString(key), text);
  }
  auto tensor = [this](ValueId v) {
    const Value& value = graph_->value(v);
    const bool tensor_kind = value.kind == ValueKind::Tensor;
    return NodeDetails::Tensor{
        QString::fromStdString(value.name),
        tensor_kind ? QString(dtype_name(value.dtype)) : QString::fromStdString(describe_type(value)),
        QString::fromStdString(value.shape_known ? shape_to_string(value.shape) : "[dynamic]")};
  };
  for (ValueId v : n.inputs)
    if (v != kNoValue) d.inputs.push_back(tensor(v));
  for (ValueId v : n.outputs)
    if (v != kNoValue) d.outputs.push_back(tensor(v));
  if (tuned_) {
    d.tuned = true;
    for (size_t i = 0; i < tuned_->candidates.size(); ++i) {
      const Candidate& c = tuned_->candidates[i];
      if (!c.nodes.contains(static_cast<size_t>(node))) continue;
      const Cost& k = tuned_->costs[i].cost;
      d.candidates.push_back({QString::fromStdString(c.backend), QString::fromStdString(c.label), k.valid(),
                              k.median_ms, k.stddev_ms, k.samples, QString::fromStdString(k.invalid_reason)});
    }
  }
  if (placement_)
    for (const PlacedKernel& k : placement_->kernels)
      if (std::find(k.nodes.begin(), k.nodes.end(), node) != k.nodes.end())
        d.assigned.push_back({QString::fromStdString(k.backend), QString::fromStdString(k.label),
                              k.cost.valid() ? k.cost.median_ms : 0.0});  // NodeDetails keeps a double
  if (std::optional<NodeExplanation> e = explain_node(node)) {
    const Alternative& r = e->runner_up;
    NodeDetails::WhyHere why;
    why.reason_key = reason_key(e->reason);
    why.reason = QString::fromStdString(e->reason_text);
    why.backend = QString::fromStdString(e->chosen.backend);
    why.label = QString::fromStdString(e->chosen.label);
    why.kernel_nodes = static_cast<int>(e->chosen.nodes.size());
    why.cost_ms = e->chosen_ms;
    why.placement_ms = e->current_ms;
    why.runner_up = {r.feasible,
                     QString::fromStdString(r.infeasible_reason),
                     QString::fromStdString(r.backend),
                     QString::fromStdString(r.label),
                     r.predicted_ms,
                     r.delta_ms,
                     r.spread_ms,
                     r.near_tie};
    d.why = why;
  }
  return d;
}

}  // namespace collage
