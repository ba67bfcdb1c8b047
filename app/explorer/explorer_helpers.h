// Small helpers shared by the explorer's main-window sources (not a public API).
#pragma once

#include <QMessageBox>
#include <QString>

#include "core/workflow/workflow.h"

namespace collage {

// The cost DB the CLI would open without --cost-db (core's resolution, $COLLAGE_COST_DB first).
inline QString cost_db_path() { return QString::fromStdString(workflow::cost_db_path()); }

// Non-modal, so long work and tests never block on a dialog; Qt's parent owns it.
inline void notify(QWidget* parent, QMessageBox::Icon icon, const QString& title, const QString& text) {
  auto* box = new QMessageBox(icon, title, text, QMessageBox::Ok, parent);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

}  // namespace collage
