#include "widgets/body_window.h"

#include <QMenu>
#include <QVBoxLayout>

#include "app/explorer/model/graph_layout.h"
#include "core/ir/subgraph.h"
#include "widgets/graph_view.h"

namespace collage {

BodyWindow::BodyWindow(std::shared_ptr<const Graph> body, const QString& title,
                       std::optional<Placement> placement, QWidget* parent)
    : QDialog(parent), body_(std::move(body)), placement_(std::move(placement)) {
  setWindowTitle(title);
  auto* layout = new QVBoxLayout(this);
  view_ = new GraphView(this);
  layout->addWidget(view_);
  view_->set_graph(body_.get(), layout_graph(*body_));
  view_->set_placement(placement_ ? &*placement_ : nullptr);
  connect(view_, &GraphView::node_context_menu, this, &BodyWindow::node_menu);
  resize(900, 700);
}

BodyWindow* BodyWindow::open(const Graph& graph, NodeId node, const std::string& key,
                             const Placement* placement, QWidget* parent) {
  const Node& n = graph.node(node);
  auto it = n.attrs.find(key);
  if (it == n.attrs.end() || it->second.kind != AttrKind::Graph) return nullptr;
  const Placement* placed = placement ? find_body_placement(*placement, n.name, key) : nullptr;
  QString title = QString("body '%1' of %2: %3 nodes")
                      .arg(QString::fromStdString(key), QString::fromStdString(n.describe()))
                      .arg(it->second.g->nodes.size());
  title += placed ? QString("; placed: %1").arg(QString::fromStdString(placement_summary(*placed)))
                  : QString("; runs node by node natively");
  auto* window =
      new BodyWindow(it->second.g, title, placed ? std::optional<Placement>(*placed) : std::nullopt, parent);
  window->setAttribute(Qt::WA_DeleteOnClose);
  window->show();
  return window;
}

void BodyWindow::node_menu(int node, QPoint global_pos) {
  const Node& n = body_->node(node);
  QMenu menu(this);
  menu.addSection(QString::fromStdString(n.describe()));
  for (const auto& [key, a] : n.attrs) {
    if (a.kind != AttrKind::Graph) continue;
    const std::string body = key;
    menu.addAction(
        QString("Open body '%1' (%2 nodes)").arg(QString::fromStdString(key)).arg(a.g->nodes.size()), this,
        [this, node, body] { open(*body_, node, body, placement_ ? &*placement_ : nullptr, this); });
  }
  if (menu.actions().size() > 1) menu.exec(global_pos);
}

}  // namespace collage
