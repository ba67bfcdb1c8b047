// A zoo sample as the importer gives it (written to a temporary file, imported with
// the native evaluator for constant folding, the file removed).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "resources/samples/zoo.h"

namespace collage::testing {

inline Graph sample_graph(const std::string& name) {
  auto path = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".onnx");
  samples::build_sample(name).save(path.string());
  ImportOptions io;
  io.evaluator = native::node_evaluator();
  Graph g = import_onnx_file(path.string(), io);
  std::filesystem::remove(path);
  return g;
}

}  // namespace collage::testing
