// The explorer's main window: the graph coloured by placement, the candidate
// cost table, the inspector, the live search chart and the log. Import, layout
// and tuning run on worker threads; their progress arrives via queued signals.
#pragma once

#include <QMainWindow>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "core/graph.h"
#include "core/tuner.h"
#include "widgets/graph_layout.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QTextBrowser;
class QAction;
class QSpinBox;
class QLineEdit;
class QMenu;

namespace collage {

class CostTable;
class GraphView;
class ProgressChart;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  MainWindow();
  ~MainWindow() override;

  void open_model(const QString& path);
  void load_placement(const QString& path);
  void start_tune();
  void start_refine();  // graph-level search from the current placement (fitness measured)
  // While refining: adopt and colour the best placement so far (GUI thread).
  void show_refine_best(const Placement& best, double fitness_ms);
  // Saves the whole window as PNG once the model is shown (and tuned, if asked), then quits.
  void screenshot_when_ready(const QString& path, bool after_tune, bool after_refine = false);
  const Pins& pins() const { return pins_; }
  const std::optional<Placement>& placement() const { return placement_; }
  const Graph* graph() const { return graph_.get(); }
  int node_id(const std::string& name) const;         // -1 if absent
  void set_pin(int node, const QString& backend);     // only this backend may cover the node
  void set_forbid(int node, const QString& backend);  // this backend may not
  void clear_pins(int node);
  void stop() { cancel_ = true; }
  bool save_placement(const QString& path);  // false (and a logged reason) on failure
  // Writes the compiled artifact for the current placement, reloads it and checks its
  // outputs against the in-process run; false with `error` set on failure.
  bool save_artifact(const QString& path, QString* error = nullptr);
  std::vector<NodeId> find_all(const QString& text);  // selects and returns the matches
  GraphView* graph_view() const { return view_; }
  ProgressChart* progress_chart() const { return chart_; }
  CostTable* cost_table() const { return cost_table_; }

 signals:
  void model_loaded(bool ok, QString message);
  void progress(int stage, qulonglong done, qulonglong total, QString message, double best_ms,
                double elapsed_ms, double mean_ms);
  void tune_finished(bool ok, QString message);
  void refine_finished(bool ok, QString message);

 private:
  void on_model_loaded(bool ok, const QString& message);
  void on_progress(int stage, qulonglong done, qulonglong total, const QString& message, double best_ms,
                   double elapsed_ms, double mean_ms);
  void on_refine_finished(bool ok, const QString& message);
  void on_tune_finished(bool ok, const QString& message);
  void show_node(int node);
  void fill_cost_table();
  void export_placement();
  void export_artifact_dialog();
  void log(const QString& line);
  void node_menu(int node, QPoint global_pos);
  void find_step(int direction);  // +1 next, -1 previous; the first call highlights all matches
  void add_recent(const QString& path);
  void rebuild_recent_menu();
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void join_worker();
  void maybe_screenshot(const QString& failure = QString());
  std::vector<const BackendSpec*> selected_backends() const;

  GraphView* view_;
  ProgressChart* chart_;
  CostTable* cost_table_;
  QTextBrowser* inspector_;
  QPlainTextEdit* log_;
  QProgressBar* progress_;
  QLabel* status_;
  QSpinBox* threads_;
  QAction* tune_action_;
  QAction* stop_action_;
  QAction* refine_action_;
  std::vector<QAction*> backend_actions_;

  QString model_path_;
  std::unique_ptr<Graph> graph_;
  GraphLayout layout_;
  std::optional<TuneResult> tuned_;
  std::optional<Placement> placement_;
  Pins pins_;
  double previous_predicted_ms_ = -1;
  double measured_ms_ = -1;   // end-to-end latency of the tuned placement
  std::string verification_;  // empty when it matched the native reference
  QLineEdit* find_box_;
  std::vector<NodeId> find_hits_;
  size_t find_index_ = 0;
  QMenu* recent_menu_;
  std::chrono::steady_clock::time_point open_started_;
  std::thread worker_;
  std::atomic<bool> cancel_{false};
  QString screenshot_path_;
  bool screenshot_after_tune_ = false;
  bool screenshot_after_refine_ = false;
};

}  // namespace collage
