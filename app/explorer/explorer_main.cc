// collage-explorer [MODEL] [--dim NAME=V ...] [--tune [--refine]] [--accuracy SPEC] [--placement FILE]
//                  [--screenshot PATH [--profile] [--diff OTHER.json | --diff-bucket NAME=V] [--select NODE]
//                  [--collapse-depth N] [--heatmap] [--size WxH]]
#include <QApplication>
#include <QCommandLineParser>
#include <clocale>
#include <cstdio>
#include <memory>

#include "app/explorer/batch_screenshot.h"
#include "app/explorer/main_window.h"
#include "app/workflow/measure_worker_main.h"
#include "core/ir/shape_buckets.h"

int main(int argc, char** argv) {
  // The explorer measures in copies of itself: a crashing library takes a worker, not the window.
  int worker_rc = collage::workflow::enable_measure_workers(argc, argv);
  if (worker_rc >= 0) return worker_rc;
  QApplication app(argc, argv);
  // Qt applies the user's locale to the C library; core formats and parses numbers with
  // printf/strtod (the PostgreSQL cost DB's text parameters, the measure-worker protocol),
  // which must see "1.5", not "1,5" (QCoreApplication's documented advice).
  std::setlocale(LC_NUMERIC, "C");
  QApplication::setApplicationName("collage-explorer");
  QApplication::setOrganizationName("collage");
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Collage Explorer: find, watch and steer the fastest multi-backend placement of an ONNX model.");
  parser.addHelpOption();
  parser.addPositionalArgument("model", "ONNX model to open");
  QCommandLineOption tune({"t", "tune"}, "Tune after opening the model.");
  QCommandLineOption refine("refine", "After tuning, run the graph-level search (with --screenshot).");
  QCommandLineOption placement("placement", "Placement JSON to load.", "file");
  QCommandLineOption screenshot("screenshot", "Save the window as PNG when ready, then exit.", "path");
  QCommandLineOption profile("profile", "With --screenshot: profile the placement and show its timeline.");
  QCommandLineOption diff("diff", "With --screenshot: show the diff of the placement against this file.",
                          "file");
  QCommandLineOption select("select", "With --screenshot: select this node (by name) before the picture.",
                            "node");
  QCommandLineOption collapse_depth(
      "collapse-depth",
      "With --screenshot: collapse the name scopes of this depth (1 = top level; 0 = every scope expanded).",
      "N");
  QCommandLineOption heatmap("heatmap", "With --screenshot: colour the graph by kernel time.");
  QCommandLineOption open_body(
      "open-body",
      "With --screenshot and --select NODE: picture the window of that node's body (e.g. else_branch).",
      "body");
  QCommandLineOption size("size", "With --screenshot: the window's size in the picture (default 1600x1000).",
                          "WxH");
  QCommandLineOption dim(
      "dim",
      "A symbolic input dim's value (repeatable; unlisted ones are 1). With a placement of "
      "shape buckets: the bucket to show (default its first).",
      "NAME=V");
  QCommandLineOption diff_bucket(
      "diff-bucket",
      "With --screenshot: show the diff of the placement against this shape bucket of its file.", "NAME=V");
  QCommandLineOption cost_db("cost-db", "Cost database: an SQLite file or postgresql://user@host:port/db.",
                             "location");
  QCommandLineOption remote("remote",
                            "Measure on the team's collage workers (with a postgresql:// cost DB).");
  QCommandLineOption accuracy("accuracy",
                              "The tune's accuracy budget: reduced-precision kernels take part (e.g. "
                              "cosine=0.999,max-rel=5e-2), as collage tune --accuracy.",
                              "spec");
  parser.addOptions({tune, refine, placement, screenshot, profile, diff, select, collapse_depth, heatmap,
                     size, cost_db, remote, dim, diff_bucket, open_body, accuracy});
  parser.process(app);
  collage::DimValues dims;
  QString accuracy_spec;  // validated here (exit 2), normalised
  try {
    std::vector<std::string> specs;
    for (const QString& v : parser.values(dim)) specs.push_back(v.toStdString());
    std::vector<collage::DimValues> buckets = collage::expand_buckets(collage::parse_dim_choices(specs));
    if (buckets.size() != 1)
      throw collage::Error(collage::ErrorKind::InvalidInput,
                           "--dim: the explorer opens one shape, not " + collage::bucket_list(buckets));
    dims = buckets.front();
    if (parser.isSet(accuracy))
      accuracy_spec =
          QString::fromStdString(collage::parse_accuracy(parser.value(accuracy).toStdString()).to_string());
  } catch (const collage::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  collage::MainWindow window;
  if (parser.isSet(cost_db)) window.set_cost_db(parser.value(cost_db), false);
  if (parser.isSet(remote)) window.set_remote(true, false);
  if (!accuracy_spec.isEmpty()) window.set_accuracy(accuracy_spec);
  window.show();
  const QStringList args = parser.positionalArguments();
  const bool batch = parser.isSet(screenshot);
  if (batch) {
    collage::BatchOptions options;
    options.screenshot = parser.value(screenshot);
    options.placement = parser.value(placement);
    options.tune = parser.isSet(tune);
    options.refine = parser.isSet(refine);
    options.profile = parser.isSet(profile);
    options.diff = parser.value(diff);
    options.select = parser.value(select);
    options.heatmap = parser.isSet(heatmap);
    options.open_body = parser.value(open_body);
    options.diff_bucket = parser.value(diff_bucket);
    if (parser.isSet(size)) {
      const QStringList wh = parser.value(size).split('x');
      bool ok_w = false, ok_h = false;
      if (wh.size() == 2) {
        options.width = wh[0].toInt(&ok_w);
        options.height = wh[1].toInt(&ok_h);
      }
      if (!ok_w || !ok_h || options.width < 320 || options.height < 240 || options.width > 8192 ||
          options.height > 8192) {
        std::fprintf(stderr, "error: --size: '%s' is not WIDTHxHEIGHT within 320x240 and 8192x8192\n",
                     parser.value(size).toStdString().c_str());
        return 2;
      }
    }
    if (parser.isSet(collapse_depth)) {
      bool ok = false;
      options.collapse_depth = parser.value(collapse_depth).toInt(&ok);
      if (!ok || options.collapse_depth < 0) {
        std::fprintf(stderr,
                     "error: --collapse-depth: '%s' is not a depth (0 = expanded, 1 = top level, ...)\n",
                     parser.value(collapse_depth).toStdString().c_str());
        return 2;
      }
    }
    new collage::BatchScreenshot(&window, options);  // it loads the placement in order
  }
  if (!args.isEmpty()) {
    window.open_model(args[0], dims);
    const bool tune_now = parser.isSet(tune) && !batch;
    const QString placement_path = parser.isSet(placement) && !batch ? parser.value(placement) : QString();
    // Once, for the model given on the command line: its placement (whose costs load as a
    // job of their own), then the tune.
    auto started = std::make_shared<bool>(false);
    QObject::connect(
        window.controller(), &collage::ExplorerController::job_finished, &window,
        [&window, tune_now, placement_path, started](const collage::JobReport& report) {
          if (*started) return;
          if (report.job == collage::Job::Load && !placement_path.isEmpty()) {
            window.load_placement(placement_path);
            if (!tune_now) *started = true;
          } else if (report.job == collage::Job::Load || report.job == collage::Job::PlacementCosts) {
            *started = true;
            if (tune_now) window.start_tune();
          }
        });
  }
  return app.exec();
}
