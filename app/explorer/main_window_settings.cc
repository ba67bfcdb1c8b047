// MainWindow's tune settings: the backend toggles (the colour legend) and what gates them (the
// thread count, the accuracy budget), the accuracy box, the cost DB and remote measuring.
#include <QAction>
#include <QLineEdit>
#include <QMessageBox>
#include <QSettings>
#include <QSpinBox>

#include "app/explorer/main_window.h"
#include "backends/registry.h"
#include "core/tuning/cost_store.h"

namespace collage {
namespace {

// What the tune takes (run_tune refuses the rest): a reduced-precision backend only under a budget.
bool precision_takes_part(const BackendSpec& b, const AccuracyBudget& budget) {
  return b.precision == Precision::Float32 || budget.enabled();
}

}  // namespace

void MainWindow::set_cost_db(const QString& location, bool remember) {
  controller_->set_cost_db_path(location);
  const bool shared = cost_store::is_postgres_location(location.toStdString());
  remote_action_->setEnabled(shared);
  if (!shared) set_remote(false, false);
  if (remember) QSettings().setValue("tune/cost_db", location);
  log("cost DB: " + QString::fromStdString(cost_store::redacted(location.toStdString())));
}

void MainWindow::set_remote(bool remote, bool remember) {
  remote = remote && cost_store::is_postgres_location(controller_->cost_db_path().toStdString());
  controller_->set_remote(remote);
  remote_action_->setChecked(remote);
  if (remember) QSettings().setValue("tune/remote", remote);
}

bool MainWindow::set_accuracy(const QString& spec) {
  AccuracyBudget budget;
  try {
    if (!spec.isEmpty()) budget = parse_accuracy(spec.toStdString());
  } catch (const Error& e) {
    notify(QMessageBox::Warning, "Accuracy budget", QString::fromStdString(e.what()));
    log(QString::fromStdString(e.what()));
    accuracy_box_->setText(QString::fromStdString(controller_->accuracy().to_string()));
    return false;
  }
  // Judged by what the box showed: a loaded placement's budget reaches the controller first.
  const bool first = budget.enabled() && !budget_shown_;
  budget_shown_ = budget.enabled();
  controller_->set_accuracy(budget);
  accuracy_box_->setText(QString::fromStdString(budget.to_string()));
  if (first)  // as `collage tune --accuracy` without --backends: every backend this CPU runs
    for (size_t i = 0; i < backend_actions_.size(); ++i) {
      const BackendSpec& b = *all_backends()[i];
      if (b.precision != Precision::Float32 && unavailable_reason(b).empty()) {
        const QSignalBlocker quiet(backend_actions_[i]);  // one update_backends below
        backend_actions_[i]->setChecked(true);
      }
    }
  refresh_backend_toggles();
  log(budget.enabled() ? "accuracy budget " + QString::fromStdString(budget.to_string()) +
                             ": reduced-precision kernels take part in the next tune"
                       : QString("no accuracy budget: the next tune is fp32"));
  return true;
}

void MainWindow::refresh_backend_toggles() {
  const int threads = threads_->value();
  const AccuracyBudget& budget = controller_->accuracy();
  for (size_t i = 0; i < backend_actions_.size(); ++i) {
    const BackendSpec& b = *all_backends()[i];
    // A reduced-precision backend is always shown (its colour marks a loaded placement's kernels)
    // but searched only under an accuracy budget. One this CPU cannot run, that takes part only
    // from more threads on, or that needs a budget not given, is shown disabled, saying why; its
    // check mark is kept for when it takes part again.
    const bool fp32 = b.precision == Precision::Float32;
    const std::string unavailable = unavailable_reason(b);
    const bool threads_short = threads < b.min_threads;
    std::string tip = b.name + " " + b.version;
    if (!unavailable.empty())
      tip += "\nunavailable: " + unavailable;
    else if (!precision_takes_part(b, budget))
      tip += "\n" + std::string(precision_name(b.precision)) +
             ": searched only under an accuracy budget (the accuracy box; collage tune --accuracy)";
    else if (threads_short)
      tip += "\ntakes part only at " + std::to_string(b.min_threads) + " threads or more";
    else if (!fp32)
      tip += "\n" + std::string(precision_name(b.precision)) + ": searched under the accuracy budget";
    backend_actions_[i]->setEnabled(unavailable.empty() && precision_takes_part(b, budget) && !threads_short);
    backend_actions_[i]->setToolTip(QString::fromStdString(tip));
  }
  update_backends();
}

void MainWindow::update_backends() {
  // Checked and able to take part under the budget; the thread gate is the search's own
  // (backends_for_threads), so a checked backend of more threads stays selected.
  std::vector<const BackendSpec*> selected;
  for (size_t i = 0; i < backend_actions_.size(); ++i)
    if (backend_actions_[i]->isChecked() && precision_takes_part(*all_backends()[i], controller_->accuracy()))
      selected.push_back(all_backends()[i]);
  controller_->set_backends(selected);  // native always fills gaps
}

}  // namespace collage
