// Graph layout for the explorer: graphviz `dot` (top to bottom) for graphs up to a few
// thousand nodes, a fast layered layout beyond (edges that skip rows routed beside them, clear
// of every box), computed off the GUI thread. Plain structs: no Qt, no graphviz types leak
// out. `layout_dag` lays out any boxes and edges (the graph with collapsed scopes: boxes of
// two sizes, edges that may form cycles); `layout_graph` is it on a graph's nodes. Part of the
// explorer's model: the controller lays out a loaded graph, the graph view
// (widgets/graph_view.h) a collapsed one.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace collage {

struct LayoutNode {
  double x = 0, y = 0;  // centre, points, y grows downwards
  double width = 0, height = 0;
};

struct LayoutEdge {
  NodeId from = kNoNode, to = kNoNode;
  std::vector<std::pair<double, double>> points;  // polyline/bezier control points
  bool bezier = false;                            // points are cubic bezier segments (1 + 3k points)
};

struct GraphLayout {
  std::vector<LayoutNode> nodes;  // by node id
  std::vector<LayoutEdge> edges;
  double width = 0, height = 0;
  std::string engine;  // "dot", "bounded dot" or "layered"
};

// The size of a node box in points (the view draws labels inside it).
constexpr double kNodeBoxWidth = 122, kNodeBoxHeight = 32;

struct LayoutRequest {
  std::vector<std::pair<double, double>> sizes;  // width, height of each box, points
  std::vector<std::pair<int, int>> edges;        // from, to (box indices); ids ascending ≈ topological
};

// Past these many ranks spanned by edges (the boxes dot adds to route them), dot runs bounded
// (fewer crossing-reduction passes, a capped positioning): its time grows superlinearly with
// them (DenseNet-121's 23,000 took 54 s exact, 1 s bounded; it now goes by the rule below).
// Past the second, the layered layout: bounded dot took half a minute on DenseNet-201's shape
// (180,000) and graphviz crashed on a denser one.
constexpr size_t kExactDotSpan = 5000, kBoundedDotSpan = 40000;
// Past this many spanned ranks per box the graph is a dense skip structure (DenseNet's blocks
// at any collapse depth: 45-60; transformers and convolution nets: under 5) and gets the
// layered layout at any size: its ops stay one straight column with the skip edges in lanes
// beside it, where dot zig-zags the column to uncross them.
constexpr size_t kDenseSpanPerBox = 20;

// dot up to `dot_limit` boxes, layered beyond (dot is superlinear on large graphs); within
// it, bounded or layered as above, and layered for a dense skip structure.
// The result's nodes are by box index, its edges in request order (from/to are box indices).
GraphLayout layout_dag(const LayoutRequest& request, int dot_limit = 1500);
// The graph's nodes as boxes of kNodeBox size, one edge per producer-consumer pair.
GraphLayout layout_graph(const Graph& graph, int dot_limit = 1500);

}  // namespace collage
