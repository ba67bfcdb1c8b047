// The "Inspector" panel: one node's attributes, tensors, FLOPs, the candidate
// kernels covering it and its assigned kernel. It builds its own HTML from the
// plain data it is given (NodeDetails); it knows nothing of graphs or searches.
#pragma once

#include <QString>
#include <QTextBrowser>
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
  int id = -1;
  QString name, op_type;
  int opset = 0;
  double flops = 0, bytes_read = 0, bytes_written = 0;
  std::vector<std::pair<QString, QString>> attributes;  // name, value as text
  std::vector<Tensor> inputs, outputs;
  bool tuned = false;                     // candidates are known (even if none covers it)
  std::vector<CandidateCost> candidates;  // those covering the node
  std::vector<Assigned> assigned;         // the placed kernel(s) holding it
};

class Inspector : public QTextBrowser {
  Q_OBJECT
 public:
  explicit Inspector(QWidget* parent = nullptr);
  void show_node(const NodeDetails& details);
  static QString html(const NodeDetails& details);
};

}  // namespace collage
