#include "app/explorer/model/graph_layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cmath>
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

using Point = std::pair<double, double>;

// A route's corners rounded: cubic bezier points (1 + 3k) through `route`, each corner cut by
// up to `radius` and bent through it, the straight parts as cubics along their line.
std::vector<Point> rounded(const std::vector<Point>& route, double radius) {
  auto lerp = [](Point a, Point b, double t) {
    return Point{a.first + (b.first - a.first) * t, a.second + (b.second - a.second) * t};
  };
  auto length = [](Point a, Point b) { return std::hypot(b.first - a.first, b.second - a.second); };
  std::vector<Point> out = {route.front()};
  auto straight = [&](Point to) {
    Point from = out.back();
    out.insert(out.end(), {lerp(from, to, 1.0 / 3), lerp(from, to, 2.0 / 3), to});
  };
  for (size_t i = 1; i + 1 < route.size(); ++i) {
    const Point prev = route[i - 1], corner = route[i], next = route[i + 1];
    const double in = length(prev, corner), out_len = length(corner, next);
    const double r = std::min({radius, in / 2, out_len / 2});
    if (r <= 0) continue;  // a zero-length leg: no corner to round
    const Point start = lerp(corner, prev, r / in), end = lerp(corner, next, r / out_len);
    straight(start);
    out.insert(out.end(), {lerp(start, corner, 0.55), lerp(end, corner, 0.55), end});
  }
  straight(route.back());
  return out;
}

// The maximum of `values` over any index range in O(1), after O(n log n) (a sparse table):
// routing stays O(1) an edge whatever the edges span.
class RangeMax {
 public:
  explicit RangeMax(std::vector<double> values) : levels_{std::move(values)} {
    for (size_t k = 1; (size_t{1} << k) <= levels_[0].size(); ++k) {
      const std::vector<double>& prev = levels_[k - 1];
      std::vector<double> level(levels_[0].size() - (size_t{1} << k) + 1);
      for (size_t i = 0; i < level.size(); ++i)
        level[i] = std::max(prev[i], prev[i + (size_t{1} << (k - 1))]);
      levels_.push_back(std::move(level));
    }
  }
  double over(size_t lo, size_t hi) const {  // lo..hi inclusive, lo <= hi
    size_t k = 0;
    while ((size_t{2} << k) <= hi - lo + 1) ++k;
    return std::max(levels_[k][lo], levels_[k][hi + 1 - (size_t{1} << k)]);
  }

 private:
  std::vector<std::vector<double>> levels_;  // levels_[k][i]: the maximum over i .. i + 2^k - 1
};

// Ranks by longest path, each rank a centred row. An edge is a straight line where it
// clears the boxes of the rows it passes (always to the next rank). Any other (a skip
// connection over a column of ops, a cycle's back edge) is routed beside the rows: down
// into the gap under its source, out to a lane past every row it spans on the nearer
// side, along it, and back through the gap over its target. Longer edges take lanes
// further out, so a dense block's concatenations read as nested arcs, not as lines
// hidden behind the boxes of its column.
GraphLayout layered(const LayoutRequest& request) {
  constexpr double kGapX = 20, kGapY = 40, kMargin = 20;
  constexpr double kLaneGap = 16, kLaneStep = 24, kCorner = 8;
  constexpr size_t kClearanceRows = 256;  // a longer edge is routed without checking its line
  GraphLayout l;
  l.engine = "layered";
  const size_t n = request.sizes.size();
  const std::vector<int> rank = longest_path_ranks(n, request.edges);
  const size_t ranks = n ? static_cast<size_t>(*std::max_element(rank.begin(), rank.end())) + 1 : 0;
  std::vector<double> row_width(ranks, 0), row_height(ranks, 0);
  for (size_t v = 0; v < n; ++v) {
    size_t r = static_cast<size_t>(rank[v]);
    row_width[r] += request.sizes[v].first + (row_width[r] > 0 ? kGapX : 0);
    row_height[r] = std::max(row_height[r], request.sizes[v].second);
  }
  const double width = ranks ? *std::max_element(row_width.begin(), row_width.end()) : 0;
  const double centre = kMargin + width / 2;
  std::vector<double> row_y(ranks, kMargin), next_x(ranks);
  for (size_t r = 0; r < ranks; ++r) {
    if (r > 0) row_y[r] = row_y[r - 1] + row_height[r - 1] + kGapY;
    next_x[r] = centre - row_width[r] / 2;
  }
  l.nodes.resize(n);
  std::vector<std::vector<std::pair<double, double>>> row_boxes(ranks);  // left, right; in x order
  for (size_t v = 0; v < n; ++v) {
    size_t r = static_cast<size_t>(rank[v]);
    auto [w, h] = request.sizes[v];
    l.nodes[v] = {next_x[r] + w / 2, row_y[r] + row_height[r] / 2, w, h};
    row_boxes[r].emplace_back(next_x[r], next_x[r] + w);
    next_x[r] += w + kGapX;
  }
  l.width = width + 2 * kMargin;
  l.height = ranks ? row_y.back() + row_height.back() + kMargin : 0;
  // Rows are centred, so a lane clears both sides at the widest half-width of the rows it passes.
  const RangeMax widest_half([&] {
    std::vector<double> half(ranks);
    for (size_t r = 0; r < ranks; ++r) half[r] = row_width[r] / 2;
    return half;
  }());
  // Whether the straight line a -> b (ranks ra < rb) passes the rows between clear of their boxes.
  auto clears = [&](Point a, Point b, size_t ra, size_t rb) {
    if (rb - ra - 1 > kClearanceRows) return false;
    auto x_at = [&](double y) {
      return a.first + (b.first - a.first) * (y - a.second) / (b.second - a.second);
    };
    for (size_t r = ra + 1; r < rb; ++r) {
      const double x1 = x_at(row_y[r]), x2 = x_at(row_y[r] + row_height[r]);
      const double lo = std::min(x1, x2) - 2, hi = std::max(x1, x2) + 2;
      auto box = std::lower_bound(row_boxes[r].begin(), row_boxes[r].end(), lo,
                                  [](const std::pair<double, double>& b, double x) { return b.second < x; });
      if (box != row_boxes[r].end() && box->first <= hi) return false;
    }
    return true;
  };
  double left_edge = 0;  // the leftmost lane, to shift the picture right of the margin
  for (auto [from, to] : request.edges) {
    const LayoutNode &a = l.nodes[static_cast<size_t>(from)], &b = l.nodes[static_cast<size_t>(to)];
    const Point out = {a.x, a.y + a.height / 2}, in = {b.x, b.y - b.height / 2};
    const size_t ra = static_cast<size_t>(rank[static_cast<size_t>(from)]),
                 rb = static_cast<size_t>(rank[static_cast<size_t>(to)]);
    if (ra < rb && clears(out, in, ra, rb)) {
      l.edges.push_back({from, to, {out, in}, false});
      continue;
    }
    const size_t span = ra < rb ? rb - ra : ra - rb + 1;
    const double reach = widest_half.over(std::min(ra, rb), std::max(ra, rb)) + kLaneGap +
                         kLaneStep * std::sqrt(static_cast<double>(span));
    const double side = out.first + in.first >= 2 * centre ? 1 : -1;  // the nearer side
    const double lane = centre + side * reach;
    const double below = row_y[ra] + row_height[ra] + kGapY / 2, above = row_y[rb] - kGapY / 2;
    l.edges.push_back(
        {from, to,
         rounded({out, {out.first, below}, {lane, below}, {lane, above}, {in.first, above}, in}, kCorner),
         true});
    l.width = std::max(l.width, lane + kMargin);
    left_edge = std::min(left_edge, lane - kMargin);
  }
  if (left_edge < 0) {  // lanes left of the rows: move everything right of them
    for (LayoutNode& v : l.nodes) v.x -= left_edge;
    for (LayoutEdge& e : l.edges)
      for (Point& p : e.points) p.first -= left_edge;
    l.width -= left_edge;
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
  if (spanned > kBoundedDotSpan || spanned > kDenseSpanPerBox * request.sizes.size()) return layered(request);
  const bool bounded = spanned > kExactDotSpan;
  std::lock_guard<std::mutex> lock(graphviz_mutex);
  GVC_t* gvc = graphviz_context();
  Agraph_t* ag = agopen(text("g"), Agdirected, nullptr);
  agattr(ag, AGRAPH, text("rankdir"), text("TB"));
  agattr(ag, AGRAPH, text("nodesep"), text("0.25"));
  agattr(ag, AGRAPH, text("ranksep"), text("0.35"));
  if (bounded) {  // one crossing-reduction pass at a tenth of its effort, positions from as many
                  // network-simplex iterations as boxes (DenseNet-121's shape: about 1 s, not 54 s)
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
