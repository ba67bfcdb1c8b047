// collage-explorer [MODEL] [--tune [--refine]] [--placement FILE] [--screenshot PATH]
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include "app/explorer/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
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
  parser.addOptions({tune, refine, placement, screenshot});
  parser.process(app);
  collage::MainWindow window;
  window.show();
  const QStringList args = parser.positionalArguments();
  if (parser.isSet(screenshot))
    window.screenshot_when_ready(parser.value(screenshot), parser.isSet(tune), parser.isSet(refine));
  if (!args.isEmpty()) {
    window.open_model(args[0]);
    if (parser.isSet(tune) && !parser.isSet(screenshot)) {
      QObject::connect(
          &window, &collage::MainWindow::model_loaded, &window,
          [&window](bool ok) {
            if (ok) QTimer::singleShot(0, &window, [&window] { window.start_tune(); });
          },
          Qt::QueuedConnection);
    }
    if (parser.isSet(placement)) {
      QObject::connect(
          &window, &collage::MainWindow::model_loaded, &window,
          [&window, &parser, &placement](bool ok) {
            if (ok) QTimer::singleShot(0, &window, [&] { window.load_placement(parser.value(placement)); });
          },
          Qt::QueuedConnection);
    }
  }
  return app.exec();
}
