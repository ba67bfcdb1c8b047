#include "app/explorer/model/graph_layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <mutex>

#include "core/ir/graph_analysis.h"

namespace collage {

namespace {

// Each box's rank by longest path from the sources in id order; an edge to a lower id (a
// cycle through collapsed boxes) is ignored.
std::vector<int> longest_path_ranks(size_t n, const std::vector<std::pair<int, int>>& edges) {
  std::vector<std::vector<int>> preds(n);
  for (auto [from, to] : edges)
    if (from < to) preds[static_cast<size_t>(to)].push_back(from);
  std::vector<int> rank(n, 0);
  for (size_t v = 0; v < n; ++v)
    for (int p : preds[v]) rank[v] = std::max(rank[v], rank[static_cast<size_t>(p)] + 1);
  return rank;
}

// Ranks by longest path, each rank a centred row.
GraphLayout layered(const LayoutRequest& request) {
  constexpr double kGapX = 20, kGapY = 40, kMargin = 20;
  GraphLayout l;
  l.engine = "layered";
  const size_t n = request.sizes.size();
  const std::vector<int> rank = longest_path_ranks(n, request.edges);
  const int ranks = n ? *std::max_element(rank.begin(), rank.end()) + 1 : 0;
  std::vector<double> row_width(static_cast<size_t>(ranks), 0), row_height(static_cast<size_t>(ranks), 0);
  for (size_t v = 0; v < n; ++v) {
    size_t r = static_cast<size_t>(rank[v]);
    row_width[r] += request.sizes[v].first + (row_width[r] > 0 ? kGapX : 0);
    row_height[r] = std::max(row_height[r], request.sizes[v].second);
  }
  const double width = ranks ? *std::max_element(row_width.begin(), row_width.end()) : 0;
  std::vector<double> row_y(static_cast<size_t>(ranks), kMargin), next_x(static_cast<size_t>(ranks));
  for (size_t r = 0; r < row_y.size(); ++r) {
    if (r > 0) row_y[r] = row_y[r - 1] + row_height[r - 1] + kGapY;
    next_x[r] = kMargin + (width - row_width[r]) / 2;
  }
  l.nodes.resize(n);
  for (size_t v = 0; v < n; ++v) {
    size_t r = static_cast<size_t>(rank[v]);
    auto [w, h] = request.sizes[v];
    l.nodes[v] = {next_x[r] + w / 2, row_y[r] + row_height[r] / 2, w, h};
    next_x[r] += w + kGapX;
  }
  l.width = width + 2 * kMargin;
  l.height = ranks ? row_y.back() + row_height.back() + kMargin : 0;
  for (auto [from, to] : request.edges) {
    const LayoutNode &a = l.nodes[static_cast<size_t>(from)], &b = l.nodes[static_cast<size_t>(to)];
    l.edges.push_back({from, to, {{a.x, a.y + a.height / 2}, {b.x, b.y - b.height / 2}}, false});
  }
  return l;
}

// The boxes dot adds where an edge spans ranks, one per rank crossed: at most what the
// better of two rankings adds, each rank as early as its producers allow or as late as its
// consumers do (dot ranks to the fewest). Dense skip edges (DenseNet concatenating every
// earlier layer) make tens of thousands, and dot's positioning is superlinear in them.
size_t spanned_ranks(const LayoutRequest& request) {
  const size_t n = request.sizes.size();
  const int last = static_cast<int>(n) - 1;
  std::vector<std::pair<int, int>> reversed;  // ids mirrored: ranks counted up from the sinks
  for (auto [from, to] : request.edges) reversed.emplace_back(last - to, last - from);
  const std::vector<int> early = longest_path_ranks(n, request.edges), late = longest_path_ranks(n, reversed);
  auto span = [](int a, int b) { return static_cast<size_t>(b - a - 1); };
  size_t by_early = 0, by_late = 0;
  for (auto [from, to] : request.edges)
    if (from < to) {
      by_early += span(early[static_cast<size_t>(from)], early[static_cast<size_t>(to)]);
      by_late += span(late[static_cast<size_t>(last - to)], late[static_cast<size_t>(last - from)]);
    }
  return std::min(by_early, by_late);
}

std::mutex graphviz_mutex;  // graphviz keeps global state: one layout at a time

// One context for the process: freeing and recreating contexts makes graphviz's
// pango plugin read a freed font name (seen under AddressSanitizer).
GVC_t* graphviz_context() {
  static GVC_t* gvc = gvContext();
  return gvc;
}

char* text(const char* s) { return const_cast<char*>(s); }

}  // namespace

GraphLayout layout_dag(const LayoutRequest& request, int dot_limit) {
  if (static_cast<int>(request.sizes.size()) > dot_limit) return layered(request);
  const size_t spanned = spanned_ranks(request);
  if (spanned > kBoundedDotSpan) return layered(request);
  const bool bounded = spanned > kExactDotSpan;
  std::lock_guard<std::mutex> lock(graphviz_mutex);
  GVC_t* gvc = graphviz_context();
  Agraph_t* ag = agopen(text("g"), Agdirected, nullptr);
  agattr(ag, AGRAPH, text("rankdir"), text("TB"));
  agattr(ag, AGRAPH, text("nodesep"), text("0.25"));
  agattr(ag, AGRAPH, text("ranksep"), text("0.35"));
  if (bounded) {  // one crossing-reduction pass at a tenth of its effort, positions from as many
                  // network-simplex iterations as boxes: DenseNet-121 in about 1 s, not 54 s
    agattr(ag, AGRAPH, text("mclimit"), text("0.1"));
    agattr(ag, AGRAPH, text("remincross"), text("false"));
    agattr(ag, AGRAPH, text("nslimit"), text("1"));
  }
  agattr(ag, AGNODE, text("shape"), text("box"));
  agattr(ag, AGNODE, text("label"), text(""));  // the view draws labels; no font work here
  agattr(ag, AGNODE, text("fixedsize"), text("true"));
  Agsym_t* width = agattr(ag, AGNODE, text("width"), text("1.7"));
  Agsym_t* height = agattr(ag, AGNODE, text("height"), text("0.45"));
  std::vector<Agnode_t*> nodes;
  for (size_t v = 0; v < request.sizes.size(); ++v) {
    Agnode_t* node = agnode(ag, text(std::to_string(v).c_str()), 1);
    agxset(node, width, text(std::to_string(request.sizes[v].first / 72).c_str()));  // inches
    agxset(node, height, text(std::to_string(request.sizes[v].second / 72).c_str()));
    nodes.push_back(node);
  }
  std::vector<Agedge_t*> edges;
  for (auto [from, to] : request.edges)
    edges.push_back(agedge(ag, nodes[static_cast<size_t>(from)], nodes[static_cast<size_t>(to)], nullptr, 1));
  gvLayout(gvc, ag, "dot");
  GraphLayout l;
  l.engine = bounded ? "bounded dot" : "dot";
  boxf bb = GD_bb(ag);
  l.width = bb.UR.x - bb.LL.x;
  l.height = bb.UR.y - bb.LL.y;
  auto flip = [&](pointf p) {
    return std::make_pair(p.x - bb.LL.x, bb.UR.y - p.y);
  };  // graphviz y grows upwards
  l.nodes.resize(nodes.size());
  for (size_t v = 0; v < nodes.size(); ++v) {
    auto [x, y] = flip(ND_coord(nodes[v]));
    l.nodes[v] = {x, y, ND_width(nodes[v]) * 72, ND_height(nodes[v]) * 72};
  }
  for (size_t e = 0; e < edges.size(); ++e) {
    LayoutEdge le;
    le.from = request.edges[e].first;
    le.to = request.edges[e].second;
    if (ED_spl(edges[e]) && ED_spl(edges[e])->size > 0) {
      const bezier& bz = ED_spl(edges[e])->list[0];
      for (int i = 0; i < bz.size; ++i) le.points.push_back(flip(bz.list[i]));
      le.bezier = (bz.size - 1) % 3 == 0;
    }
    l.edges.push_back(std::move(le));
  }
  gvFreeLayout(gvc, ag);
  agclose(ag);
  return l;
}

GraphLayout layout_graph(const Graph& g, int dot_limit) {
  LayoutRequest request;
  request.sizes.assign(g.nodes.size(), {kNodeBoxWidth, kNodeBoxHeight});
  NodeEdges e = node_edges(g);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (NodeId s : e.succs[n]) request.edges.emplace_back(static_cast<int>(n), s);
  return layout_dag(request, dot_limit);
}

}  // namespace collage
