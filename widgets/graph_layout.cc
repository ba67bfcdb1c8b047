#include "widgets/graph_layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <mutex>

#include "core/ir/graph_analysis.h"

namespace collage {

namespace {

constexpr double kNodeWidth = 110, kNodeHeight = 32;

GraphLayout layered(const Graph& g) {
  GraphLayout l;
  l.engine = "layered";
  NodeEdges e = node_edges(g);
  std::vector<int> rank(g.nodes.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (NodeId p : e.preds[n]) rank[n] = std::max(rank[n], rank[static_cast<size_t>(p)] + 1);
  std::vector<int> slot(g.nodes.size(), 0), used;
  l.nodes.resize(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    size_t r = static_cast<size_t>(rank[n]);
    if (used.size() <= r) used.resize(r + 1, 0);
    slot[n] = used[r]++;
    l.nodes[n] = {60 + slot[n] * (kNodeWidth + 20), 30 + rank[n] * (kNodeHeight + 40), kNodeWidth,
                  kNodeHeight};
    l.width = std::max(l.width, l.nodes[n].x + kNodeWidth);
    l.height = std::max(l.height, l.nodes[n].y + kNodeHeight);
  }
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (NodeId s : e.succs[n]) {
      const LayoutNode &a = l.nodes[n], &b = l.nodes[static_cast<size_t>(s)];
      l.edges.push_back(
          {static_cast<NodeId>(n), s, {{a.x, a.y + a.height / 2}, {b.x, b.y - b.height / 2}}, false});
    }
  return l;
}

std::mutex graphviz_mutex;  // graphviz keeps global state: one layout at a time

// One context for the process: freeing and recreating contexts makes graphviz's
// pango plugin read a freed font name (seen under AddressSanitizer).
GVC_t* graphviz_context() {
  static GVC_t* gvc = gvContext();
  return gvc;
}

}  // namespace

GraphLayout layout_graph(const Graph& g, int dot_limit) {
  if (g.num_nodes() > dot_limit) return layered(g);
  std::lock_guard<std::mutex> lock(graphviz_mutex);
  GVC_t* gvc = graphviz_context();
  Agraph_t* ag = agopen(const_cast<char*>("g"), Agdirected, nullptr);
  agattr(ag, AGRAPH, const_cast<char*>("rankdir"), const_cast<char*>("TB"));
  agattr(ag, AGRAPH, const_cast<char*>("nodesep"), const_cast<char*>("0.25"));
  agattr(ag, AGRAPH, const_cast<char*>("ranksep"), const_cast<char*>("0.35"));
  agattr(ag, AGNODE, const_cast<char*>("shape"), const_cast<char*>("box"));
  agattr(ag, AGNODE, const_cast<char*>("label"),
         const_cast<char*>(""));  // the view draws labels; no font work here
  agattr(ag, AGNODE, const_cast<char*>("fixedsize"), const_cast<char*>("true"));
  agattr(ag, AGNODE, const_cast<char*>("width"), const_cast<char*>("1.5"));
  agattr(ag, AGNODE, const_cast<char*>("height"), const_cast<char*>("0.45"));
  std::vector<Agnode_t*> nodes;
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    nodes.push_back(agnode(ag, const_cast<char*>(std::to_string(n).c_str()), 1));
  NodeEdges e = node_edges(g);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (NodeId s : e.succs[n]) agedge(ag, nodes[n], nodes[static_cast<size_t>(s)], nullptr, 1);
  gvLayout(gvc, ag, "dot");
  GraphLayout l;
  l.engine = "dot";
  boxf bb = GD_bb(ag);
  l.width = bb.UR.x - bb.LL.x;
  l.height = bb.UR.y - bb.LL.y;
  auto flip = [&](pointf p) {
    return std::make_pair(p.x - bb.LL.x, bb.UR.y - p.y);
  };  // graphviz y grows upwards
  l.nodes.resize(g.nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    auto [x, y] = flip(ND_coord(nodes[n]));
    l.nodes[n] = {x, y, ND_width(nodes[n]) * 72, ND_height(nodes[n]) * 72};
  }
  for (size_t n = 0; n < nodes.size(); ++n)
    for (Agedge_t* edge = agfstout(ag, nodes[n]); edge; edge = agnxtout(ag, edge)) {
      LayoutEdge le;
      le.from = static_cast<NodeId>(n);
      le.to = static_cast<NodeId>(std::stoi(agnameof(aghead(edge))));
      if (ED_spl(edge) && ED_spl(edge)->size > 0) {
        const bezier& bz = ED_spl(edge)->list[0];
        for (int i = 0; i < bz.size; ++i) le.points.push_back(flip(bz.list[i]));
        le.bezier = (bz.size - 1) % 3 == 0;
      }
      l.edges.push_back(std::move(le));
    }
  gvFreeLayout(gvc, ag);
  agclose(ag);
  return l;
}

}  // namespace collage
