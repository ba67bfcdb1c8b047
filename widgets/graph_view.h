// The dataflow graph: nodes labelled by op type, coloured by assigned backend
// (or a cost heatmap), each placed kernel outlined as one group. Zoom with the
// wheel or +/-, pan by dragging, F fits the window.
#pragma once

#include <QGraphicsView>
#include <map>
#include <vector>

#include "core/ir/graph.h"
#include "core/search/placement.h"
#include "widgets/graph_layout.h"

namespace collage {

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  enum class Coloring { Backend, CostHeatmap };

  explicit GraphView(QWidget* parent = nullptr);
  ~GraphView() override;
  // `graph` must outlive the view (or the next set_graph).
  void set_graph(const Graph* graph, const GraphLayout& layout);
  void set_placement(const Placement* placement);  // nullptr: uncoloured
  void set_coloring(Coloring coloring);
  void highlight(const std::vector<NodeId>& nodes);  // selection from elsewhere (tables, find)
  void fit();
  int node_count() const { return static_cast<int>(node_items_.size()); }
  int edge_count() const { return edge_count_; }
  int group_count() const;  // outlined multi-node kernels
  QColor node_fill(NodeId node) const;
  std::vector<NodeId> selected_nodes() const;
  // Nodes whose name or op type contains `text` (case-insensitive), in id order.
  std::vector<NodeId> find(const QString& text) const;
  bool save_image(const QString& path);  // the whole scene; SVG if the name ends in .svg, else PNG

 signals:
  void node_selected(int node);
  void node_context_menu(int node, QPoint global_pos);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  void recolor();
  const Graph* graph_ = nullptr;
  const Placement* placement_ = nullptr;
  Coloring coloring_ = Coloring::Backend;
  std::vector<class QGraphicsRectItem*> node_items_;
  std::vector<class QGraphicsItem*> group_items_;
  GraphLayout layout_;
  int edge_count_ = 0;
};

}  // namespace collage
