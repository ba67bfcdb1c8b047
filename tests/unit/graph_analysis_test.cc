#include "core/ir/graph_analysis.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/ir/index_set.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

NodeId node_named(const Graph& g, const std::string& output) {
  for (NodeId i = 0; i < g.num_nodes(); ++i)
    if (g.value(g.node(i).outputs[0]).name == output) return i;
  throw std::runtime_error("no node producing " + output);
}

// x -> a(Relu) -> b(Neg), c(Exp) -> d(Add b c) -> e(Sigmoid); a diamond.
Graph diamond() {
  OnnxTestModel m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"a"});
  m.node("Neg", {"a"}, {"b"});
  m.node("Exp", {"a"}, {"c"});
  m.node("Add", {"b", "c"}, {"d"});
  m.node("Sigmoid", {"d"}, {"e"});
  m.output("e");
  return import_model(m);
}

TEST(Dominators, Diamond) {
  Graph g = diamond();
  DominatorTrees t = dominator_trees(g);
  NodeId a = node_named(g, "a"), b = node_named(g, "b"), c = node_named(g, "c"), d = node_named(g, "d"),
         e = node_named(g, "e");
  EXPECT_EQ(t.idom[static_cast<size_t>(a)], kNoNode);
  EXPECT_EQ(t.idom[static_cast<size_t>(b)], a);
  EXPECT_EQ(t.idom[static_cast<size_t>(c)], a);
  EXPECT_EQ(t.idom[static_cast<size_t>(d)], a);  // neither branch alone dominates the join
  EXPECT_EQ(t.idom[static_cast<size_t>(e)], d);
  EXPECT_EQ(t.ipdom[static_cast<size_t>(a)], d);  // both branches meet at d
  EXPECT_EQ(t.ipdom[static_cast<size_t>(b)], d);
  EXPECT_EQ(t.ipdom[static_cast<size_t>(d)], e);
  EXPECT_EQ(t.ipdom[static_cast<size_t>(e)], kNoNode);
  EXPECT_TRUE(dominates(t.idom, a, e));
  EXPECT_FALSE(dominates(t.idom, b, d));
}

TEST(Dominators, SideOutputPostDominatedByExitOnly) {
  OnnxTestModel m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"a"});
  m.node("Neg", {"a"}, {"b"});
  m.output("a");  // a feeds the graph output directly
  m.output("b");
  Graph g = import_model(m);
  DominatorTrees t = dominator_trees(g);
  EXPECT_EQ(t.ipdom[static_cast<size_t>(node_named(g, "a"))], kNoNode);
}

TEST(Dominators, PostDfsOrderPutsProducersFirst) {
  Graph g = diamond();
  NodeEdges e = node_edges(g);
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    for (NodeId p : e.preds[static_cast<size_t>(n)]) EXPECT_LT(p, n);
}

TEST(IndexSetTest, SetAlgebra) {
  IndexSet a(130, {0, 5, 64, 129});
  IndexSet b(130, {5, 6, 129});
  EXPECT_EQ(a.popcount(), 4u);
  EXPECT_TRUE(a.contains(129));
  EXPECT_FALSE(a.contains(128));
  EXPECT_FALSE(a.contains(500));
  EXPECT_EQ((a & b).indices(), (std::vector<size_t>{5, 129}));
  EXPECT_EQ((a | b).indices(), (std::vector<size_t>{0, 5, 6, 64, 129}));
  EXPECT_EQ((a - b).indices(), (std::vector<size_t>{0, 64}));
  EXPECT_TRUE(a.intersects(b));
  EXPECT_FALSE((a - b).intersects(b));
  EXPECT_TRUE((a & b).is_subset_of(a));
  EXPECT_FALSE(a.is_subset_of(b));
  EXPECT_EQ(a.first_outside(), 1u);
  EXPECT_EQ(IndexSet(3, {0, 1, 2}).first_outside(), 3u);
  EXPECT_EQ(a.to_string(), "{0,5,64,129}");
  EXPECT_EQ(a.hash(), IndexSet(130, {129, 64, 5, 0}).hash());
  IndexSet c = a;
  c.remove(64);
  EXPECT_FALSE(c == a);
}

TEST(NodeCostTest, ConvFlopsFromShapes) {
  OnnxTestModel m(13);
  m.input("x", {1, 3, 8, 8});
  m.initializer("w", Tensor(DType::Float32, {4, 3, 3, 3}));
  auto& conv = m.node("Conv", {"x", "w"}, {"y"});
  OnnxTestModel::attr_ints(conv, "pads", {1, 1, 1, 1});
  m.output("y");
  Graph g = import_model(m);
  // 4x8x8 outputs, each 3*3*3 multiply-adds.
  EXPECT_DOUBLE_EQ(node_cost(g, 0).flops, 2.0 * 4 * 8 * 8 * 27);
  EXPECT_DOUBLE_EQ(node_cost(g, 0).bytes_written, 4.0 * 4 * 8 * 8);
}

TEST(ExecutorTest, MemoryPlanReusesBuffersOfDeadValues) {
  // A chain of 8 element-wise ops: only two intermediate buffers need be live at once.
  OnnxTestModel m(13);
  m.input("x", {256, 256});
  std::string prev = "x";
  for (int i = 0; i < 8; ++i) {
    std::string out = i == 7 ? std::string("y") : std::string("t").append(std::to_string(i));
    m.node(i % 2 ? "Relu" : "Neg", {prev}, {out});
    prev = out;
  }
  m.output("y");
  Graph g = import_model(m);
  Tensor x(DType::Float32, {256, 256});
  for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  const size_t buffer = 256 * 256 * 4;

  Executor reuse(g, native::native_steps(g));
  auto y = reuse.run({x});
  Executor fresh(g, native::native_steps(g));
  fresh.set_reuse_buffers(false);
  auto y2 = fresh.run({x});
  EXPECT_EQ(std::vector<float>(y[0].data<float>(), y[0].data<float>() + y[0].size()),
            std::vector<float>(y2[0].data<float>(), y2[0].data<float>() + y2[0].size()));
  EXPECT_LE(reuse.memory_stats().peak_live_bytes, 2 * buffer);
  EXPECT_LE(reuse.memory_stats().allocated_bytes, 2 * buffer);
  EXPECT_GE(reuse.memory_stats().reused_allocations, 6u);
  EXPECT_EQ(fresh.memory_stats().allocated_bytes, 8 * buffer);
  // The pool outlives a run: the next run allocates only the output the caller keeps.
  auto y3 = reuse.run({x});
  EXPECT_LE(reuse.memory_stats().allocated_bytes, buffer);
  EXPECT_EQ(std::memcmp(y3[0].raw(), y[0].raw(), y[0].bytes()), 0);
  // Neg/Relu alternate; the result is relu(-x) after the odd count of negations... computed directly:
  for (int64_t i = 0; i < x.size(); ++i) {
    float v = x.data<float>()[i];
    for (int k = 0; k < 8; ++k) v = k % 2 ? std::max(v, 0.0f) : -v;
    ASSERT_EQ(y[0].data<float>()[i], v);
  }
}

TEST(ExecutorTest, RejectsWrongInputs) {
  Graph g = diamond();
  Executor ex(g, native::native_steps(g));
  EXPECT_THROW(ex.run(std::vector<Tensor>{}), Error);
  EXPECT_THROW(ex.run({Tensor(DType::Float32, {5})}), Error);
  EXPECT_THROW(ex.run({Tensor(DType::Int64, {4})}), Error);
  EXPECT_THROW(ex.run(std::map<std::string, Tensor>{{"nope", Tensor(DType::Float32, {4})}}), Error);
}

}  // namespace
}  // namespace collage
