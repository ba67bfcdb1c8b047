// The explorer's main window: the graph coloured by placement, the candidate
// cost table, the inspector, the live search chart and the log. Import, layout
// and tuning run on worker threads; their progress arrives via queued signals.
#pragma once

#include <QMainWindow>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "core/graph.h"
#include "core/tuner.h"
#include "widgets/graph_layout.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QTableWidget;
class QTextBrowser;
class QAction;
class QSpinBox;

namespace collage {

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
  // Saves the whole window as PNG once the model is shown (and tuned, if asked), then quits.
  void screenshot_when_ready(const QString& path, bool after_tune);

 signals:
  void model_loaded(bool ok, QString message);
  void progress(int stage, qulonglong done, qulonglong total, QString message, double best_ms, double elapsed_ms);
  void tune_finished(bool ok, QString message);

 private:
  void on_model_loaded(bool ok, const QString& message);
  void on_progress(int stage, qulonglong done, qulonglong total, const QString& message, double best_ms, double elapsed_ms);
  void on_tune_finished(bool ok, const QString& message);
  void show_node(int node);
  void fill_cost_table();
  void export_placement();
  void log(const QString& line);
  void join_worker();
  void maybe_screenshot();
  std::vector<const BackendSpec*> selected_backends() const;

  GraphView* view_;
  ProgressChart* chart_;
  QTableWidget* costs_;
  QTextBrowser* inspector_;
  QPlainTextEdit* log_;
  QProgressBar* progress_;
  QLabel* status_;
  QSpinBox* threads_;
  QAction* tune_action_;
  QAction* stop_action_;
  std::vector<QAction*> backend_actions_;

  QString model_path_;
  std::unique_ptr<Graph> graph_;
  GraphLayout layout_;
  std::optional<TuneResult> tuned_;
  std::optional<Placement> placement_;
  std::thread worker_;
  std::atomic<bool> cancel_{false};
  QString screenshot_path_;
  bool screenshot_after_tune_ = false;
};

}  // namespace collage
