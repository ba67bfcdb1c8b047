// The dataflow graph: nodes labelled by op and its shape-defining attributes
// ("Conv 3×3 /2 · 64"), coloured by assigned backend or a cost heatmap (with a
// legend in ms), each placed kernel labelled with backend, ms and share of the
// total (outlined and labelled at its right when it spans several nodes, else on
// the node's second line), edges between kernels of
// different backends dashed and thick. Name scopes (core/ir/scope_tree.h) collapse
// into one box each with their total kernel time and backend mix; the graph with
// collapsed scopes is laid out again off the GUI thread (layout_changed() when
// shown). Navigation: the wheel zooms around the cursor, dragging pans, F fits
// the whole graph (the view opens fitted and stays fitted while resized until the
// user moves it; large graphs open collapsed), Z zooms to the selection, the minimap in the corner moves the
// view. Invariant: node_items_[n] is the item of node n, or null while n is
// inside a collapsed scope; items are rebuilt only on a new graph or layout.
#pragma once

#include <QFutureWatcher>
#include <QGraphicsView>
#include <memory>
#include <vector>

#include "app/explorer/model/graph_layout.h"
#include "core/ir/graph.h"
#include "core/ir/graph_analysis.h"
#include "core/ir/scope_tree.h"
#include "core/search/placement.h"

class QGraphicsPathItem;
class QImage;

namespace collage {

class KernelItem;
class Minimap;
class NodeItem;
class ScopeItem;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  enum class Coloring { Backend, CostHeatmap };
  // Opening a graph, it is shown readable: a node label at least kLegibleLabelPx high on
  // screen. When the whole graph fitted in the view is smaller than that, its scopes are
  // collapsed to the deepest depth whose fitted layout still is (layouts of each depth are
  // computed off the GUI thread, at most kOpeningUnits boxes and nodes each); when no depth
  // is (or the names have no scopes), the shallowest one opens zoomed to legible text on its
  // start, the minimap showing the rest.
  // Off by default (a plain view shows the layout it is given, fitted); the explorer turns it
  // on. Only a view on screen (isVisible()) has a size to be legible in.
  // A depth of fewer than kInformativeUnits boxes and nodes (one "model" box and the head)
  // is passed over for the next one, opened at legible zoom on its start if it does not fit.
  // A graph that opens collapsed is not first built and painted expanded (layout_pending()
  // until the opening view is shown; "Laying out N nodes…" meanwhile).
  static constexpr double kLegibleLabelPx = 9;
  static constexpr int kOpeningUnits = 1500;
  static constexpr int kInformativeUnits = 6;
  void set_open_readable(bool on) { open_readable_ = on; }

  // Zoomed out on a graph of more than kOverviewItems nodes and edges, the view paints one
  // image of the whole scene (widgets/graph_overview.h: kOverviewPixels on its long side,
  // drawn off the GUI thread, again after any change of colour, selection or layout) instead
  // of every item: painting 17,000 items took 40-120 ms a frame. Only below the image's own
  // scale, so it is never blurred, and where items draw no text (kTextLod), and not while
  // scope boxes (titles at a fixed on-screen size) are shown. Until the image is drawn, the
  // items are painted.
  static constexpr int kOverviewItems = 3000;
  static constexpr double kOverviewPixels = 4096;
  void set_overview_items(int items) { overview_items_ = items; }  // tests: the threshold
  bool overview_shown() const;  // at this zoom the overview is painted (once drawn)
  // The zoom below which it may be: the image's scale, and no further in than items draw text.
  double overview_limit() const;
  bool overview_ready() const { return overview_ != nullptr; }

  explicit GraphView(QWidget* parent = nullptr);
  ~GraphView() override;
  // `graph` must outlive the view (or the next set_graph); `layout` is the graph's own
  // (every scope expanded), shown at once (layout_changed()) unless its labels would not be
  // legible fitted: then the opening view is chosen off the GUI thread and shown when ready
  // (layout_pending() until then, one layout_changed()). Clears the placement.
  void set_graph(const Graph* graph, const GraphLayout& layout);
  void set_placement(const Placement* placement);  // nullptr: uncoloured; must outlive its use
  void set_coloring(Coloring coloring);
  Coloring coloring() const { return coloring_; }
  void highlight(const std::vector<NodeId>& nodes);  // selection from elsewhere (tables, find)

  // ---- navigation ----
  void fit();                // the whole graph
  void zoom_to_selection();  // the selected items, at most 2× magnified
  void zoom_by(double factor);
  double zoom() const;      // the view's scale (1 = 1 scene point per pixel)
  double label_px() const;  // the on-screen height of a node label at this zoom
  // The collapse depth the graph opened at (0: expanded), and whether it is shown whole
  // (false: zoomed to legible text on its start); valid once layout_pending() is false.
  int opening_depth() const { return opening_depth_; }
  bool opened_whole() const { return opened_whole_; }
  QRectF visible_scene_rect() const;
  Minimap* minimap() const { return minimap_; }
  void set_minimap_visible(bool visible);

  // ---- scopes: each call relays out off the GUI thread, then emits layout_changed() ----
  const ScopeTree* scope_tree() const { return tree_.get(); }
  void collapse_to_depth(int depth);  // every scope of that depth collapsed; < 1 expands all
  void expand_all() { collapse_to_depth(0); }
  void expand_scope(int scope);    // opens one level: its children are shown collapsed
  void collapse_scope(int scope);  // its nodes (and inner scopes) become one box
  bool is_collapsed(int scope) const;
  bool layout_pending() const { return shown_generation_ != generation_; }  // a relayout is running

  // ---- what is shown (for tests and tools) ----
  int node_count() const;  // nodes shown as themselves
  int edge_count() const { return static_cast<int>(edge_items_.size()); }
  int group_count() const;  // outlined multi-node kernels
  int scope_box_count() const;
  QColor node_fill(NodeId node) const;  // invalid when the node is inside a collapsed box
  QGraphicsItem* node_item(NodeId node) const;
  QGraphicsItem* scope_item(int scope) const;  // null unless collapsed and shown
  QString scope_text(int scope) const;         // the box's text in one line ("" if not shown)
  QString node_label(NodeId node) const;       // the label a node box shows
  QString kernel_label(size_t kernel) const;   // "" when the kernel is inside a collapsed box
  // Whether the shown edge carrying node edge from -> to is marked as a backend boundary.
  bool edge_marked(NodeId from, NodeId to) const;
  QString edge_tooltip(NodeId from, NodeId to) const;
  std::vector<NodeId> selected_nodes() const;  // nodes selected, and those of selected boxes
  // Nodes whose name or op type contains `text` (case-insensitive), in id order.
  std::vector<NodeId> find(const QString& text) const;
  bool save_image(const QString& path);  // the whole scene; SVG if the name ends in .svg, else PNG

 signals:
  void node_selected(int node);
  void scope_selected(int scope);  // a collapsed box, when no node is selected
  void node_context_menu(int node, QPoint global_pos);
  void scope_context_menu(int scope, QPoint global_pos);
  void layout_changed();  // a new graph or a relayout after collapse/expand is shown
  void overview_drawn();  // the zoomed-out overview image is ready (and painted next)

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  void drawForeground(QPainter* painter, const QRectF& rect) override;
  void paintEvent(QPaintEvent* event) override;

 private:
  struct Shown;  // the collapsed graph and its layout, built off the GUI thread
  void relayout(std::vector<bool> collapsed, NodeId focus);
  void open_readable();          // chooses the opening depth off the GUI thread (see kLegibleLabelPx)
  static double legible_zoom();  // the zoom at which a node label is kLegibleLabelPx high on screen
  QSizeF fit_area() const;       // the viewport fit() fills
  double fitted_zoom(double layout_width, double layout_height) const;  // as fit() would show it
  void clear_scene();
  bool scene_built() const;  // the items of shown_ exist (false while a graph opens collapsed)
  void invalidate_overview();
  void request_overview();           // draws the overview off the GUI thread (overview_drawn())
  void zoom_to_legible_start();      // legible text, the graph's first unit at the top
  void zoom_to_legible_selection();  // legible text, centred on the selected items
  // Shows a finished layout: centred on `focus` when the user has moved the view, else fitted
  // (and, opening readable, legible on `selected` or the start when fitted is not legible).
  void show_layout(std::shared_ptr<Shown> shown, NodeId focus, const std::vector<NodeId>& selected = {});
  void build_scene();
  void recolor();
  void place_minimap();
  void schedule_minimap_refresh();
  QGraphicsItem* unit_item(int unit) const;
  const CollapsedGraph::Edge* shown_edge(NodeId from, NodeId to) const;

  const Graph* graph_ = nullptr;
  const Placement* placement_ = nullptr;
  Coloring coloring_ = Coloring::Backend;
  std::unique_ptr<ScopeTree> tree_;
  NodeEdges node_edges_;
  std::vector<QString> labels_;  // by node
  std::vector<bool> collapsed_;  // by scope, as shown
  std::shared_ptr<Shown> shown_;
  std::vector<NodeItem*> node_items_;           // by node; null inside a collapsed box
  std::vector<ScopeItem*> scope_items_;         // by scope; null unless collapsed and shown
  std::vector<QGraphicsPathItem*> edge_items_;  // aligned with shown_->graph.edges
  std::vector<KernelItem*> kernel_items_;       // by placement kernel; the outlines of multi-node kernels
  std::vector<QString> kernel_labels_;          // by placement kernel; "" inside a collapsed box
  std::vector<NodeShare> shares_;               // by node, from the placement
  double max_kernel_ms_ = 0;
  Minimap* minimap_;
  bool minimap_wanted_ = true;
  bool minimap_refresh_pending_ = false;
  bool auto_fit_ = true;  // fitted and not moved by the user since: refit on resize
  bool open_readable_ = false;
  bool restoring_selection_ = false;  // show_layout() selects again what was selected
  int overview_items_ = kOverviewItems;
  std::unique_ptr<QImage> overview_;   // null: drawn again when next needed
  unsigned overview_generation_ = 0;   // of the scene's look; bumped by invalidate_overview()
  unsigned overview_requested_ = ~0u;  // the generation last sent to be drawn (none yet)
  int opening_depth_ = 0;
  bool opened_whole_ = true;
  QFutureWatcher<std::shared_ptr<Shown>>* watcher_ = nullptr;
  unsigned generation_ = 0;        // of the newest graph or relayout request
  unsigned shown_generation_ = 0;  // of what is shown
};

}  // namespace collage
