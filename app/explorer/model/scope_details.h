// What the inspector shows of a name scope (a collapsed box such as PyTorch's "features.3"):
// where the model's time goes inside it, as plain text and numbers. Filled by
// scope_details() from the graph and the placement; the Inspector widget only renders it.
// Invariants: `ms` is the sum of its nodes' even shares of kernel time (core/ir/scope_tree.h),
// so the scopes of one depth add up to the placement's total; `backend_ms` and `costliest`
// are in descending time, `costliest` at most kCostliest long.
#pragma once

#include <QString>
#include <utility>
#include <vector>

#include "core/ir/graph.h"
#include "core/search/placement.h"

namespace collage {

struct ScopeDetails {
  static constexpr size_t kCostliest = 5;
  struct Kernel {
    QString backend, label;
    double ms_inside = 0;  // the kernel's time times the share of its nodes inside the scope
    int nodes_inside = 0, nodes = 0;
  };
  int scope = -1;
  QString path;  // "/features/features.3"
  int nodes = 0, child_scopes = 0;
  std::vector<std::pair<QString, int>> ops;  // op type and count, most frequent first
  bool placed = false;                       // a placement with costs is loaded
  double ms = 0, placement_ms = 0;           // the scope's time, the whole placement's
  int kernels = 0;                           // kernels with a node inside
  std::vector<std::pair<QString, double>> backend_ms;
  std::vector<Kernel> costliest;
};

// `placement` may be null (a model without a placement: structure only). Scope ids are
// ScopeTree::of(graph)'s, as the graph view's.
ScopeDetails scope_details(const Graph& graph, const Placement* placement, int scope);

}  // namespace collage
