// In-place channel Concats inside a region (region_kernel.h, "in-place Concat"): each
// producer writes its slice of the destination; prefix families share one buffer.
#include <algorithm>

#include "backends/onednn_region/region_kernel.h"

namespace collage::onednn::region {

std::vector<std::pair<tag, int64_t>> RegionKernel::channel_blocked_tags(size_t rank) {
  if (rank == 4) return {{tag::aBcd16b, 16}, {tag::aBcd8b, 8}, {tag::abcd, 1}, {tag::acdb, 1}};
  if (rank == 5) return {{tag::aBcde16b, 16}, {tag::aBcde8b, 8}, {tag::abcde, 1}, {tag::acdeb, 1}};
  if (rank == 3) return {{tag::aBc16b, 16}, {tag::aBc8b, 8}, {tag::abc, 1}, {tag::acb, 1}};
  return {};
}

bool RegionKernel::concat_prefix_of(const Node& a, const Node& b) {
  const Shape& as = g_.value(a.outputs[0]).shape;
  const Shape& bs = g_.value(b.outputs[0]).shape;
  if (concat_axis(a) != 1 || concat_axis(b) != 1 || as.size() != bs.size() || as[0] != 1 ||
      a.inputs.size() >= b.inputs.size())
    return false;
  for (size_t d = 2; d < as.size(); ++d)
    if (as[d] != bs[d]) return false;
  return std::equal(a.inputs.begin(), a.inputs.end(), b.inputs.begin());
}

NodeId RegionKernel::concat_root(NodeId c) {
  auto it = concat_root_.find(c);
  if (it != concat_root_.end()) return it->second;
  NodeId root = c;
  for (NodeId t : sub_.node_list)
    if (g_.node(t).op_type == "Concat" && concat_prefix_of(g_.node(c), g_.node(t)) &&
        g_.node(t).inputs.size() > g_.node(root).inputs.size())
      root = t;
  return concat_root_[c] = root;
}

bool RegionKernel::in_family(NodeId c) {
  if (concat_root(c) != c) return true;
  for (NodeId t : sub_.node_list)
    if (t != c && g_.node(t).op_type == "Concat" && concat_root(t) == c) return true;
  return false;
}

const RegionKernel::ConcatPlan& RegionKernel::concat_plan(NodeId root, const memory::desc& first_layout,
                                                          ValueId first) {
  auto it = concat_plans_.find(root);
  if (it != concat_plans_.end()) return it->second;
  const Node& c = g_.node(root);
  ConcatPlan plan;
  const Shape& ys = g_.value(c.outputs[0]).shape;
  bool family = in_family(root);
  auto aligned = [&](tag t, int64_t block) {
    if (concat_axis(c) != 1 || (family && channels_last(t))) return false;
    for (ValueId v : c.inputs)
      if (is_const(g_, v) || g_.value(v).shape[1] % block != 0) return false;
    return true;
  };
  // The first producer's layout if it can hold the family; else (a family only, whose
  // members need dense prefixes) the widest channel blocking that divides every input.
  std::optional<tag> chosen;
  for (auto [t, block] : channel_blocked_tags(ys.size()))
    if (memory::desc(dims_of(g_.value(first).shape), dt::f32, t) == first_layout && aligned(t, block))
      chosen = t;
  if (!chosen && family)
    for (auto [t, block] : channel_blocked_tags(ys.size()))
      if (!chosen && aligned(t, block)) chosen = t;
  if (chosen) {
    plan.md = memory::desc(dims_of(ys), dt::f32, *chosen);
    plan.dst = new_buffer(plan.md);
    plan.layout = *chosen;
    plan.ok = true;
  }
  return concat_plans_.emplace(root, plan).first->second;
}

std::optional<std::pair<memory, memory::desc>> RegionKernel::concat_slot(ValueId v,
                                                                         const memory::desc& layout) {
  const Value& val = g_.value(v);
  if (val.is_graph_output || val.consumers.empty()) return std::nullopt;
  NodeId root = kNoNode;
  for (NodeId c : val.consumers) {
    if (!sub_.nodes.contains(static_cast<size_t>(c)) || fused_.count(c) || g_.node(c).op_type != "Concat")
      return std::nullopt;
    NodeId r = concat_root(c);
    if (root != kNoNode && r != root) return std::nullopt;
    root = r;
  }
  const Node& c = g_.node(root);
  if (std::count(c.inputs.begin(), c.inputs.end(), v) != 1) return std::nullopt;
  const ConcatPlan& plan = concat_plan(root, layout, v);
  if (!plan.ok) return std::nullopt;
  size_t input = static_cast<size_t>(std::find(c.inputs.begin(), c.inputs.end(), v) - c.inputs.begin());
  return std::make_pair(plan.dst, concat_slice(plan, c, input));
}

void RegionKernel::add_concat(const Node& n) {
  NodeId id = static_cast<NodeId>(&n - &g_.nodes[0]);
  NodeId root = concat_root(id);
  // A family's plan is made by its first member if no producer asked for a slot yet.
  if (root != id || in_family(id)) concat_plan(root, layout_of(n.inputs[0]), n.inputs[0]);
  auto planned = concat_plans_.find(root);
  if (planned != concat_plans_.end() && planned->second.ok) {
    const ConcatPlan& plan = planned->second;
    const Node& whole = g_.node(root);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (in_place_.count(n.inputs[i]) || !copied_.insert({root, n.inputs[i]}).second) continue;
      memory src = value(n.inputs[i]).mem;
      memory slice = alias(plan.dst, concat_slice(plan, whole, i));
      add_step(dnnl::reorder(src, slice), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, slice}});
    }
    const Shape& ys = g_.value(n.outputs[0]).shape;
    define(n.outputs[0],
           root == id ? plan.dst : alias(plan.dst, memory::desc(dims_of(ys), dt::f32, plan.layout)));
    return;
  }
  int64_t axis = n.attr_int("axis", 1);
  int64_t r = static_cast<int64_t>(rank_of(g_, n.outputs[0]));
  if (axis < 0) axis += r;
  // Inputs of one layout are concatenated in it (blocked on channels); mixed ones in the plain layout.
  std::vector<memory::desc> use;
  for (ValueId v : n.inputs) use.push_back(layout_of(v));
  bool same = std::all_of(use.begin(), use.end(), [&](const memory::desc& d) { return d == use[0]; });
  if (!same)
    for (size_t i = 0; i < use.size(); ++i) use[i] = plain(g_.value(n.inputs[i]).shape);
  std::optional<dnnl::concat::primitive_desc> pd;
  try {
    pd = dnnl::concat::primitive_desc(static_cast<int>(axis), use, cpu());
  } catch (const dnnl::error&) {
    for (size_t i = 0; i < use.size(); ++i) use[i] = plain(g_.value(n.inputs[i]).shape);
    pd = dnnl::concat::primitive_desc(static_cast<int>(axis), use, cpu());
  }
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = in_layout(n.inputs[i], use[i]);
  memory dst = new_buffer(pd->dst_desc());
  args[DNNL_ARG_DST] = dst;
  add_primitive(*pd, std::move(args));
  define(n.outputs[0], dst);
}

}  // namespace collage::onednn::region
