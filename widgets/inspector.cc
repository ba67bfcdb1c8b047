#include "widgets/inspector.h"

namespace collage {

Inspector::Inspector(QWidget* parent) : QTextBrowser(parent) {}

void Inspector::show_node(const NodeDetails& details) { setHtml(html(details)); }

QString Inspector::html(const NodeDetails& d) {
  QString html = QString("<h3>%1</h3><p>%2 (opset %3), node %4</p>")
                     .arg(d.name.toHtmlEscaped(), d.op_type)
                     .arg(d.opset)
                     .arg(d.id);
  if (d.why) html += why_html(*d.why);  // first: what a user asks after a tune
  html += QString("<p>%1 MFLOPs, %2 KB read, %3 KB written</p>")
              .arg(d.flops / 1e6, 0, 'f', 3)
              .arg(d.bytes_read / 1024, 0, 'f', 1)
              .arg(d.bytes_written / 1024, 0, 'f', 1);
  for (const auto& [key, value] : d.attributes)
    html += QString("<code>%1</code> = %2<br>").arg(key.toHtmlEscaped(), value.toHtmlEscaped());
  for (const auto& t : d.inputs)
    html += QString("in <code>%1</code> %2 %3<br>").arg(t.name.toHtmlEscaped(), t.dtype, t.shape);
  for (const auto& t : d.outputs)
    html += QString("out <code>%1</code> %2 %3<br>").arg(t.name.toHtmlEscaped(), t.dtype, t.shape);
  if (d.tuned) {
    html += "<h4>Candidate kernels covering it</h4><table>";
    for (const auto& c : d.candidates)
      html += QString("<tr><td>%1</td><td>%2</td><td>%3</td></tr>")
                  .arg(c.backend.toHtmlEscaped(), c.label.toHtmlEscaped())
                  .arg(c.valid ? QString("%1 ms ± %2 (%3 samples)")
                                     .arg(c.median_ms, 0, 'f', 4)
                                     .arg(c.stddev_ms, 0, 'f', 4)
                                     .arg(c.samples)
                               : "invalid: " + c.reason.toHtmlEscaped());
    html += "</table>";
  }
  for (const auto& a : d.assigned)
    html += QString("<p><b>Assigned:</b> %1 %2, %3 ms</p>")
                .arg(a.backend.toHtmlEscaped(), a.label.toHtmlEscaped())
                .arg(a.cost_ms, 0, 'f', 4);
  return html;
}

void Inspector::show_scope(const ScopeDetails& details) { setHtml(html(details)); }

QString Inspector::html(const ScopeDetails& d) {
  QString html = QString("<h3>%1</h3><p>name scope: %2 nodes, %3 inner scope%4</p>")
                     .arg(d.path.toHtmlEscaped())
                     .arg(d.nodes)
                     .arg(d.child_scopes)
                     .arg(d.child_scopes == 1 ? "" : "s");
  if (d.placed) {
    html += QString("<p><b>%1 ms</b>, %2% of the placement's %3 ms, in %4 kernel%5</p>")
                .arg(d.ms, 0, 'f', 3)
                .arg(d.placement_ms > 0 ? 100 * d.ms / d.placement_ms : 0.0, 0, 'f', 1)
                .arg(d.placement_ms, 0, 'f', 3)
                .arg(d.kernels)
                .arg(d.kernels == 1 ? "" : "s");
    html += "<h4>Backend mix</h4><table>";
    for (const auto& [backend, ms] : d.backend_ms)
      html += QString("<tr><td>%1</td><td align=right>%2 ms</td><td align=right>%3%</td></tr>")
                  .arg(backend.toHtmlEscaped())
                  .arg(ms, 0, 'f', 3)
                  .arg(d.ms > 0 ? 100 * ms / d.ms : 0.0, 0, 'f', 1);
    html += "</table><h4>Costliest kernels</h4><table>";
    for (const ScopeDetails::Kernel& k : d.costliest)
      html += QString("<tr><td>%1</td><td><i>%2</i></td><td align=right>%3 ms</td><td>%4</td></tr>")
                  .arg(k.backend.toHtmlEscaped(), k.label.toHtmlEscaped())
                  .arg(k.ms_inside, 0, 'f', 3)
                  .arg(k.nodes_inside == k.nodes
                           ? QString()
                           : QString("%1 of its %2 nodes here").arg(k.nodes_inside).arg(k.nodes));
    html += "</table>";
  } else {
    html += "<p>No placement yet: Tune to see where its time goes.</p>";
  }
  html += "<h4>Ops</h4><p>";
  for (size_t i = 0; i < d.ops.size(); ++i)
    html += QString("%1%2 ×%3").arg(i ? ", " : "", d.ops[i].first.toHtmlEscaped()).arg(d.ops[i].second);
  return html + "</p><p><i>Double-click the box to open it.</i></p>";
}

QString Inspector::why_html(const NodeDetails::WhyHere& w) {
  QString html = QString(
                     "<h4>Why here: %1</h4><p>%2.<br>Kernel: %3 <i>%4</i>, %5 node%6, %7 ms of the "
                     "placement's %8 ms.</p>")
                     .arg(QString(w.reason_key).replace('-', ' '), w.reason.toHtmlEscaped(),
                          w.backend.toHtmlEscaped(), w.label.toHtmlEscaped())
                     .arg(w.kernel_nodes)
                     .arg(w.kernel_nodes == 1 ? "" : "s")
                     .arg(w.cost_ms, 0, 'f', 4)
                     .arg(w.placement_ms, 0, 'f', 4);
  const NodeDetails::Alternative& r = w.runner_up;
  if (!r.feasible) return html + "<p><b>Runner-up:</b> no alternative: " + r.why_not.toHtmlEscaped() + "</p>";
  html += QString("<p><b>Runner-up</b> (%1 forbidden here): %2 <i>%3</i>, placement %4 ms, <b>Δ %5 ms</b>")
              .arg(w.backend.toHtmlEscaped(), r.backend.toHtmlEscaped(), r.label.toHtmlEscaped())
              .arg(r.predicted_ms, 0, 'f', 4)
              .arg(QString::asprintf("%+.4f", r.delta_ms));
  if (r.near_tie)
    html += QString("<br><b>Near tie</b>: within the measured spread (±%1 ms) of the kernels that differ")
                .arg(r.spread_ms, 0, 'f', 4);
  return html + "</p>";
}

}  // namespace collage
