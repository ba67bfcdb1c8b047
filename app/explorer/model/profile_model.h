// The profile of a real run (ProfileReport, core/search/profile_report.h) as a table
// model: one row per kernel in execution order (kernel, backend, start, in-run,
// isolated, delta, share, GFLOP/s), numbers also as typed roles. It holds a copy of the report.
// The run profile panel (widgets/profile_view.h) shows it as a table and a timeline.
#pragma once

#include <QAbstractTableModel>

#include "core/search/profile_report.h"

namespace collage {

class ProfileModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kIndex, kKernel, kBackend, kStart, kInRun, kIsolated, kDelta, kShare, kRate, kColumns };
  enum Role {
    StartRole = Qt::UserRole + 1,  // double ms
    InRunRole,                     // double ms
    IsolatedRole,                  // double ms
    BackendRole,                   // QString
    RateRole,                      // double GFLOP/s inside the run
  };
  explicit ProfileModel(QObject* parent = nullptr);

  void set_report(const ProfileReport& report);
  void clear();
  const ProfileReport& report() const { return report_; }
  const KernelProfile& kernel(int row) const { return report_.kernels[static_cast<size_t>(row)]; }

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  ProfileReport report_;
};

}  // namespace collage
