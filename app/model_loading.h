// The app-side wiring of the importer: native kernels for folding, --dim values.
#pragma once

#include <string>
#include <vector>

#include "core/import/onnx_import.h"
#include "core/ir/graph.h"

namespace collage::cli {

// Parses repeated "--dim NAME=VALUE" options.
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dim_options);
Graph load_model(const std::string& path, const std::map<std::string, int64_t>& dims,
                 ImportReport* report = nullptr);
// A node named `ref`, else with post-DFS id `ref`; InvalidInput naming `option` otherwise.
NodeId node_by_ref(const Graph& graph, const std::string& ref, const std::string& option);

}  // namespace collage::cli
