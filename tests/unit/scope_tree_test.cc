// The scope tree (core/ir/scope_tree.h) on hand-written PyTorch names and on
// ResNet-50's, the collapsed graph it induces, the even split of kernel time,
// and the node labels (core/ir/op_label.h).
#include "core/ir/scope_tree.h"

#include <gtest/gtest.h>

#include <set>

#include "core/ir/graph_analysis.h"
#include "core/ir/op_label.h"
#include "sample_graph.h"

namespace collage {
namespace {

const std::vector<std::string> kNames = {
    "/conv1/Conv",                  // 0: one-node scope /conv1 folded into the root
    "/layer1/layer1.0/conv1/Conv",  // 1
    "/layer1/layer1.0/relu/Relu",   // 2
    "/layer1/layer1.0/conv2/Conv",  // 3
    "/layer1/layer1.0/Add",         // 4
    "/layer1/layer1.1/conv1/Conv",  // 5
    "/layer1/layer1.1/Add",         // 6
    "Flatten_7",                    // 7: no scope
    "/fc/Gemm",                     // 8
};

TEST(ScopeTree, ScopesFromPyTorchNames) {
  ScopeTree t(kNames);
  EXPECT_EQ(t.scope(0).path, "");
  EXPECT_EQ(t.scope(0).nodes.size(), kNames.size());
  EXPECT_EQ(t.find("/conv1"), -1);  // one node: nothing to collapse
  EXPECT_EQ(t.find("/fc"), -1);
  EXPECT_EQ(t.find("/layer1/layer1.0/conv1"), -1);
  int layer1 = t.find("/layer1"), b0 = t.find("/layer1/layer1.0"), b1 = t.find("/layer1/layer1.1");
  ASSERT_GT(layer1, 0);
  ASSERT_GT(b0, 0);
  ASSERT_GT(b1, 0);
  EXPECT_EQ(t.size(), 4);
  EXPECT_EQ(t.scope(layer1).depth, 1);
  EXPECT_EQ(t.scope(b0).depth, 2);
  EXPECT_EQ(t.scope(b0).parent, layer1);
  EXPECT_EQ(t.scope(b0).name, "layer1.0");
  EXPECT_EQ(t.scope(layer1).children, (std::vector<int>{b0, b1}));
  EXPECT_EQ(t.scope(b0).nodes, (std::vector<NodeId>{1, 2, 3, 4}));
  EXPECT_EQ(t.scope(layer1).nodes, (std::vector<NodeId>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.innermost(0), 0);
  EXPECT_EQ(t.innermost(3), b0);
  EXPECT_EQ(t.innermost(7), 0);
  EXPECT_EQ(t.max_depth(), 2);
}

TEST(ScopeTree, CollapseAndExpand) {
  ScopeTree t(kNames);
  int layer1 = t.find("/layer1"), b0 = t.find("/layer1/layer1.0"), b1 = t.find("/layer1/layer1.1");
  std::vector<bool> collapsed = t.collapsed_at_depth(1);
  for (NodeId n = 1; n <= 6; ++n) EXPECT_EQ(t.collapsed_owner(n, collapsed), layer1);
  EXPECT_EQ(t.collapsed_owner(0, collapsed), -1);
  t.expand(collapsed, layer1);
  EXPECT_FALSE(collapsed[static_cast<size_t>(layer1)]);
  EXPECT_EQ(t.collapsed_owner(2, collapsed), b0);
  EXPECT_EQ(t.collapsed_owner(6, collapsed), b1);
  EXPECT_EQ(t.collapsed_at_depth(0), std::vector<bool>(static_cast<size_t>(t.size()), false));
}

// torchvision's EfficientNet: features.3 holds only features.3.0, which holds only block.
// Opening features.3 shows block's children at once; a scope with nodes of its own beside
// its one child (layer2 here) opens one level only.
TEST(ScopeTree, ExpandOpensThroughSingleChildChains) {
  ScopeTree t({
      "/features/features.3/features.3.0/block/block.0/block.0.0/Conv",  // 0
      "/features/features.3/features.3.0/block/block.0/block.0.1/Relu",  // 1
      "/features/features.3/features.3.0/block/block.1/block.1.0/Conv",  // 2
      "/features/features.3/features.3.0/block/block.1/block.1.1/Relu",  // 3
      "/layer2/layer2.0/a/Conv",                                         // 4
      "/layer2/layer2.0/b/Relu",                                         // 5
      "/layer2/Add",                                                     // 6
  });
  const int features3 = t.find("/features/features.3"),
            block = t.find("/features/features.3/features.3.0/block");
  const int b0 = t.find("/features/features.3/features.3.0/block/block.0");
  const int b1 = t.find("/features/features.3/features.3.0/block/block.1");
  const int layer2 = t.find("/layer2"), layer20 = t.find("/layer2/layer2.0");
  ASSERT_GT(features3, 0);
  ASSERT_GT(block, 0);
  ASSERT_GT(b0, 0);
  ASSERT_GT(layer20, 0);
  std::vector<bool> collapsed = t.collapsed_at_depth(2);
  ASSERT_TRUE(collapsed[static_cast<size_t>(features3)]);
  t.expand(collapsed, features3);
  // One step: every scope of the chain open, block's children shown as boxes.
  for (int s = features3; s <= block; ++s) EXPECT_FALSE(collapsed[static_cast<size_t>(s)]) << t.scope(s).path;
  EXPECT_EQ(t.collapsed_owner(0, collapsed), b0);
  EXPECT_EQ(t.collapsed_owner(3, collapsed), b1);
  collapsed = t.collapsed_at_depth(1);
  t.expand(collapsed, layer2);
  EXPECT_TRUE(collapsed[static_cast<size_t>(layer20)]);  // layer2 has a node of its own: one level
  EXPECT_EQ(t.collapsed_owner(6, collapsed), -1);
}

TEST(ScopeTree, UnitsPerDepthMatchTheCollapsedGraph) {
  ScopeTree t(kNames);
  NodeEdges e;
  e.preds.resize(kNames.size());
  e.succs.resize(kNames.size());
  for (int d = 1; d <= t.max_depth(); ++d)
    EXPECT_EQ(t.units_at_depth(d), static_cast<int>(collapse(t, e, t.collapsed_at_depth(d)).units.size()));
  EXPECT_EQ(t.units_at_depth(1), 4);  // 0, /layer1, 7, 8
  EXPECT_EQ(t.units_at_depth(2), 5);  // 0, /layer1/layer1.0, /layer1/layer1.1, 7, 8
  EXPECT_EQ(t.deepest_depth_within(4), 1);
  EXPECT_EQ(t.deepest_depth_within(5), 2);
  EXPECT_EQ(t.deepest_depth_within(3), 0);
}

// A chain 0 -> 1 -> ... -> 8 plus a skip 1 -> 4.
NodeEdges chain_edges() {
  NodeEdges e;
  e.preds.resize(kNames.size());
  e.succs.resize(kNames.size());
  auto link = [&](NodeId a, NodeId b) {
    e.succs[static_cast<size_t>(a)].push_back(b);
    e.preds[static_cast<size_t>(b)].push_back(a);
  };
  for (NodeId n = 0; n + 1 < static_cast<NodeId>(kNames.size()); ++n) link(n, n + 1);
  link(1, 4);
  return e;
}

TEST(ScopeTree, CollapsedGraphKeepsEveryCrossingEdgeOnce) {
  ScopeTree t(kNames);
  NodeEdges e = chain_edges();
  CollapsedGraph g = collapse(t, e, t.collapsed_at_depth(1));
  // 0, the /layer1 box, 7, 8.
  ASSERT_EQ(g.units.size(), size_t{4});
  EXPECT_EQ(g.units[1].scope, t.find("/layer1"));
  EXPECT_EQ(g.unit_of[3], 1);
  size_t members = 0;
  for (const auto& edge : g.edges) {
    EXPECT_NE(edge.from, edge.to);
    for (auto [a, b] : edge.members) {
      EXPECT_EQ(g.unit_of[static_cast<size_t>(a)], edge.from);
      EXPECT_EQ(g.unit_of[static_cast<size_t>(b)], edge.to);
    }
    members += edge.members.size();
  }
  size_t crossing = 0;  // counted directly from the node edges
  for (size_t a = 0; a < e.succs.size(); ++a)
    for (NodeId b : e.succs[a]) crossing += g.unit_of[a] != g.unit_of[static_cast<size_t>(b)];
  EXPECT_EQ(members, crossing);
  EXPECT_EQ(g.edges.size(), size_t{3});  // 0->box, box->7, 7->8
  // Nothing collapsed: the graph itself.
  CollapsedGraph all = collapse(t, e, t.collapsed_at_depth(0));
  EXPECT_EQ(all.units.size(), kNames.size());
  EXPECT_EQ(all.edges.size(), kNames.size());  // 8 chain links + the skip
}

TEST(ScopeTree, KernelTimeSplitsEvenlyAcrossScopeBoundaries) {
  ScopeTree t(kNames);
  // A kernel over nodes 0..2 crosses from the root into /layer1/layer1.0.
  std::vector<KernelTime> kernels = {
      {{0, 1, 2}, "onednn", 3.0}, {{3, 4, 5, 6}, "xnnpack", 2.0}, {{7}, "native", 0.5}, {{8}, "blas", 1.0}};
  auto shares = split_evenly(static_cast<int>(kNames.size()), kernels);
  EXPECT_DOUBLE_EQ(shares[1].ms, 1.0);
  EXPECT_EQ(shares[5].backend, "xnnpack");
  ScopeCost b0 = t.cost(t.find("/layer1/layer1.0"), shares);  // nodes 1, 2 of the first, 3, 4 of the second
  EXPECT_DOUBLE_EQ(b0.ms, 3.0 * 2 / 3 + 2.0 * 2 / 4);
  EXPECT_DOUBLE_EQ(b0.backend_ms["onednn"], 2.0);
  EXPECT_DOUBLE_EQ(b0.backend_ms["xnnpack"], 1.0);
  EXPECT_EQ(b0.kernels, 2);
  double total = 0;
  for (const auto& k : kernels) total += k.ms;
  EXPECT_DOUBLE_EQ(t.cost(0, shares).ms, total);  // the root holds all the time
}

TEST(ScopeTree, ResNet50ScopesPartitionTheGraph) {
  Graph g = testing::sample_graph("resnet50");
  ScopeTree t = ScopeTree::of(g);
  EXPECT_GT(t.find("/layer1"), 0);
  EXPECT_GT(t.find("/layer4/layer4.2"), 0);
  for (int s = 1; s < t.size(); ++s) {
    const auto& scope = t.scope(s);
    EXPECT_GE(scope.nodes.size(), size_t{2});
    EXPECT_EQ(scope.depth, t.scope(scope.parent).depth + 1);
    for (NodeId n : scope.nodes)  // the scope's path prefixes each of its nodes' names
      EXPECT_EQ(g.node(n).name.rfind(scope.path + "/", 0), size_t{0}) << g.node(n).name;
    // Children are disjoint and inside their parent.
    std::set<NodeId> seen;
    for (int c : scope.children)
      for (NodeId n : t.scope(c).nodes) {
        EXPECT_TRUE(seen.insert(n).second);
        EXPECT_TRUE(std::binary_search(scope.nodes.begin(), scope.nodes.end(), n));
      }
  }
  CollapsedGraph c = collapse(t, node_edges(g), t.collapsed_at_depth(1));
  EXPECT_LT(c.units.size(), static_cast<size_t>(g.num_nodes()));
}

TEST(OpLabel, ConvPoolAndGemm) {
  Graph g;
  auto value = [&](const std::string& name, Shape shape) {
    Value v;
    v.name = name;
    v.dtype = DType::Float32;
    v.shape = std::move(shape);
    v.shape_known = true;
    return g.add_value(std::move(v));
  };
  ValueId x = value("x", {1, 64, 56, 56}), w = value("w", {256, 2, 1, 1}), y = value("y", {1, 256, 56, 56});
  ValueId w3 = value("w3", {64, 64, 3, 3}), y3 = value("y3", {1, 64, 28, 28});
  ValueId p = value("p", {1, 64, 14, 14}), f = value("f", {1, 2048}), fw = value("fw", {2048, 1000}),
          o = value("o", {1, 1000});
  Node grouped{"/a/Conv", "Conv", "", 17, {x, w}, {y}, {}};
  grouped.attrs["group"] = Attribute::of_int(32);
  Node strided{"/b/Conv", "Conv", "", 17, {x, w3}, {y3}, {}};
  strided.attrs["kernel_shape"] = Attribute::of_ints({3, 3});
  strided.attrs["strides"] = Attribute::of_ints({2, 2});
  Node pool{"/p/MaxPool", "MaxPool", "", 17, {y3}, {p}, {}};
  pool.attrs["kernel_shape"] = Attribute::of_ints({3, 3});
  pool.attrs["strides"] = Attribute::of_ints({2, 2});
  Node gemm{"/fc/Gemm", "Gemm", "", 17, {f, fw}, {o}, {}};
  Node relu{"/r/Relu", "Relu", "", 17, {o}, {value("r", {1, 1000})}, {}};
  NodeId a = g.add_node(grouped), b = g.add_node(strided), c = g.add_node(pool), d = g.add_node(gemm),
         e = g.add_node(relu);
  EXPECT_EQ(op_label(g, a), "Conv 1×1 · 256 g32");  // kernel from the weight's shape
  EXPECT_EQ(op_label(g, b), "Conv 3×3 /2 · 64");
  EXPECT_EQ(op_label(g, c), "MaxPool 3×3 /2");
  EXPECT_EQ(op_label(g, d), "Gemm · 1000");
  EXPECT_EQ(op_label(g, e), "Relu");
}

}  // namespace
}  // namespace collage
