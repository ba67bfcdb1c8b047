// ONNX import: file -> Graph with one normalised form per op, static shapes
// everywhere and constant sub-graphs folded.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/kernel.h"

namespace collage {

constexpr int kMinOpset = 6;
constexpr int kMaxOpset = 21;

struct ImportOptions {
  // Values for symbolic input dims ("batch" -> 4); unnamed or unlisted ones default to 1.
  std::map<std::string, int64_t> dims;
  // Evaluates nodes on constant inputs (folding) and on placeholder inputs
  // (shapes ONNX inference missed). Required: pass native::evaluate_node.
  NodeEvaluator evaluator;
  // float16/bfloat16 models compute in float32 behind their half interface
  // (import_detail::compute_half_in_float32); false keeps them as written.
  bool half_in_float32 = true;
};

struct ImportReport {
  std::vector<std::string> notes;  // e.g. "input 'x' dim 0 ('batch') set to 1"
  int folded_nodes = 0;
};

Graph import_onnx_file(const std::string& path, const ImportOptions& options, ImportReport* report = nullptr);
// `base_dir` resolves external data files.
Graph import_onnx_bytes(const std::string& bytes, const std::string& base_dir, const ImportOptions& options,
                        ImportReport* report = nullptr);

}  // namespace collage
