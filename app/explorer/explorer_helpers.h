// Small helpers shared by the explorer's main-window sources (not a public API).
#pragma once

#include <QMessageBox>
#include <QString>

#include "core/cost_db.h"

namespace collage {

inline QString cost_db_path() {
  QByteArray env = qgetenv("COLLAGE_COST_DB");
  return env.isEmpty() ? QString::fromStdString(CostDb::default_path()) : QString::fromUtf8(env);
}

// Non-modal, so long work and tests never block on a dialog; Qt's parent owns it.
inline void notify(QWidget* parent, QMessageBox::Icon icon, const QString& title, const QString& text) {
  auto* box = new QMessageBox(icon, title, text, QMessageBox::Ok, parent);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

}  // namespace collage
