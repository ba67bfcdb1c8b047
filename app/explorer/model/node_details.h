// What the inspector shows of one node, as plain text and numbers: its attributes,
// tensors, FLOPs, the candidate kernels covering it, its assigned kernel and "Why here"
// (the reason it runs there and the runner-up). The controller fills it
// (ExplorerController::node_details); the Inspector widget (widgets/inspector.h) only
// renders it, so it knows nothing of graphs or searches.
#pragma once

#include <QString>
#include <optional>
#include <utility>
#include <vector>

namespace collage {

struct NodeDetails {
  struct Tensor {
    QString name, dtype, shape;
  };
  struct CandidateCost {
    QString backend, label;
    bool valid = true;
    double median_ms = 0, stddev_ms = 0;
    int samples = 0;
    QString reason;  // when invalid
  };
  struct Assigned {
    QString backend, label;
    double cost_ms = 0;
  };
  // A re-searched placement (core/search/explain.h's Alternative, as plain text and numbers).
  struct Alternative {
    bool feasible = false;
    QString why_not;         // when not feasible
    QString backend, label;  // the kernel covering the node in it
    double predicted_ms = 0, delta_ms = 0, spread_ms = 0;
    bool near_tie = false;  // |delta| within the spread of the kernels that differ
  };
  struct WhyHere {
    QString reason_key;  // "fused-group-wins", ...
    QString reason;      // in words
    QString backend, label;
    int kernel_nodes = 0;
    double cost_ms = 0;
    double placement_ms = 0;  // the placement re-costed under the tuned costs
    Alternative runner_up;    // its backend forbidden for the node
  };
  int id = -1;
  QString name, op_type;
  int opset = 0;
  double flops = 0, bytes_read = 0, bytes_written = 0;
  std::vector<std::pair<QString, QString>> attributes;  // name, value as text
  std::vector<Tensor> inputs, outputs;
  bool tuned = false;                     // candidates are known (even if none covers it)
  std::vector<CandidateCost> candidates;  // those covering the node
  std::vector<Assigned> assigned;         // the placed kernel(s) holding it
  std::optional<WhyHere> why;             // with tuned costs and a placement
};

}  // namespace collage
