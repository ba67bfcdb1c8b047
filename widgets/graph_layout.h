// Graph layout for the explorer: graphviz `dot` (top to bottom) for graphs up
// to a few thousand nodes, a fast layered layout beyond, computed off the GUI
// thread. Plain structs: no Qt, no graphviz types leak out.
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
  std::string engine;  // "dot" or "layered"
};

// dot up to `dot_limit` nodes, layered beyond (dot is superlinear on large graphs).
GraphLayout layout_graph(const Graph& graph, int dot_limit = 1500);

}  // namespace collage
