// A zoo sample as the importer gives it (written to a temporary file, imported with
// the native evaluator for constant folding, the file removed).
#pragma once

#include <string>

#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "resources/samples/zoo.h"
#include "tests/unit/temp_dir.h"

namespace collage::testing {

inline Graph sample_graph(const std::string& name) {
  ScopedTempDir dir("collage_sample_graph");
  const std::string path = dir.file(name + ".onnx");
  samples::build_sample(name).save(path);
  ImportOptions io;
  io.evaluator = native::node_evaluator();
  return import_onnx_file(path, io);
}

}  // namespace collage::testing
