// The explorer's main window: widgets and their wiring only. The graph view,
// the candidate table, the inspector, the live search chart, the log, the
// placement diff and the run profile show what the ExplorerController (the
// model state and the jobs) reports.
#pragma once

#include <QMainWindow>
#include <vector>

#include "app/explorer/model/explorer_controller.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QAction;
class QSpinBox;
class QComboBox;
class QLineEdit;
class QMenu;
class QDockWidget;

namespace collage {

class CostTable;
class GraphView;
class Inspector;
class PlacementDiffPanel;
class ProfilePanel;
class ProgressChart;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  static constexpr int kLogLines = 6;  // the log's height before a search shows its charts
  MainWindow();

  // The user's actions; errors become dialogs (none in batch mode).
  void open_model(const QString& path, const DimValues& dims = {});  // dims: symbolic input dims
  bool load_placement(const QString& path);                          // false (and a dialog) on failure
  // With a placement file of shape buckets loaded: show bucket `index` (the toolbar's shape
  // box does this), or diff the current bucket against it (false and a dialog on failure).
  void switch_bucket(size_t index);
  bool compare_with_bucket(size_t index);
  void start_tune();
  void start_refine();  // graph-level search from the current placement (fitness measured)
  bool save_placement(const QString& path);  // false (and a logged reason) on failure
  // Opens the diff dock (all changed nodes highlighted): the current placement against a file,
  // or the last refine's op-level placement against its refined one. False (a dialog) on failure.
  bool compare_with_placement(const QString& path);
  bool compare_op_level_with_refined();
  void start_profile();  // times each kernel inside the real run; the profile dock shows it
  // Writes the compiled artifact for the current placement, reloads it and checks its
  // outputs against the in-process run; false with `error` set on failure.
  // Starts the controller's ExportArtifact job; its end arrives as job_finished / job_failed.
  void start_export_artifact(const QString& path);
  std::vector<NodeId> find_all(const QString& text);  // selects and returns the matches
  void select_node(int node);                         // selected in the graph, shown in the inspector
  void select_scope(int scope);  // its box shown (opening what holds it), selected and inspected
  void set_heatmap(bool on);     // as the toolbar's Heatmap
  // The Measure menu: the cost DB (a file or postgresql://...) and whether Tune and Refine
  // measure on the team's `collage worker`s (only with a postgresql:// DB). `remember`
  // keeps the choice for the next start (the menu does; --cost-db/--remote do not).
  void set_cost_db(const QString& location, bool remember);
  void set_remote(bool remote, bool remember);
  // The toolbar's accuracy box: a budget SPEC (`collage tune --accuracy`, e.g.
  // cosine=0.999,max-rel=5e-2) lets the next Tune place reduced-precision kernels; "" is fp32.
  // A budget's first setting checks the reduced-precision backends this CPU runs, as `collage tune
  // --accuracy` selects them by default. False (a dialog, the budget unchanged) on a bad SPEC.
  bool set_accuracy(const QString& spec);
  // The shared DB's workers and queue, read off the GUI thread (the controller's
  // start_queue_status), then shown in the log and a dialog.
  void show_workers();
  // Batch mode (--screenshot): failures go to stderr, not to dialogs.
  void set_dialogs_enabled(bool enabled) { dialogs_ = enabled; }

  ExplorerController* controller() const { return controller_; }
  GraphView* graph_view() const { return view_; }
  ProgressChart* progress_chart() const { return chart_; }
  QDockWidget* progress_dock() const { return chart_dock_; }
  CostTable* cost_table() const { return cost_table_; }
  PlacementDiffPanel* diff_panel() const { return diff_panel_; }
  ProfilePanel* profile_panel() const { return profile_panel_; }

 private:
  void build_menus_and_toolbar();
  void on_progress(const ProgressEvent& event);
  void on_finished(const JobReport& report);
  void on_failed(const JobFailure& failure);
  void on_queue_status(const QueueStatus& status);
  void set_busy(bool busy, bool stoppable);
  void show_progress_charts();  // the Search progress dock, hidden until a search reports
  void show_node(int node);
  void show_scope(int scope);
  void show_comparison(const PlacementComparison& comparison);
  void export_placement();
  void export_artifact_dialog();
  void log(const QString& line);
  void notify(int icon, const QString& title, const QString& text);
  void node_menu(int node, QPoint global_pos);
  void scope_menu(int scope, QPoint global_pos);
  void find_step(int direction);  // +1 next, -1 previous; the first call highlights all matches
  void add_recent(const QString& path);
  void rebuild_recent_menu();
  void update_backends();
  // The legend's toggles: enabled where a search at the threads box's count, under the
  // controller's accuracy budget, uses them.
  void refresh_backend_toggles();
  void update_bucket_box();  // the shape box lists the controller's buckets, the current one chosen
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

  ExplorerController* controller_;
  GraphView* view_;
  ProgressChart* chart_;
  QDockWidget* chart_dock_;
  CostTable* cost_table_;
  Inspector* inspector_;
  PlacementDiffPanel* diff_panel_;
  QDockWidget* diff_dock_;
  ProfilePanel* profile_panel_;
  QDockWidget* profile_dock_;
  QPlainTextEdit* log_;
  QDockWidget* log_dock_;
  QProgressBar* progress_;
  QLabel* status_;
  QSpinBox* threads_;
  QLineEdit* accuracy_box_;     // the tune's accuracy budget; empty: fp32
  bool budget_shown_ = false;   // the box holds a budget
  QComboBox* bucket_box_;       // the shape buckets of the loaded placement file
  QAction* bucket_box_action_;  // its toolbar slot: hidden without buckets
  QAction* compare_bucket_action_;
  QAction* tune_action_;
  QAction* remote_action_ = nullptr;
  QAction* stop_action_;
  QAction* refine_action_;
  QAction* heatmap_action_;
  QAction* profile_action_;
  QAction* compare_refined_action_;
  std::vector<QAction*> backend_actions_;
  QLineEdit* find_box_;
  std::vector<NodeId> find_hits_;
  size_t find_index_ = 0;
  QMenu* recent_menu_;
  bool dialogs_ = true;
  int inspected_ = -1;        // the node the inspector shows
  int inspected_scope_ = -1;  // or the name scope
};

}  // namespace collage
