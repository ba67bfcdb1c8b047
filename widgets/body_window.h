// A control-flow node's body opened as a graph of its own: a window with a graph view of the
// body, coloured by the body's placement when it has one (Placement::bodies), its title naming
// the node, the body and where its nodes run. A node of the body with bodies of its own opens
// those the same way (its context menu). The window shares the body (Attribute::g is shared),
// so it stays valid whatever the main window opens next.
#pragma once

#include <QDialog>
#include <memory>
#include <optional>

#include "core/search/placement.h"

namespace collage {

class GraphView;

class BodyWindow : public QDialog {
  Q_OBJECT
 public:
  // `placement`: the body's placement, or nullopt to draw it uncoloured (it runs natively).
  BodyWindow(std::shared_ptr<const Graph> body, const QString& title, std::optional<Placement> placement,
             QWidget* parent = nullptr);
  GraphView* view() const { return view_; }

  // Opens body `key` of node `node` of `graph` (with its placement from `placement`, if any)
  // in a new window that deletes itself when closed.
  static BodyWindow* open(const Graph& graph, NodeId node, const std::string& key, const Placement* placement,
                          QWidget* parent);

 private:
  void node_menu(int node, QPoint global_pos);

  std::shared_ptr<const Graph> body_;
  std::optional<Placement> placement_;
  GraphView* view_ = nullptr;
};

}  // namespace collage
