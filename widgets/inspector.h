// The "Inspector" panel: one node's attributes, tensors, FLOPs, the candidate
// kernels covering it, its assigned kernel and "Why here" (the reason it runs
// there and the runner-up); or one name scope's time, share, backend mix and
// costliest kernels. It builds its own HTML from the plain data it is given
// (NodeDetails, ScopeDetails in app/explorer/model/); it knows nothing of graphs
// or searches.
#pragma once

#include <QString>
#include <QTextBrowser>

#include "app/explorer/model/node_details.h"
#include "app/explorer/model/scope_details.h"

namespace collage {

class Inspector : public QTextBrowser {
  Q_OBJECT
 public:
  explicit Inspector(QWidget* parent = nullptr);
  void show_node(const NodeDetails& details);
  static QString html(const NodeDetails& details);
  void show_scope(const ScopeDetails& details);
  static QString html(const ScopeDetails& details);

 private:
  static QString why_html(const NodeDetails::WhyHere& why);
};

}  // namespace collage
