// The CLI's model options, shared by every command that imports a model:
// --dim NAME=N[,N...] and --bind NAME=FILE.pb (workflow::LoadOptions).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "app/args/args.h"
#include "app/workflow/workflow.h"
#include "core/import/onnx_import.h"
#include "core/ir/graph.h"
#include "core/ir/shape_buckets.h"

namespace collage::cli {

// `value_options` plus the model options (--dim, --bind), for parse_args.
std::set<std::string> with_model_options(std::set<std::string> value_options);
// The shape buckets --dim asks for: every combination (core/ir/shape_buckets.h); one empty
// bucket without --dim.
std::vector<DimValues> parse_buckets(const Args& args);
// --dim (one value per dim: InvalidInput for several) and --bind (tensor files read here),
// for workflow::load_model.
workflow::LoadOptions parse_load_options(const Args& args);
// The same without dims, for the commands that load one graph per bucket (parse_buckets).
workflow::LoadOptions parse_load_options_for_buckets(const Args& args);
// A node named `ref`, else with post-DFS id `ref`; InvalidInput naming `option` otherwise.
NodeId node_by_ref(const Graph& graph, const std::string& ref, const std::string& option);

}  // namespace collage::cli
