// QtTest (offscreen): the graph view on ResNet-50 (PyTorch names) with a synthetic
// placement whose expected numbers the test computes from the placement itself:
// Fit shows every node, the wheel zooms around the cursor, Z zooms to the
// selection, the minimap moves the view, collapsed scopes sum their nodes' share
// of kernel time and expand in place, kernel labels carry backend, ms and share,
// edges are marked exactly at backend boundaries, nodes and edges carry their
// shapes; a graph of dense skip edges gets a bounded layout.
#include "widgets/graph_view.h"

#include <QGraphicsItem>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "app/explorer/model/graph_layout.h"
#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "core/ir/graph_analysis.h"
#include "resources/samples/zoo.h"
#include "widgets/graph_items.h"
#include "widgets/minimap.h"

namespace {

namespace fs = std::filesystem;
using collage::Graph;
using collage::GraphView;
using collage::NodeId;
using collage::Placement;

// Kernels of one node, or two when a node feeds only the next and that has no other input;
// backends rotate over three, costs over seven values.
Placement synthetic_placement(const Graph& g) {
  collage::NodeEdges e = collage::node_edges(g);
  const char* backends[] = {"onednn", "xnnpack", "native"};
  Placement p;
  for (NodeId n = 0; n < g.num_nodes();) {
    collage::PlacedKernel k;
    k.nodes = {n};
    const size_t i = static_cast<size_t>(n);
    if (n + 1 < g.num_nodes() && e.succs[i] == std::vector<NodeId>{n + 1} && e.preds[i + 1].size() == 1)
      k.nodes.push_back(n + 1);
    k.backend = backends[p.kernels.size() % 3];
    k.label = "k" + std::to_string(p.kernels.size());
    k.cost = collage::Cost::of_ms(0.125 * static_cast<double>(p.kernels.size() % 7 + 1));
    n += static_cast<NodeId>(k.nodes.size());
    p.kernels.push_back(k);
  }
  return p;
}

// Dense blocks as torchvision's DenseNet exports them: each layer is a chain of six ops (one: the
// layer collapsed) on the previous concatenation, and its Concat takes the block's input and every earlier
// layer's output; a transition op between blocks.
collage::LayoutRequest dense_blocks(std::initializer_list<int> layers, int ops_per_layer = 6) {
  collage::LayoutRequest r;
  auto add = [&r] {
    r.sizes.emplace_back(collage::kNodeBoxWidth, collage::kNodeBoxHeight);
    return static_cast<int>(r.sizes.size()) - 1;
  };
  int input = add();
  for (int block_layers : layers) {
    std::vector<int> features = {input};
    int concat = input;
    for (int l = 0; l < block_layers; ++l) {
      int op = concat;
      for (int k = 0; k < ops_per_layer; ++k) {
        int next = add();
        r.edges.emplace_back(op, next);
        op = next;
      }
      features.push_back(op);
      concat = add();
      for (int f : features) r.edges.emplace_back(f, concat);
    }
    input = add();
    r.edges.emplace_back(concat, input);
  }
  return r;
}

// Boxes inside the layout and apart from each other, every edge pointing down.
void verify_drawable(const collage::GraphLayout& l, const collage::LayoutRequest& r) {
  QCOMPARE(l.nodes.size(), r.sizes.size());
  QCOMPARE(l.edges.size(), r.edges.size());
  std::vector<QRectF> boxes;
  for (const collage::LayoutNode& n : l.nodes) {
    QRectF box(n.x - n.width / 2, n.y - n.height / 2, n.width, n.height);
    QVERIFY(QRectF(0, 0, l.width, l.height).adjusted(-1, -1, 1, 1).contains(box));
    boxes.push_back(box.adjusted(1, 1, -1, -1));
  }
  for (size_t a = 0; a < boxes.size(); ++a)
    for (size_t b = a + 1; b < boxes.size(); ++b)
      QVERIFY2(!boxes[a].intersects(boxes[b]), qPrintable(QString("%1 %2").arg(a).arg(b)));
  for (auto [from, to] : r.edges)
    QVERIFY(l.nodes[static_cast<size_t>(from)].y < l.nodes[static_cast<size_t>(to)].y);
}

// Every edge inside the layout and clear of every box but its two ends, sampled along its
// path (eight points per bezier segment).
void verify_edges_clear_boxes(const collage::GraphLayout& l) {
  std::vector<std::pair<QRectF, size_t>> boxes;  // by top, each a little inside its box
  for (size_t v = 0; v < l.nodes.size(); ++v) {
    const collage::LayoutNode& n = l.nodes[v];
    boxes.push_back(
        {QRectF(n.x - n.width / 2, n.y - n.height / 2, n.width, n.height).adjusted(2, 2, -2, -2), v});
  }
  std::sort(boxes.begin(), boxes.end(),
            [](const auto& a, const auto& b) { return a.first.top() < b.first.top(); });
  double tallest = 0;
  for (const auto& b : boxes) tallest = std::max(tallest, b.first.height());
  const QRectF bounds = QRectF(0, 0, l.width, l.height).adjusted(-1, -1, 1, 1);
  for (const collage::LayoutEdge& e : l.edges) {
    std::vector<QPointF> samples;
    auto at = [&e](size_t i) { return QPointF(e.points[i].first, e.points[i].second); };
    if (e.bezier) {
      for (size_t i = 0; i + 3 < e.points.size(); i += 3)
        for (int k = 0; k <= 8; ++k) {
          const double t = k / 8.0, u = 1 - t;
          samples.push_back(u * u * u * at(i) + 3 * u * u * t * at(i + 1) + 3 * u * t * t * at(i + 2) +
                            t * t * t * at(i + 3));
        }
    } else {
      for (size_t i = 0; i + 1 < e.points.size(); ++i)
        for (int k = 0; k <= 8; ++k) samples.push_back(at(i) + (at(i + 1) - at(i)) * (k / 8.0));
    }
    for (const QPointF& p : samples) {
      QVERIFY2(bounds.contains(p),
               qPrintable(QString("edge %1->%2 leaves the layout").arg(e.from).arg(e.to)));
      auto first = std::lower_bound(boxes.begin(), boxes.end(), p.y() - tallest,
                                    [](const auto& b, double y) { return b.first.top() < y; });
      for (auto b = first; b != boxes.end() && b->first.top() <= p.y(); ++b)
        QVERIFY2(static_cast<int>(b->second) == e.from || static_cast<int>(b->second) == e.to ||
                     !b->first.contains(p),
                 qPrintable(QString("edge %1->%2 crosses box %3").arg(e.from).arg(e.to).arg(b->second)));
    }
  }
}

bool near(QPointF a, QPointF b, double tolerance) { return QLineF(a, b).length() <= tolerance; }

}  // namespace

class GraphViewTest : public QObject {
  Q_OBJECT

  Graph graph_;
  collage::GraphLayout layout_;
  Placement placement_;
  std::map<NodeId, size_t> kernel_of_;

  // The share of 4×4-pixel blocks whose mean colour differs by more than 48 in a channel:
  // the same picture drawn with and without antialiasing differs only in thin lines' pixels.
  static double image_difference(const QImage& a, const QImage& b) {
    if (a.size() != b.size()) return 1;
    const QSize blocks = a.size() / 4;
    const QImage x = a.convertToFormat(QImage::Format_RGB32)
                         .scaled(blocks, Qt::IgnoreAspectRatio, Qt::SmoothTransformation),
                 y = b.convertToFormat(QImage::Format_RGB32)
                         .scaled(blocks, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
    int64_t differ = 0;
    for (int r = 0; r < x.height(); ++r)
      for (int c = 0; c < x.width(); ++c) {
        const QRgb p = x.pixel(c, r), q = y.pixel(c, r);
        if (std::abs(qRed(p) - qRed(q)) > 48 || std::abs(qGreen(p) - qGreen(q)) > 48 ||
            std::abs(qBlue(p) - qBlue(q)) > 48)
          ++differ;
      }
    return static_cast<double>(differ) / (static_cast<double>(x.width()) * x.height());
  }

  // The boxes and nodes the graph shows collapsed to `depth` (core/ir/scope_tree.h).
  int units_at_depth(int depth, const Graph* graph = nullptr) const {
    const Graph& g = graph ? *graph : graph_;
    const collage::ScopeTree tree = collage::ScopeTree::of(g);
    return static_cast<int>(
        collage::collapse(tree, collage::node_edges(g), tree.collapsed_at_depth(depth)).units.size());
  }

  // The explorer's setting: opens readable, here in 900x650 px.
  void show_readable(GraphView& view) {
    view.set_open_readable(true);
    view.resize(900, 650);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
  }

  void show(GraphView& view) {
    view.resize(900, 650);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.set_graph(&graph_, layout_);
  }

 private slots:
  void initTestCase() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    auto path = fs::path(tmp.filePath("resnet50.onnx").toStdString());
    collage::samples::build_sample("resnet50").save(path.string());
    collage::ImportOptions o;
    o.evaluator = collage::native::node_evaluator();
    graph_ = collage::import_onnx_file(path.string(), o);
    fs::remove(path);
    layout_ = collage::layout_graph(graph_);
    placement_ = synthetic_placement(graph_);
    for (size_t k = 0; k < placement_.kernels.size(); ++k)
      for (NodeId n : placement_.kernels[k].nodes) kernel_of_[n] = k;
    QVERIFY(graph_.num_nodes() > 100);
  }

  void fit_shows_every_node() {
    for (int dot_limit : {100000, 10}) {  // graphviz, and the layered layout of large graphs
      GraphView view;
      view.resize(900, 650);
      view.show();
      QVERIFY(QTest::qWaitForWindowExposed(&view));
      view.set_graph(&graph_, collage::layout_graph(graph_, dot_limit));  // opens fitted
      QCOMPARE(view.node_count(), graph_.num_nodes());
      for (int pass = 0; pass < 2; ++pass) {
        const QRectF visible = view.visible_scene_rect();
        for (NodeId n = 0; n < graph_.num_nodes(); ++n)
          QVERIFY2(visible.contains(view.node_item(n)->sceneBoundingRect()), qPrintable(view.node_label(n)));
        view.zoom_by(3);
        QVERIFY(
            !view.visible_scene_rect().contains(view.node_item(0)->sceneBoundingRect()) ||
            !view.visible_scene_rect().contains(view.node_item(graph_.num_nodes() - 1)->sceneBoundingRect()));
        view.fit();
      }
    }
  }

  // dot's positioning grows superlinearly with the ranks long edges span: DenseNet-121's
  // 375 nodes took it 54 s. Such a graph gets a bounded dot; one far denser, the layered layout.
  void dense_skip_edges_get_the_layered_layout_and_long_ones_bounded_dot() {
    collage::LayoutRequest chain;
    for (int v = 0; v < 40; ++v) {
      chain.sizes.emplace_back(collage::kNodeBoxWidth, collage::kNodeBoxHeight);
      if (v > 0) chain.edges.emplace_back(v - 1, v);
    }
    collage::GraphLayout l = collage::layout_dag(chain);
    QCOMPARE(QString::fromStdString(l.engine), QString("dot"));
    verify_drawable(l, chain);
    // A long chain with a few edges over hundreds of its boxes (a mask fed to every layer):
    // many spanned ranks, few per box.
    collage::LayoutRequest long_skips = chain;
    for (int v = 40; v < 400; ++v) {
      long_skips.sizes.emplace_back(collage::kNodeBoxWidth, collage::kNodeBoxHeight);
      long_skips.edges.emplace_back(v - 1, v);
    }
    for (int k = 0; k < 20; ++k) long_skips.edges.emplace_back(5 * k, 399 - 5 * k);
    l = collage::layout_dag(long_skips);
    QCOMPARE(QString::fromStdString(l.engine), QString("bounded dot"));
    verify_drawable(l, long_skips);
    // Dense blocks at any size: a straight column with lanes, not dot's zig-zag.
    const collage::LayoutRequest densenet121 = dense_blocks({6, 12, 24, 16});
    l = collage::layout_dag(densenet121);
    QCOMPARE(QString::fromStdString(l.engine), QString("layered"));
    verify_drawable(l, densenet121);
    verify_edges_clear_boxes(l);
    // The same with each dense layer collapsed to one box, as the explorer opens it.
    const collage::LayoutRequest collapsed = dense_blocks({6, 12, 24, 16}, 1);
    l = collage::layout_dag(collapsed);
    QCOMPARE(QString::fromStdString(l.engine), QString("layered"));
    verify_edges_clear_boxes(l);
    const collage::LayoutRequest densenet201 = dense_blocks({6, 12, 48, 32});
    l = collage::layout_dag(densenet201);
    QCOMPARE(QString::fromStdString(l.engine), QString("layered"));
    verify_drawable(l, densenet201);
    verify_edges_clear_boxes(l);
  }

  void layered_layout_routes_skip_edges_beside_the_rows() {
    // One dense block, laid out in rows: its concatenation edges span ranks over a single
    // column of boxes, where straight lines would hide behind them.
    const collage::LayoutRequest block = dense_blocks({4});
    collage::GraphLayout l = collage::layout_dag(block, /*dot_limit=*/0);
    QCOMPARE(QString::fromStdString(l.engine), QString("layered"));
    verify_drawable(l, block);
    verify_edges_clear_boxes(l);
    double column_right = 0;
    for (const collage::LayoutNode& n : l.nodes) column_right = std::max(column_right, n.x + n.width / 2);
    std::map<double, int> lanes;  // an edge's rightmost point -> edges reaching it
    for (const collage::LayoutEdge& e : l.edges) {
      const collage::LayoutNode &a = l.nodes[static_cast<size_t>(e.from)],
                                &b = l.nodes[static_cast<size_t>(e.to)];
      const bool adjacent = b.y - a.y < 1.5 * (a.height + 40);  // the next row
      double right = 0;
      for (auto [x, y] : e.points) right = std::max(right, x);
      if (adjacent) {
        QVERIFY2(right <= column_right, "an edge to the next row leaves the column");
      } else {
        QVERIFY2(right > column_right,
                 qPrintable(QString("skip edge %1->%2 stays in the column").arg(e.from).arg(e.to)));
        ++lanes[right];
      }
    }
    QVERIFY2(lanes.size() >= 4, "skip edges of different lengths share one lane");  // spans 7, 14, 21, 28
    // Two columns side by side, each with an edge over four of its boxes: each goes round on
    // its own side, the left one left of every box.
    collage::LayoutRequest columns;
    for (int v = 0; v < 12; ++v) {  // even ids the left column, odd the right
      columns.sizes.emplace_back(collage::kNodeBoxWidth, collage::kNodeBoxHeight);
      if (v >= 2) columns.edges.emplace_back(v - 2, v);
    }
    columns.edges.emplace_back(0, 10);
    columns.edges.emplace_back(1, 11);
    l = collage::layout_dag(columns, 0);
    verify_drawable(l, columns);
    verify_edges_clear_boxes(l);
    double leftmost = l.width, rightmost = 0, skip_left = l.width, skip_right = 0;
    for (const collage::LayoutNode& n : l.nodes) {
      leftmost = std::min(leftmost, n.x - n.width / 2);
      rightmost = std::max(rightmost, n.x + n.width / 2);
    }
    for (auto [x, y] : l.edges[l.edges.size() - 2].points) skip_left = std::min(skip_left, x);
    for (auto [x, y] : l.edges.back().points) skip_right = std::max(skip_right, x);
    QVERIFY2(skip_left < leftmost && skip_right > rightmost,
             "a skip edge is not routed on its column's side");
    // A cycle's back edge (collapsed scopes make them) is routed too, and in the layout.
    collage::LayoutRequest cycle = block;
    cycle.edges.emplace_back(static_cast<int>(cycle.sizes.size()) - 1, 1);
    l = collage::layout_dag(cycle, 0);
    verify_edges_clear_boxes(l);
  }

  void wheel_zooms_around_the_cursor() {
    GraphView view;
    show(view);
    view.zoom_by(30);  // wider than the view too: a narrower scene is centred, not anchored
    QVERIFY(view.visible_scene_rect().width() < view.sceneRect().width());
    view.centerOn(view.node_item(graph_.num_nodes() / 2));
    const QPoint cursor(view.viewport()->width() / 3, view.viewport()->height() / 3);
    const QPointF under = view.mapToScene(cursor);
    const double zoom = view.zoom();
    QWheelEvent wheel(QPointF(cursor), QPointF(view.viewport()->mapToGlobal(cursor)), QPoint(),
                      QPoint(0, 120), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(view.viewport(), &wheel);
    QVERIFY(view.zoom() > zoom * 1.1);
    QVERIFY2(near(view.mapToScene(cursor), under, 2.0 / view.zoom() + 1), "the point under the cursor moved");
  }

  void zoom_to_selection_shows_the_selection_magnified() {
    GraphView view;
    show(view);
    const double fitted = view.zoom();
    std::vector<NodeId> picked = {40, 41, 43};
    view.highlight(picked);
    QTest::keyClick(view.viewport(), Qt::Key_Z);  // the key; the menu and toolbar call the same slot
    QVERIFY(view.zoom() > 2 * fitted);
    for (NodeId n : picked)
      QVERIFY(view.visible_scene_rect().contains(view.node_item(n)->sceneBoundingRect()));
    QVERIFY(!view.visible_scene_rect().contains(view.node_item(0)->sceneBoundingRect()));
  }

  void minimap_click_moves_the_view() {
    GraphView view;
    show(view);
    view.zoom_by(4);
    view.centerOn(view.node_item(0));
    QCoreApplication::processEvents();  // the minimap renders once the scene settles
    collage::Minimap* map = view.minimap();
    QVERIFY(map->isVisible());  // part of the graph is out of view
    // Far below, horizontally in the middle (a view wider than the scene cannot move sideways).
    const QPointF target(view.sceneRect().center().x(),
                         view.node_item(graph_.num_nodes() * 3 / 4)->sceneBoundingRect().center().y());
    const QPoint click = map->from_scene(target).toPoint();
    QVERIFY(!near(view.visible_scene_rect().center(), target, 100));
    QTest::mouseClick(map, Qt::LeftButton, Qt::NoModifier, click);
    // Centred on where the click lands in the scene (one minimap pixel is a few scene points).
    const QPointF landed = map->to_scene(click);
    QVERIFY2(near(view.visible_scene_rect().center(), landed, 3),
             qPrintable(QString("centre %1,%2 vs %3,%4")
                            .arg(view.visible_scene_rect().center().x())
                            .arg(view.visible_scene_rect().center().y())
                            .arg(landed.x())
                            .arg(landed.y())));
    view.fit();
    QVERIFY(!map->isVisible());  // everything in view: no overview needed
  }

  void labels_carry_kernel_shape_and_edges_their_tensors() {
    GraphView view;
    show(view);
    int convs = 0;
    for (NodeId n = 0; n < graph_.num_nodes(); ++n) {
      const collage::Node& node = graph_.node(n);
      if (node.op_type != "Conv") continue;
      ++convs;
      const auto& weight = graph_.value(node.inputs[1]).shape;  // [M, C/g, kH, kW]
      const auto& out = graph_.value(node.outputs[0]).shape;
      QString want = QString("Conv %1×%2").arg(weight[2]).arg(weight[3]);
      QVERIFY2(view.node_label(n).startsWith(want), qPrintable(view.node_label(n)));
      QVERIFY(view.node_label(n).contains(QString(" · %1").arg(out[1])));
      QCOMPARE(view.node_label(n).contains(" /2"), node.attr_ints("strides", {1, 1})[0] == 2);
    }
    QVERIFY(convs > 50);
    collage::NodeEdges e = collage::node_edges(graph_);
    const NodeId from = 0, to = e.succs[0][0];
    const collage::Value& v = graph_.value(graph_.node(from).outputs[0]);
    QString tip = view.edge_tooltip(from, to);
    QVERIFY(tip.contains(QString::fromStdString(v.name)));
    QVERIFY(tip.contains(collage::dtype_name(v.dtype)));
    QVERIFY(tip.contains(QString::fromStdString(collage::shape_to_string(v.shape))));
  }

  void kernel_labels_and_backend_boundaries() {
    GraphView view;
    show(view);
    view.set_placement(&placement_);
    double total = 0;
    for (const auto& k : placement_.kernels) total += k.cost.median_ms;
    int outlined = 0;
    for (size_t k = 0; k < placement_.kernels.size(); ++k) {
      const auto& kernel = placement_.kernels[k];
      outlined += kernel.nodes.size() > 1;
      QString label = view.kernel_label(k);
      QVERIFY(label.startsWith(QString::fromStdString(kernel.backend) + " "));
      QVERIFY2(label.contains(QString::number(kernel.cost.median_ms, 'f', 3) + " ms"), qPrintable(label));
      QVERIFY2(label.contains(QString::number(100 * kernel.cost.median_ms / total, 'f', 1) + "%"),
               qPrintable(label));
      if (kernel.nodes.size() == 1)  // drawn as the node's second line
        QCOMPARE(static_cast<collage::NodeItem*>(view.node_item(kernel.nodes[0]))->detail(), label);
    }
    QCOMPARE(view.group_count(), outlined);
    // Marked exactly where producer and consumer kernels run on different backends.
    collage::NodeEdges e = collage::node_edges(graph_);
    int marked = 0, plain = 0;
    for (NodeId a = 0; a < graph_.num_nodes(); ++a)
      for (NodeId b : e.succs[static_cast<size_t>(a)]) {
        const std::string& from = placement_.kernels[kernel_of_[a]].backend;
        const std::string& to = placement_.kernels[kernel_of_[b]].backend;
        QCOMPARE(view.edge_marked(a, b), from != to);
        if (from != to) {
          ++marked;
          QVERIFY(view.edge_tooltip(a, b).contains(QString::fromStdString(from + " → " + to)));
        } else {
          ++plain;
        }
      }
    QVERIFY(marked > 0 && plain > 0);
  }

  // A kernel the placement has no cost for says so; its share is not a 0% of a made-up time.
  void a_kernel_without_a_cost_is_labelled_no_cost() {
    collage::Placement p = placement_;
    p.kernels[0].cost = collage::PlacedKernel::no_placed_cost();
    double total = 0;
    for (const auto& k : p.kernels)
      if (k.cost.valid()) total += k.cost.median_ms;
    GraphView view;
    show(view);
    view.set_placement(&p);
    QCOMPARE(view.kernel_label(0), QString::fromStdString(p.kernels[0].backend) + " · no cost");
    const auto& other = p.kernels[1];
    QVERIFY2(view.kernel_label(1).contains(QString::number(100 * other.cost.median_ms / total, 'f', 1) + "%"),
             qPrintable(view.kernel_label(1)));
    view.set_coloring(GraphView::Coloring::CostHeatmap);  // recolours without a cost to draw from
    QCOMPARE(view.kernel_label(0), QString::fromStdString(p.kernels[0].backend) + " · no cost");
  }

  // Zoomed out on more nodes and edges than the threshold, the view paints one overview
  // image (drawn off the GUI thread) instead of the items: it shows what they show, and it
  // is drawn again when the colours change.
  void zoomed_out_it_paints_an_overview_of_what_the_items_show() {
    GraphView view;
    show(view);
    view.set_placement(&placement_);
    // Almost as far in as the overview goes, the boxes large on screen.
    view.zoom_by(0.9 * view.overview_limit() / view.zoom());
    QVERIFY(!view.overview_shown());  // ResNet-50 has fewer items than the default threshold
    const QImage items = view.viewport()->grab().toImage();
    view.set_overview_items(0);
    QVERIFY(view.overview_shown());
    QSignalSpy drawn(&view, &GraphView::overview_drawn);
    const QImage before = view.viewport()->grab().toImage();  // items, while it is drawn
    QVERIFY(drawn.wait(30000));
    QVERIFY(view.overview_ready());
    const QImage overview = view.viewport()->grab().toImage();
    QCOMPARE(image_difference(before, items), 0.0);
    QImage blank(items.size(), QImage::Format_RGB32);
    blank.fill(view.backgroundBrush().color());
    const double graph = image_difference(items, blank), differs = image_difference(overview, items);
    qInfo("the graph covers %.1f%% of the view; the overview differs on %.1f%%", 100 * graph, 100 * differs);
    QVERIFY(graph > 0.02);
    QVERIFY2(differs < 0.1 * graph, qPrintable(QString::number(differs)));
    view.set_coloring(GraphView::Coloring::CostHeatmap);
    QVERIFY(!view.overview_ready());
    view.viewport()->grab();
    QVERIFY(drawn.wait(30000));
    QVERIFY(image_difference(view.viewport()->grab().toImage(), overview) > 0.1 * graph);
    view.zoom_by(1.5);  // past the image's scale: the items again
    QVERIFY(!view.overview_shown());
  }

  void collapsed_scopes_sum_their_time_and_expand_in_place() {
    GraphView view;
    show(view);
    view.set_placement(&placement_);
    // The top-level scopes from the names: "/layer2/layer2.0/conv1/Conv" lies in /layer2.
    std::map<std::string, std::vector<NodeId>> top;
    for (NodeId n = 0; n < graph_.num_nodes(); ++n) {
      const std::string& name = graph_.node(n).name;
      size_t second = name.find('/', 1);
      if (name[0] == '/' && second != std::string::npos) top[name.substr(0, second)].push_back(n);
    }
    int boxes = 0, hidden = 0;
    for (const auto& [path, nodes] : top)
      if (nodes.size() >= 2) ++boxes, hidden += static_cast<int>(nodes.size());
    QSignalSpy relaid(&view, &GraphView::layout_changed);
    view.collapse_to_depth(1);
    QVERIFY(relaid.wait(30000));
    QCOMPARE(view.scope_box_count(), boxes);
    QCOMPARE(view.node_count(), graph_.num_nodes() - hidden);
    const int layer2 = view.scope_tree()->find("/layer2");
    QVERIFY(layer2 > 0);
    // Each kernel's time split evenly over its nodes; the box sums the shares of its nodes.
    double want = 0;
    for (NodeId n : top["/layer2"]) {
      const auto& k = placement_.kernels[kernel_of_[n]];
      want += k.cost.median_ms / static_cast<double>(k.nodes.size());
    }
    QString text = view.scope_text(layer2);
    QVERIFY2(text.contains(QString::number(want, 'f', 3) + " ms"), qPrintable(text));
    // A kernel inside a box has no label of its own.
    QVERIFY(view.kernel_label(kernel_of_[top["/layer2"][0]]).isEmpty());
    // Double-click opens it one level: its blocks become boxes, the other scopes stay closed.
    QGraphicsItem* box = view.scope_item(layer2);
    view.centerOn(box);
    QTest::mouseDClick(view.viewport(), Qt::LeftButton, Qt::NoModifier,
                       view.mapFromScene(box->sceneBoundingRect().center()));
    QVERIFY(relaid.wait(30000));
    QVERIFY(!view.is_collapsed(layer2));
    QVERIFY(view.scope_item(layer2) == nullptr);
    const auto& blocks = view.scope_tree()->scope(layer2).children;
    QVERIFY(!blocks.empty());
    for (int block : blocks) QVERIFY(view.scope_item(block) != nullptr);
    QCOMPARE(view.scope_box_count(), boxes - 1 + static_cast<int>(blocks.size()));
    QVERIFY(view.is_collapsed(view.scope_tree()->find("/layer3")));
    view.expand_all();
    QVERIFY(relaid.wait(30000));
    QCOMPARE(view.node_count(), graph_.num_nodes());
    QCOMPARE(view.scope_box_count(), 0);
    QVERIFY(!view.kernel_label(kernel_of_[top["/layer2"][0]]).isEmpty());
  }

  // PyTorch nests modules whose only content is one module (EfficientNet's features.3 ->
  // features.3.0 -> block): one double-click on the outer box opens through the chain.
  void double_click_opens_through_single_child_chains() {
    Graph chained = graph_;
    for (collage::Node& n : chained.nodes)
      if (n.name.rfind("/layer2/", 0) == 0) n.name = "/layer2/wrap/inner" + n.name.substr(7);
    GraphView view;
    view.resize(900, 650);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy relaid(&view, &GraphView::layout_changed);
    view.set_graph(&chained, layout_);
    view.collapse_to_depth(1);
    QVERIFY(relaid.wait(30000));
    const collage::ScopeTree& tree = *view.scope_tree();
    const int layer2 = tree.find("/layer2"), wrap = tree.find("/layer2/wrap"),
              inner = tree.find("/layer2/wrap/inner");
    QVERIFY(layer2 > 0 && wrap > 0 && inner > 0);
    QVERIFY(tree.scope(inner).children.size() > 1);
    QGraphicsItem* box = view.scope_item(layer2);
    QVERIFY(box);
    view.centerOn(box);
    relaid.clear();
    QTest::mouseDClick(view.viewport(), Qt::LeftButton, Qt::NoModifier,
                       view.mapFromScene(box->sceneBoundingRect().center()));
    QVERIFY(relaid.wait(30000));
    QCOMPARE(relaid.count(), 1);  // one relayout for the whole chain
    for (int s : {layer2, wrap, inner}) QVERIFY(!view.is_collapsed(s) && view.scope_item(s) == nullptr);
    for (int block : tree.scope(inner).children) QVERIFY(view.scope_item(block) != nullptr);
  }

  // Expand all on a graph too large to read fitted keeps legible text, as opening does: on
  // the selection when there is one, else on the graph's start.
  void expand_all_keeps_a_legible_zoom_on_the_selection_or_the_start() {
    GraphView view;
    show_readable(view);
    QSignalSpy relaid(&view, &GraphView::layout_changed);
    view.set_graph(&graph_, layout_);
    QVERIFY(relaid.wait(60000));
    const NodeId picked = graph_.num_nodes() * 2 / 3;  // far from the start
    view.highlight({picked});
    QSignalSpy told(&view, &GraphView::node_selected);
    view.expand_all();
    QVERIFY(relaid.wait(60000));
    QCOMPARE(told.count(), 0);  // the selection kept through a relayout changes no inspector
    QCOMPARE(view.scope_box_count(), 0);
    QVERIFY2(view.label_px() >= GraphView::kLegibleLabelPx, qPrintable(QString::number(view.label_px())));
    const std::vector<NodeId> selected = view.selected_nodes();
    QVERIFY(std::find(selected.begin(), selected.end(), picked) != selected.end());
    QRectF area;
    for (NodeId n : selected) area = area.united(view.node_item(n)->sceneBoundingRect());
    QVERIFY(view.visible_scene_rect().contains(area.center()));
    // Nothing selected: the start.
    view.scene()->clearSelection();
    view.collapse_to_depth(1);
    QVERIFY(relaid.wait(60000));
    view.expand_all();
    QVERIFY(relaid.wait(60000));
    QVERIFY(view.label_px() >= GraphView::kLegibleLabelPx);
    QRectF top;
    for (NodeId n = 0; n < graph_.num_nodes(); ++n) {
      QRectF r = view.node_item(n)->sceneBoundingRect();
      if (top.isNull() || r.top() < top.top()) top = r;
    }
    QVERIFY(view.visible_scene_rect().intersects(top));
  }

  // Opening readable (the explorer's setting): ResNet-50 fitted whole in 900×650 px draws
  // illegible labels, so it opens collapsed to the deepest depth whose fitted labels are
  // legible; one level deeper, fitted, they are not.
  void opens_at_the_deepest_depth_with_legible_labels() {
    GraphView view;
    show_readable(view);
    QSignalSpy relaid(&view, &GraphView::layout_changed);
    view.set_graph(&graph_, layout_);
    // The expanded graph is not built first: nothing is shown until the opening view is.
    QVERIFY(view.layout_pending());
    QCOMPARE(view.node_count(), 0);
    QCOMPARE(relaid.count(), 0);
    QVERIFY(relaid.wait(60000));
    QCOMPARE(relaid.count(), 1);
    QVERIFY(!view.layout_pending());
    const int depth = view.opening_depth();
    QVERIFY(depth >= 1);
    QVERIFY2(view.label_px() >= GraphView::kLegibleLabelPx, qPrintable(QString::number(view.label_px())));
    QVERIFY(view.scope_box_count() > 0);
    if (!view.opened_whole()) {  // the first informative depth does not fit legibly: zoomed on its
                                 // start, the minimap for the rest
      QVERIFY(depth == 1 || units_at_depth(depth - 1) < GraphView::kInformativeUnits);
      QVERIFY(view.minimap()->isVisible());
      return;
    }
    const QRectF whole = view.scene()->sceneRect().adjusted(20, 20, -20, -20);
    QVERIFY(view.visible_scene_rect().contains(whole));
    view.collapse_to_depth(depth + 1);  // deeper than max_depth: every scope expanded
    QVERIFY(relaid.wait(60000));
    view.fit();
    QVERIFY2(view.label_px() < GraphView::kLegibleLabelPx, qPrintable(QString::number(view.label_px())));
  }

  // Exports that put every layer under one root ("model/layers.0/…") open below it: the
  // depth of one "model" box is legible but shows nothing of the structure.
  void a_single_root_scope_opens_at_the_depth_below_it() {
    Graph rooted = graph_;
    for (collage::Node& n : rooted.nodes) n.name = "/model" + n.name;
    GraphView view;
    view.set_open_readable(true);
    view.resize(500, 300);  // small enough that the depth below the root does not fit legibly
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QSignalSpy relaid(&view, &GraphView::layout_changed);
    view.set_graph(&rooted, layout_);
    QVERIFY(relaid.wait(60000));
    QCOMPARE(units_at_depth(1, &rooted), 1);  // "model", as the test's premise
    QVERIFY(view.opening_depth() >= 2);
    QVERIFY(units_at_depth(view.opening_depth(), &rooted) >= GraphView::kInformativeUnits);
    QVERIFY(!view.opened_whole());  // zoomed to legible text on its start
    QVERIFY(view.minimap()->isVisible());
    QVERIFY(view.scope_box_count() > 1);
    QVERIFY2(view.label_px() >= GraphView::kLegibleLabelPx, qPrintable(QString::number(view.label_px())));
  }

  // A graph without name scopes that is illegible fitted opens at legible zoom on its start.
  void a_graph_without_scopes_opens_legible_on_its_start() {
    Graph flat = graph_;
    for (NodeId n = 0; n < flat.num_nodes(); ++n)
      flat.nodes[static_cast<size_t>(n)].name = "n" + std::to_string(n);
    GraphView view;
    show_readable(view);
    view.set_graph(&flat, layout_);
    QVERIFY(!view.layout_pending());
    QVERIFY(!view.opened_whole());
    QVERIFY(view.label_px() >= GraphView::kLegibleLabelPx);
    QCOMPARE(view.node_count(), flat.num_nodes());
    QRectF top;  // the topmost node is in view
    for (NodeId n = 0; n < flat.num_nodes(); ++n) {
      QRectF r = view.node_item(n)->sceneBoundingRect();
      if (top.isNull() || r.top() < top.top()) top = r;
    }
    QVERIFY(view.visible_scene_rect().contains(top));
    QVERIFY(view.minimap()->isVisible());
  }
};

QTEST_MAIN(GraphViewTest)
#include "graph_view_test.moc"
