// QtTest, no window: the ExplorerController loads a sample, tunes it with two
// backends (typed signals: progress by stage, the candidate list, each cost,
// the report) into a placement; Stop cancels; a bad model or an impossible
// refine is a failure signal with the message.
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "app/explorer/model/explorer_controller.h"
#include "app/workflow/workflow.h"
#include "backends/registry.h"
#include "core/search/placement_buckets.h"
#include "core/search/search.h"
#include "core/tuning/candidates.h"
#include "job_wait.h"
#include "widgets/body_window.h"
#include "widgets/graph_view.h"
#include "widgets/inspector.h"

#if !defined(COLLAGE_SAMPLE_MODEL) || !defined(COLLAGE_CLI_PATH)
#error "COLLAGE_SAMPLE_MODEL and COLLAGE_CLI_PATH must name the bundled model and the collage CLI"
#endif

namespace {

namespace fs = std::filesystem;
using collage::ExplorerController;
using collage::Job;

// `search_placement` on the controller's tuned candidates and costs under `pins`, at the placement's ε.
double search_ms(const ExplorerController& c, const collage::Pins& pins) {
  std::vector<collage::Cost> costs;
  for (const collage::MeasuredCandidate& m : c.tuned()->costs) costs.push_back(m.cost);
  collage::SearchOptions options;
  options.epsilon_ms = c.placement()->epsilon_ms;
  return collage::search_placement(*c.graph(), c.tuned()->candidates, costs, pins, options).predicted_ms;
}

}  // namespace

class ControllerTest : public QObject {
  Q_OBJECT

  // This run's files (fresh cost DBs, placements, models), removed with the test object.
  QTemporaryDir tmp_;
  QString tmp(const char* name) const { return tmp_.filePath(name); }

 private slots:
  void initTestCase() { QVERIFY(tmp_.isValid()); }

  void tunes_a_sample_with_two_backends() {
    ExplorerController c;
    c.set_cost_db_path(tmp("tune.sqlite"));
    c.set_backends({collage::find_backend("xnnpack")});  // native is added
    QCOMPARE(c.backends().size(), size_t{2});
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    QSignalSpy progress(&c, &ExplorerController::progress);
    QSignalSpy listed(&c, &ExplorerController::candidates_listed);
    QSignalSpy measured(&c, &ExplorerController::cost_measured);

    QVERIFY(c.open_model(COLLAGE_SAMPLE_MODEL));
    QVERIFY(c.busy());
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.takeFirst().at(0).value<collage::JobReport>().job, Job::Load);
    QVERIFY(c.graph() != nullptr);
    QVERIFY(!c.placement());

    QVERIFY(c.start_tune());
    QVERIFY(!c.start_tune());  // one job at a time
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 120000));
    QCOMPARE(failed.count(), 0);
    auto report = finished.takeFirst().at(0).value<collage::JobReport>();
    QCOMPARE(report.job, Job::Tune);
    QVERIFY(report.summary.startsWith("placement: "));
    QVERIFY(report.mismatch.isEmpty());
    QVERIFY(!c.busy());

    // The candidate list once, then one cost per candidate, in order, then the new costs of
    // the close contests' members (and of the candidates sharing their signatures).
    QCOMPARE(listed.count(), 1);
    auto list = listed.at(0).at(0).value<collage::CandidateList>();
    const collage::TuneResult& tuned = *c.tuned();
    QCOMPARE(list.candidates.size(), tuned.candidates.size());
    const int listed_count = static_cast<int>(list.candidates.size());
    QVERIFY(measured.count() >= listed_count);
    for (int i = 0; i < listed_count; ++i)
      QCOMPARE(measured.at(i).at(0).value<collage::MeasuredCost>().index, static_cast<size_t>(i));
    std::set<std::string> contested;
    for (const collage::SettledContest& contest : tuned.contests)
      for (size_t m : contest.members) contested.insert(tuned.costs[m].signature);
    for (int i = listed_count; i < measured.count(); ++i) {
      size_t index = measured.at(i).at(0).value<collage::MeasuredCost>().index;
      QVERIFY(contested.count(tuned.costs[index].signature));
      QVERIFY(tuned.costs[index].remeasured);
    }
    std::set<collage::ProgressEvent::Stage> stages;
    for (const auto& args : progress) stages.insert(args.at(0).value<collage::ProgressEvent>().stage);
    QVERIFY(stages.count(collage::ProgressEvent::Stage::Measure));

    // A complete placement over the two backends.
    QVERIFY(c.placement().has_value());
    std::vector<int> covered(static_cast<size_t>(c.graph()->num_nodes()), 0);
    for (const auto& k : c.placement()->kernels) {
      QVERIFY(k.backend == "xnnpack" || k.backend == "native");
      for (collage::NodeId n : k.nodes) ++covered[static_cast<size_t>(n)];
    }
    QVERIFY(std::all_of(covered.begin(), covered.end(), [](int n) { return n == 1; }));
    // The inspector's data for a node: its candidates and the kernel it runs in.
    collage::NodeDetails details = c.node_details(c.node_id("/conv1/Conv"));
    QCOMPARE(details.op_type, QString("Conv"));
    QVERIFY(details.tuned && !details.candidates.empty());
    QCOMPARE(details.assigned.size(), size_t{1});

    // Refine needs a graph-level backend: refused with the reason, no job started.
    QVERIFY(!c.start_refine());
    QCOMPARE(failed.count(), 1);
    auto refusal = failed.takeFirst().at(0).value<collage::JobFailure>();
    QCOMPARE(refusal.job, Job::Refine);
    QVERIFY(refusal.message.contains("graph-level backend"));
  }

  // Why here: after a tune, the runner-up of a node is the search with its backend forbidden
  // (computed here from the tuned costs), the what-ifs are the searches with the menu's pins,
  // and the inspector shows the reason and the runner-up.
  // A detector's shapes follow the boxes it keeps: it opens with those shapes decided as it runs,
  // says so, and its control node shows its bodies in the inspector's attributes.
  void opens_a_detector_with_shapes_decided_as_it_runs() {
    ExplorerController c;
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    QVERIFY(c.open_model(COLLAGE_DETECTOR_MODEL));
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 60000));
    QCOMPARE(failed.count(), 0);
    const QString summary = finished.takeFirst().at(0).value<collage::JobReport>().summary;
    QVERIFY2(summary.contains("decided as it runs"), qPrintable(summary));
    const collage::Graph& g = *c.graph();
    int control = -1;
    for (int n = 0; n < g.num_nodes(); ++n)
      if (g.node(n).op_type == "If") control = n;
    QVERIFY(control >= 0);
    collage::NodeDetails d = c.node_details(control);
    int bodies = 0;
    for (const auto& [key, value] : d.attributes)
      if (key.endsWith("_branch")) {
        ++bodies;
        const size_t nodes = g.node(control).body(key.toStdString()).nodes.size();
        QVERIFY2(value.startsWith(QString("body of %1 nodes:").arg(nodes)), qPrintable(value));
      }
    QCOMPARE(bodies, 2);
    // A body opens in a window of its own, drawn as a graph; without a placement it runs natively.
    std::unique_ptr<collage::BodyWindow> window(
        collage::BodyWindow::open(g, control, "else_branch", nullptr, nullptr));
    QVERIFY(window);
    window->setAttribute(Qt::WA_DeleteOnClose, false);  // the test owns it
    const collage::Graph& body = g.node(control).body("else_branch");
    QVERIFY(window->view()->node_count() > 0);
    QVERIFY(window->view()->node_count() <= body.num_nodes());
    QVERIFY2(window->windowTitle().contains(
                 QString("body 'else_branch' of %1").arg(QString::fromStdString(g.node(control).describe()))),
             qPrintable(window->windowTitle()));
    QVERIFY2(window->windowTitle().contains("runs node by node natively"), qPrintable(window->windowTitle()));
    QVERIFY(!collage::BodyWindow::open(g, control, "body", nullptr, nullptr));  // an If has no 'body'
  }

  void explains_a_node_after_a_tune() {
    ExplorerController c;
    // The first test's cost DB: warm when it ran before, measured otherwise.
    c.set_cost_db_path(tmp("tune.sqlite"));
    c.set_backends({collage::find_backend("xnnpack")});
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    c.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    const int conv = c.node_id("/layer1/layer1.0/conv1/Conv");
    QVERIFY(conv >= 0);
    QVERIFY(!c.explain_node(conv));  // nothing to explain before a tune
    QVERIFY(!c.node_details(conv).why);
    finished.clear();
    QVERIFY(c.start_tune());
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 120000));
    QCOMPARE(failed.count(), 0);
    const collage::Placement& placement = *c.placement();

    std::optional<collage::NodeExplanation> e = c.explain_node(conv);
    QVERIFY(e.has_value());
    QVERIFY(!c.explain_node(c.graph()->num_nodes()));
    QVERIFY(std::find(e->chosen.nodes.begin(), e->chosen.nodes.end(), conv) != e->chosen.nodes.end());
    QVERIFY(e->chosen_is_candidate);  // an op-level tune places candidates only
    QVERIFY(std::abs(e->current_ms - placement.predicted_ms) < 1e-9);
    collage::Pins forbid = c.pins();
    forbid.forbidden[conv].insert(e->chosen.backend);
    const double want = search_ms(c, forbid);
    QVERIFY(e->runner_up.feasible);
    QVERIFY2(std::abs(e->runner_up.predicted_ms - want) < 1e-9,
             qPrintable(QString("%1 vs %2").arg(e->runner_up.predicted_ms).arg(want)));
    QVERIFY(std::abs(e->runner_up.delta_ms - (want - placement.predicted_ms)) < 1e-9);
    QVERIFY(e->runner_up.backend != e->chosen.backend);

    // The menu's what-ifs: both backends offer a Conv; each Δ is the search with that pin / forbid.
    std::vector<collage::WhatIf> what_ifs = c.what_ifs(conv);
    QCOMPARE(what_ifs.size(), size_t{2});
    for (const collage::WhatIf& w : what_ifs) {
      collage::Pins run_on = c.pins();
      run_on.pinned[conv] = w.backend;
      collage::Pins forbid_it = c.pins();
      forbid_it.forbidden[conv].insert(w.backend);
      QVERIFY(std::abs(w.run_on.predicted_ms - search_ms(c, run_on)) < 1e-9);
      QVERIFY(std::abs(w.forbid.predicted_ms - search_ms(c, forbid_it)) < 1e-9);
      QString label = collage::what_if_label(w.run_on);
      QVERIFY2(label.startsWith(QString::asprintf("%+.3f ms", w.run_on.delta_ms)), qPrintable(label));
    }

    // The inspector: the reason in words, the runner-up with its Δ, a near tie when flagged.
    QString html = collage::Inspector::html(c.node_details(conv));
    QVERIFY2(html.contains("Why here"), qPrintable(html));
    QVERIFY2(html.contains(QString::fromStdString(e->reason_text).toHtmlEscaped()), qPrintable(html));
    QVERIFY2(html.contains("Runner-up"), qPrintable(html));
    QVERIFY2(html.contains(QString::asprintf("%+.4f", e->runner_up.delta_ms)), qPrintable(html));
    QCOMPARE(html.contains("Near tie"), e->runner_up.near_tie);
    // Flatten runs on native only: no runner-up, and the search's reason.
    const int flatten = c.node_id("/Flatten");
    QVERIFY(flatten >= 0);
    std::optional<collage::NodeExplanation> f = c.explain_node(flatten);
    QVERIFY(f && !f->runner_up.feasible);
    QCOMPARE(f->reason, collage::PlacementReason::OnlyBackend);
    QString flatten_html = collage::Inspector::html(c.node_details(flatten));
    QVERIFY2(flatten_html.contains("no alternative: " +
                                   QString::fromStdString(f->runner_up.infeasible_reason).toHtmlEscaped()),
             qPrintable(flatten_html));
    QCOMPARE(collage::what_if_label(c.what_ifs(flatten).front().forbid), QString("impossible"));
  }

  void stop_cancels_a_tune() {
    ExplorerController c;
    c.set_cost_db_path(tmp("cancel.sqlite"));
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    QSignalSpy measured(&c, &ExplorerController::cost_measured);
    c.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    QVERIFY(c.start_tune());
    QVERIFY(measured.count() > 0 || measured.wait(30000));  // measuring has begun
    c.stop();
    finished.clear();
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    QCOMPARE(finished.count(), 0);
    auto failure = failed.takeFirst().at(0).value<collage::JobFailure>();
    QCOMPARE(failure.job, Job::Tune);
    QVERIFY(failure.cancelled);
    QVERIFY(failure.message.contains("cancelled"));
    QVERIFY(!c.placement());  // nothing adopted
    QVERIFY(!c.busy());
  }

  // One pipeline: on the same costs (one cost DB), seed, epsilon and pins, the explorer's
  // Tune and `collage tune` choose the same kernels in the same order.
  void the_cli_and_the_explorer_place_alike() {
    ExplorerController c;
    QString db = tmp("cli.sqlite");
    c.set_cost_db_path(db);
    c.set_backends({collage::find_backend("xnnpack")});
    c.set_epsilon_ms(0.002);
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    c.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    const std::string pinned = "/layer1/layer1.0/conv1/Conv";
    QVERIFY(c.node_id(pinned) >= 0);
    c.set_pin(c.node_id(pinned), "native");
    finished.clear();
    QVERIFY(c.start_tune());
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 120000));
    QCOMPARE(failed.count(), 0);
    QVERIFY(c.placement().has_value());

    QString out = tmp("cli.json");
    QProcess cli;
    cli.start(COLLAGE_CLI_PATH,
              {"tune", COLLAGE_SAMPLE_MODEL, "--backends", "xnnpack,native", "--cost-db", db, "--epsilon",
               "0.002", "--pin", QString::fromStdString(pinned + "=native"), "--repeat", "1", "-o", out});
    QVERIFY(cli.waitForFinished(120000));
    QByteArray stdout_text = cli.readAllStandardOutput();
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    QVERIFY2(stdout_text.contains("(0 measured"), stdout_text.constData());  // the explorer's costs, reused

    collage::Placement from_cli = collage::workflow::read_placement(out.toStdString(), *c.graph());
    const collage::Placement& from_explorer = *c.placement();
    QCOMPARE(from_cli.kernels.size(), from_explorer.kernels.size());
    bool pin_honoured = false;
    for (size_t k = 0; k < from_cli.kernels.size(); ++k) {
      QCOMPARE(from_cli.kernels[k].backend, from_explorer.kernels[k].backend);
      QCOMPARE(from_cli.kernels[k].nodes, from_explorer.kernels[k].nodes);
      QCOMPARE(from_cli.kernels[k].cost.median_ms, from_explorer.kernels[k].cost.median_ms);
      for (collage::NodeId n : from_cli.kernels[k].nodes)
        pin_honoured |= n == c.node_id(pinned) && from_cli.kernels[k].backend == "native";
    }
    QVERIFY(pin_honoured);
    QCOMPARE(from_cli.predicted_ms, from_explorer.predicted_ms);
    fs::remove(out.toStdString());
  }

  // One chain: `collage tune --refine` and the explorer's Tune then Refine, on one cost DB
  // (the explorer reads every kernel cost and genome fitness the CLI stored, so its GA
  // takes the same path) and seed (the default), verify the refined placement, compare it side by side
  // and keep the same placement. Op-level kernels on native only, so the onednn-region
  // region is clearly faster (~1.35x here) and the keep decision is not left to noise.
  void the_cli_and_the_explorer_refine_and_keep_alike() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QString db = dir.filePath("costs.sqlite"), out = dir.filePath("cli.json");
    QProcess cli;
    cli.start(COLLAGE_CLI_PATH, {"tune", COLLAGE_SAMPLE_MODEL, "--backends", "native,onednn-region",
                                 "--cost-db", db, "--epsilon", "0.002", "--refine", "-o", out});
    QVERIFY(cli.waitForFinished(300000));
    QByteArray stdout_text = cli.readAllStandardOutput();
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    QVERIFY2(stdout_text.contains("moved onednn-region"), stdout_text.constData());
    QVERIFY2(!stdout_text.contains("keeping the op-level one"), stdout_text.constData());

    ExplorerController c;
    c.set_cost_db_path(db);
    c.set_backends({collage::find_backend("onednn-region")});  // native is added
    c.set_epsilon_ms(0.002);
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    c.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    finished.clear();
    QVERIFY(c.start_tune());
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 120000));
    QCOMPARE(failed.count(), 0);
    finished.clear();
    QVERIFY(c.start_refine());
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 300000));
    QCOMPARE(failed.count(), 0);
    auto report = finished.takeFirst().at(0).value<collage::JobReport>();
    QVERIFY2(report.log.join("\n").contains("refined placement verified against the native reference: ok"),
             qPrintable(report.log.join("\n")));
    QVERIFY2(report.log.join("\n").contains("keeping the refined placement"),
             qPrintable(report.log.join("\n")));

    collage::Placement from_cli = collage::workflow::read_placement(out.toStdString(), *c.graph());
    const collage::Placement& from_explorer = *c.placement();
    QCOMPARE(from_explorer.kernels.size(), c.refined_placement()->kernels.size());
    QCOMPARE(from_cli.kernels.size(), from_explorer.kernels.size());
    for (size_t k = 0; k < from_cli.kernels.size(); ++k) {
      QCOMPARE(from_cli.kernels[k].backend, from_explorer.kernels[k].backend);
      QCOMPARE(from_cli.kernels[k].nodes, from_explorer.kernels[k].nodes);
    }
  }

  // Loading a placement fills the candidates and their costs from the cost DB, measuring
  // nothing: what the tune stored comes back, a backend the tune did not use is "not measured".
  // A placement file with a placement per shape bucket: the controller shows one bucket's graph
  // and placement at a time, switches by re-importing, and diffs two buckets node by node.
  void shape_buckets_switch_graph_and_placement() {
    std::vector<collage::PlacementFileBucket> buckets;
    for (int64_t batch : {1, 2}) {
      collage::workflow::LoadOptions load;
      load.dims = {{"batch", batch}};
      collage::Graph g = collage::workflow::load_model(COLLAGE_SAMPLE_MODEL, load);
      collage::Placement p;
      p.model_fingerprint = collage::model_fingerprint(g);
      for (collage::NodeId n = 0; n < g.num_nodes(); ++n)
        p.kernels.push_back({{{n}, "native", g.node(n).op_type}});
      if (batch == 2) p.kernels[0].backend = "onednn";  // the stem Conv: batch 2 places it elsewhere
      buckets.push_back({load.dims, collage::placement_to_json(p, g)});
    }
    const QString file = tmp("buckets.json");
    std::ofstream(file.toStdString()) << collage::write_placement_buckets(buckets);

    ExplorerController c;
    c.set_cost_db_path(tmp("buckets.sqlite"));
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    auto next_job = [&](Job want) {
      QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 60000));
      QCOMPARE(failed.count(), 0);
      QCOMPARE(finished.takeFirst().at(0).value<collage::JobReport>().job, want);
    };
    c.open_model(COLLAGE_SAMPLE_MODEL);
    next_job(Job::Load);
    QVERIFY(c.bucket_dims().empty());
    c.load_placement(file);  // the open graph (batch 1 by default, no dims) is no bucket: re-imported
    next_job(Job::Load);
    QCOMPARE(c.bucket_dims().size(), size_t{2});
    QCOMPARE(c.current_bucket(), 0);
    QCOMPARE(c.graph()->value(c.graph()->inputs[0]).shape[0], int64_t{1});
    QCOMPARE(c.placement()->kernels[0].backend, std::string("native"));
    next_job(Job::PlacementCosts);

    QVERIFY(c.switch_bucket(1));
    QVERIFY(!c.switch_bucket(0));  // one job at a time
    next_job(Job::Load);
    QCOMPARE(c.current_bucket(), 1);
    QCOMPARE(c.graph()->value(c.graph()->inputs[0]).shape[0], int64_t{2});
    QCOMPARE(c.placement()->kernels[0].backend, std::string("onednn"));
    next_job(Job::PlacementCosts);
    QCOMPARE(c.tuned()->placement.kernels.size(), c.placement()->kernels.size());

    collage::PlacementComparison cmp = c.compare_with_bucket(0);
    QCOMPARE(cmp.a_name, QString("batch=2"));
    QCOMPARE(cmp.b_name, QString("batch=1"));
    QCOMPARE(cmp.diff.changed_nodes, size_t{1});  // only the stem Conv moved
    QVERIFY_EXCEPTION_THROWN(c.compare_with_bucket(7), collage::Error);

    // Re-searched here with a pin, the bucket keeps that placement through a switch, and saving
    // writes every bucket: nothing of the file is dropped.
    c.set_pin(0, "native");
    c.set_backends({collage::find_backend("xnnpack")});  // native is added
    QVERIFY(c.start_tune());
    next_job(Job::Tune);
    auto stem_backend = [](const collage::Placement& p) {
      for (const collage::PlacedKernel& k : p.kernels)
        if (std::find(k.nodes.begin(), k.nodes.end(), 0) != k.nodes.end()) return k.backend;
      return std::string();
    };
    QCOMPARE(stem_backend(*c.placement()), std::string("native"));
    const std::string retuned = collage::placement_to_json(*c.placement(), *c.graph());
    QVERIFY(c.switch_bucket(0));
    next_job(Job::Load);
    next_job(Job::PlacementCosts);
    const QString saved = tmp("saved_buckets.json");
    c.save_placement(saved);
    std::ifstream in(saved.toStdString());
    std::vector<collage::PlacementFileBucket> read =
        collage::read_placement_buckets(std::string(std::istreambuf_iterator<char>(in), {}));
    QCOMPARE(read.size(), size_t{2});
    collage::Placement first =
        collage::placement_from_json(read[0].placement_json, *c.graph(), collage::all_backends());
    QCOMPARE(first.kernels.size(), static_cast<size_t>(c.graph()->num_nodes()));  // as the file had it:
    QCOMPARE(stem_backend(first), std::string("native"));                         // a native kernel per node
    QVERIFY(nlohmann::json::parse(read[1].placement_json) ==
            nlohmann::json::parse(retuned));  // as re-searched, not as loaded

    c.open_model(COLLAGE_SAMPLE_MODEL);  // another model (or the same anew): the buckets are gone
    next_job(Job::Load);
    QVERIFY(c.bucket_dims().empty());
    QCOMPARE(c.current_bucket(), -1);
  }

  void load_placement_reads_costs_from_the_cost_db() {
    QString db = tmp("load.sqlite");
    QString saved = tmp("load.json");
    std::optional<collage::TuneResult> tuned;
    {
      ExplorerController c;
      c.set_cost_db_path(db);
      c.set_backends({collage::find_backend("xnnpack")});
      c.set_threads(2);
      QSignalSpy finished(&c, &ExplorerController::job_finished);
      QSignalSpy failed(&c, &ExplorerController::job_failed);
      c.open_model(COLLAGE_SAMPLE_MODEL);
      QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
      finished.clear();
      QVERIFY(c.start_tune());
      QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 120000));
      QCOMPARE(failed.count(), 0);
      tuned = c.tuned();
      c.save_placement(saved);
    }
    ExplorerController c;
    c.set_cost_db_path(db);
    c.set_backends({collage::find_backend("xnnpack"), collage::find_backend("blas")});
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    QSignalSpy listed(&c, &ExplorerController::candidates_listed);
    QSignalSpy measured(&c, &ExplorerController::cost_measured);
    QSignalSpy progress(&c, &ExplorerController::progress);
    QSignalSpy threads(&c, &ExplorerController::placement_threads);
    c.open_model(COLLAGE_SAMPLE_MODEL);
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    finished.clear();
    c.load_placement(saved);
    QVERIFY(c.placement().has_value());  // adopted at once
    QCOMPARE(tuned->placement.threads, 2);
    QCOMPARE(threads.count(), 1);  // the threads box follows the placement
    QCOMPARE(threads.at(0).at(0).toInt(), 2);
    QCOMPARE(c.placement()->kernels.size(), tuned->placement.kernels.size());
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 60000));
    QCOMPARE(failed.count(), 0);
    QCOMPARE(finished.takeFirst().at(0).value<collage::JobReport>().job, Job::PlacementCosts);
    QVERIFY(c.tuned().has_value());
    const auto& loaded = *c.tuned();
    QCOMPARE(loaded.placement.kernels.size(), c.placement()->kernels.size());
    QCOMPARE(listed.count(), 1);
    QCOMPARE(listed.at(0).at(0).value<collage::CandidateList>().candidates.size(), loaded.candidates.size());
    QCOMPARE(measured.count(), static_cast<int>(loaded.candidates.size()));
    QCOMPARE(progress.count(), 0);  // nothing measured
    int from_tune = 0, not_measured = 0;
    for (size_t i = 0; i < loaded.candidates.size(); ++i) {
      const collage::Candidate& cand = loaded.candidates[i];
      const collage::Cost& cost = loaded.costs[i].cost;
      if (cand.backend == "blas") {
        QVERIFY(cost.status == collage::CostStatus::NotMeasured);
        ++not_measured;
        continue;
      }
      // The same candidate in the tune: the same cost (or the same reason it has none).
      auto same = std::find_if(tuned->candidates.begin(), tuned->candidates.end(), [&](const auto& t) {
        return t.backend == cand.backend && t.nodes == cand.nodes && t.label == cand.label;
      });
      QVERIFY(same != tuned->candidates.end());
      const collage::Cost& want = tuned->costs[static_cast<size_t>(same - tuned->candidates.begin())].cost;
      QCOMPARE(cost.valid(), want.valid());
      if (want.valid()) QCOMPARE(cost.median_ms, want.median_ms);
      ++from_tune;
    }
    QCOMPARE(from_tune, static_cast<int>(tuned->candidates.size()));
    QVERIFY(not_measured > 0);
    fs::remove(saved.toStdString());
  }

  // Under an accuracy budget a tune may place reduced-precision kernels and holds the placement to
  // the budget (the log says what it reached); without one, such a backend is refused. A placement
  // saved from it brings its budget back when loaded into a controller without one.
  void tunes_under_an_accuracy_budget() {
    ExplorerController c;
    c.set_cost_db_path(tmp("accuracy.sqlite"));
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    QVERIFY(c.open_model(COLLAGE_SAMPLE_MODEL));
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    finished.clear();
    // A reduced-precision backend this CPU runs, with a kernel of one node of the model: that node is
    // pinned to it, so the placement holds a reduced-precision kernel whatever it costs. The classifier's
    // Gemm when the backend takes it (one product, well within the budget on either machine kind).
    const collage::BackendSpec* reduced = nullptr;
    collage::NodeId pinned = -1;
    for (const collage::BackendSpec* b : collage::all_backends()) {
      if (b->precision == collage::Precision::Float32 || !collage::unavailable_reason(*b).empty()) continue;
      for (const collage::Candidate& k : collage::enumerate_candidates(*c.graph(), {b})) {
        if (k.nodes.popcount() != 1) continue;
        const auto node = static_cast<collage::NodeId>(k.nodes.indices().front());
        if (!reduced || c.graph()->node(node).op_type == "Gemm") {
          reduced = b;
          pinned = node;
        }
      }
      if (reduced) break;
    }
    if (!reduced) QSKIP("no reduced-precision backend this CPU runs has a one-node kernel for the sample");
    c.set_backends({reduced});
    c.set_pin(pinned, QString::fromStdString(reduced->name));

    QVERIFY(c.start_tune());
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 120000));
    QCOMPARE(finished.count(), 0);
    const QString refusal = failed.takeFirst().at(0).value<collage::JobFailure>().message;
    QVERIFY2(refusal.contains("needs an accuracy budget"), qPrintable(refusal));

    const collage::AccuracyBudget budget = collage::parse_accuracy("max-rel=5e-2,cosine=0.99");
    c.set_accuracy(budget);
    QVERIFY(c.start_tune());
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 180000));
    QCOMPARE(failed.count(), 0);
    const auto report = finished.takeFirst().at(0).value<collage::JobReport>();
    QVERIFY2(report.mismatch.isEmpty(), qPrintable(report.mismatch));
    QCOMPARE(c.placement()->accuracy, budget.to_string());
    QVERIFY(std::any_of(c.placement()->kernels.begin(), c.placement()->kernels.end(),
                        [&](const collage::PlacedKernel& k) { return k.backend == reduced->name; }));
    QVERIFY2(std::any_of(
                 report.log.begin(), report.log.end(),
                 [](const QString& line) { return line.startsWith("accuracy ") && line.contains("cosine"); }),
             qPrintable(report.log.join('\n')));

    const QString saved = tmp("accuracy.json");
    c.save_placement(saved);
    ExplorerController fresh;
    fresh.set_cost_db_path(tmp("accuracy.sqlite"));
    QSignalSpy fresh_finished(&fresh, &ExplorerController::job_finished);
    QSignalSpy fresh_failed(&fresh, &ExplorerController::job_failed);
    QSignalSpy budget_loaded(&fresh, &ExplorerController::placement_accuracy);
    QVERIFY(fresh.open_model(COLLAGE_SAMPLE_MODEL));
    QVERIFY(collage::testing::wait_for_job_end(&fresh, fresh_finished, fresh_failed, 30000));
    QVERIFY(!fresh.accuracy().enabled());
    fresh.load_placement(saved);
    QCOMPARE(budget_loaded.count(), 1);
    QCOMPARE(budget_loaded.at(0).at(0).toString(), QString::fromStdString(budget.to_string()));
    QCOMPARE(fresh.accuracy().to_string(), budget.to_string());
    QVERIFY(collage::testing::wait_for_job_end(&fresh, fresh_finished, fresh_failed, 30000));
    QCOMPARE(fresh_failed.count(), 0);
  }

  void a_bad_model_is_a_failure_with_the_message() {
    ExplorerController c;
    QSignalSpy finished(&c, &ExplorerController::job_finished);
    QSignalSpy failed(&c, &ExplorerController::job_failed);
    auto path = tmp("truncated.onnx").toStdString();
    std::ofstream(path, std::ios::binary) << "\x08\x07\x12";
    c.open_model(QString::fromStdString(path));
    QVERIFY(collage::testing::wait_for_job_end(&c, finished, failed, 30000));
    QCOMPARE(finished.count(), 0);
    auto failure = failed.takeFirst().at(0).value<collage::JobFailure>();
    QCOMPARE(failure.job, Job::Load);
    QVERIFY(!failure.cancelled);
    QVERIFY2(failure.message.contains("not a valid ONNX model"), qPrintable(failure.message));
    QVERIFY(c.graph() == nullptr);
    QVERIFY(!c.start_tune());  // no model
    fs::remove(path);
  }
};

QTEST_MAIN(ControllerTest)
#include "controller_test.moc"
