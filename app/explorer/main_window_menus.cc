// MainWindow's context menus on the graph: a node's (run on, pin, forbid, each with its predicted
// change re-searched over the tuned costs; its enclosing scopes to collapse) and a scope box's.
#include <QMenu>
#include <algorithm>
#include <map>

#include "app/explorer/main_window.h"
#include "backends/registry.h"
#include "widgets/body_window.h"
#include "widgets/graph_view.h"

namespace collage {

void MainWindow::node_menu(int node, QPoint global_pos) {
  const Graph* graph = controller_->graph();
  if (!graph) return;
  // The menu acts on the selection when the clicked node is part of it (Ctrl+click selects several).
  std::vector<NodeId> nodes = view_->selected_nodes();
  if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes = {node};
  QMenu menu(this);
  menu.addSection(nodes.size() == 1 ? QString::fromStdString(graph->node(node).describe())
                                    : QString("%1 selected nodes").arg(nodes.size()));
  QMenu* run_on = menu.addMenu("Run on");
  QMenu* pin = menu.addMenu("Pin to");
  QMenu* forbid = menu.addMenu("Forbid");
  ExplorerController* c = controller_;
  // One node: each choice shows its predicted Δ, re-searched over the tuned costs (nothing measured).
  std::map<std::string, WhatIf> what_if;
  if (nodes.size() == 1) {
    for (WhatIf& w : c->what_ifs(node)) what_if[w.backend] = std::move(w);
    const QString baseline = c->delta_baseline();
    if (!baseline.isEmpty())  // say what the Δs compare with: like with like
      for (QMenu* m : {run_on, forbid}) {
        m->addAction("Δ against " + baseline)->setEnabled(false);
        m->addSeparator();
      }
  }
  for (QMenu* m : {run_on, forbid}) m->setToolTipsVisible(true);
  auto labelled = [&what_if](const QString& name, bool forbidding) {
    auto it = what_if.find(name.toStdString());
    if (it == what_if.end()) return std::make_pair(name, QString());
    if (!forbidding && it->second.current)
      return std::make_pair(name + "  (current)", QString("it runs there already: no change"));
    const Alternative& a = forbidding ? it->second.forbid : it->second.run_on;
    return std::make_pair(name + "  (" + what_if_label(a) + ")", QString::fromStdString(a.infeasible_reason));
  };
  for (const BackendSpec* b : backends_for_threads(default_backends(), c->threads())) {
    QString name = QString::fromStdString(b->name);
    auto [run_text, run_tip] = labelled(name, false);
    auto [forbid_text, forbid_tip] = labelled(name, true);
    // "Run on" reassigns at once: pin, then re-search (fast with a warm cost DB).
    run_on
        ->addAction(run_text, this,
                    [this, c, nodes, name] {
                      for (NodeId n : nodes) c->set_pin(n, name);
                      start_tune();
                    })
        ->setToolTip(run_tip);
    pin->addAction(name, this, [c, nodes, name] {
      for (NodeId n : nodes) c->set_pin(n, name);
    });
    forbid
        ->addAction(forbid_text, this,
                    [c, nodes, name] {
                      for (NodeId n : nodes) c->set_forbid(n, name);
                    })
        ->setToolTip(forbid_tip);
  }
  if (nodes.size() == 1)  // a control node's bodies, each in a window of its own with its placement
    for (const auto& [key, a] : graph->node(node).attrs) {
      if (a.kind != AttrKind::Graph) continue;
      const std::string body = key;
      menu.addAction(
          QString("Open body '%1' (%2 nodes)").arg(QString::fromStdString(key)).arg(a.g->nodes.size()), this,
          [this, c, node, body] {
            if (const Graph* g = c->graph())
              BodyWindow::open(*g, node, body, c->placement() ? &*c->placement() : nullptr, this);
          });
    }
  menu.addAction("Clear pins", this, [c, nodes] {
    for (NodeId n : nodes) c->clear_pins(n);
  });
  menu.addSeparator();
  menu.addAction("Re-search with pins", this, &MainWindow::start_tune);
  if (const ScopeTree* tree = view_->scope_tree()) {  // the node's enclosing name scopes, innermost first
    menu.addSeparator();
    for (int s = tree->innermost(node); s > 0; s = tree->scope(s).parent)
      menu.addAction("Collapse " + QString::fromStdString(tree->scope(s).path), view_,
                     [this, s] { view_->collapse_scope(s); });
  }
  menu.exec(global_pos);
}

void MainWindow::scope_menu(int scope, QPoint global_pos) {
  const ScopeTree* tree = view_->scope_tree();
  if (!tree) return;
  QMenu menu(this);
  menu.addSection(QString::fromStdString(tree->scope(scope).path));
  menu.addAction("Expand", view_, [this, scope] { view_->expand_scope(scope); });
  if (tree->scope(scope).parent > 0)
    menu.addAction("Collapse " + QString::fromStdString(tree->scope(tree->scope(scope).parent).path), view_,
                   [this, parent = tree->scope(scope).parent] { view_->collapse_scope(parent); });
  menu.addAction("Expand all", view_, &GraphView::expand_all);
  menu.exec(global_pos);
}

}  // namespace collage
