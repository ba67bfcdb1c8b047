// `collage diff A.json B.json [--model MODEL] [--json]`: what changed between two placements of
// one model (core/search/placement_diff.h). Without --model the files are read structurally;
// with it both are validated against the model and nodes are printed by name. Placement files
// with shape buckets: --dim picks the bucket of both, --bucket-a / --bucket-b one each (two
// different buckets, also of one file, need --model: where the placement changes with the shape).
#include <cstdio>
#include <optional>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/model_loading.h"
#include "backends/registry.h"
#include "core/search/placement_buckets.h"
#include "core/search/placement_diff.h"

namespace collage::cli {
namespace {

// Errors name the file: "b.json: placement: malformed JSON ...".
template <class Read>
Placement read_named(const std::string& path, const std::string& text, Read read) {
  try {
    return read(text);
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
}

// "3-5,8" (ids) or "'a', 'b', 'c' … (7 nodes)" (names, with the model).
std::string nodes_text(const std::vector<NodeId>& nodes, const Graph* graph) {
  std::string text;
  if (graph) {
    for (size_t i = 0; i < nodes.size() && i < 3; ++i)
      text += (i ? ", '" : "'") + graph->node(nodes[i]).name + "'";
    if (nodes.size() > 3) text += " … (" + std::to_string(nodes.size()) + " nodes)";
    return text;
  }
  for (size_t i = 0; i < nodes.size();) {
    size_t j = i;
    while (j + 1 < nodes.size() && nodes[j + 1] == nodes[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(nodes[i]) +
            (j > i ? "-" + std::to_string(nodes[j]) : std::string());
    i = j + 1;
  }
  return text;
}

// A placement file's buckets (one without dims for a one-shape file); errors name the file.
std::vector<PlacementFileBucket> read_named_buckets(const std::string& path) {
  try {
    return read_placement_buckets(workflow::read_placement_text(path));
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Io) throw;
    throw Error(e.kind(), path + ": " + e.what());
  }
}

void print_side(const char* side, const std::string& path, const Placement& p) {
  std::printf("%s: %s: %zu kernels, predicted %.3f ms, %d thread%s\n", side, path.c_str(), p.kernels.size(),
              p.predicted_ms, p.threads, p.threads == 1 ? "" : "s");
}

}  // namespace

int command_diff(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, with_model_options({"--model", "--bucket-a", "--bucket-b"}), {"--json"});
  if (args.positional.size() != 2)
    throw Error(
        ErrorKind::InvalidInput,
        "usage: collage diff A.json B.json [--model MODEL] [--dim NAME=V | --bucket-a NAME=V --bucket-b "
        "NAME=V] [--json]");
  std::string path_a = args.positional[0];
  std::string path_b = args.positional[1];
  // Files with a placement per shape bucket: --dim picks one bucket of both, --bucket-a/-b one each.
  auto one_bucket = [&](const char* option) {
    std::vector<DimValues> buckets = expand_buckets(parse_dim_choices(args.all(option)));
    if (buckets.size() != 1)
      throw Error(ErrorKind::InvalidInput,
                  std::string(option) + " names one bucket, not " + bucket_list(buckets));
    return buckets.front();
  };
  const DimValues dims = one_bucket("--dim");
  const DimValues dims_a = args.has("--bucket-a") ? one_bucket("--bucket-a") : dims;
  const DimValues dims_b = args.has("--bucket-b") ? one_bucket("--bucket-b") : dims;
  auto bucket_text = [](const std::string& path, const DimValues& wanted) {
    std::vector<PlacementFileBucket> file = read_named_buckets(path);
    if (file.size() == 1 && file.front().dims.empty()) return file.front().placement_json;
    if (wanted.empty()) {
      std::vector<DimValues> there;
      for (const PlacementFileBucket& b : file) there.push_back(b.dims);
      throw Error(ErrorKind::InvalidInput, path + " holds a placement per shape bucket (" +
                                               bucket_list(there) +
                                               "); name one with --dim or --bucket-a/--bucket-b");
    }
    return find_bucket(file, wanted, path).placement_json;
  };
  std::string text_a = bucket_text(path_a, dims_a), text_b = bucket_text(path_b, dims_b);
  if (!dims_a.empty() && dims_a != dims) path_a += " [" + bucket_label(dims_a) + "]";
  if (!dims_b.empty() && dims_b != dims) path_b += " [" + bucket_label(dims_b) + "]";
  const bool across_buckets = dims_a != dims_b;
  if (across_buckets && !args.has("--model"))
    throw Error(ErrorKind::InvalidInput,
                "comparing two shape buckets needs --model: their graphs are checked to have the same nodes");
  Placement a = read_named(path_a, text_a, placement_structure_from_json);
  Placement b = read_named(path_b, text_b, placement_structure_from_json);
  PlacementDiff diff;
  if (!across_buckets) diff = diff_placements(a, b, path_a, path_b);  // different models: refused here
  std::optional<Graph> graph, graph_b;
  if (args.has("--model")) {
    workflow::LoadOptions load = parse_load_options_for_buckets(args);
    load.dims = dims_a;
    graph = workflow::load_model(args.get("--model", ""), load);
    a = read_named(path_a, text_a, [&](const std::string& text) {
      return placement_from_json(text, *graph, all_backends());
    });
    if (across_buckets) {
      load.dims = dims_b;
      graph_b = workflow::load_model(args.get("--model", ""), load);
    }
    const Graph& gb = across_buckets ? *graph_b : *graph;
    b = read_named(path_b, text_b,
                   [&](const std::string& text) { return placement_from_json(text, gb, all_backends()); });
    diff = across_buckets ? diff_buckets(*graph, a, gb, b, path_a, path_b)
                          : diff_placements(a, b, path_a, path_b);
  }
  const Graph* g = graph ? &*graph : nullptr;
  if (args.has("--json")) {
    std::printf("%s\n", placement_diff_to_json(diff, g).c_str());
    return 0;
  }
  print_side("A", path_a, a);
  print_side("B", path_b, b);
  if (diff.threads_a != diff.threads_b)
    std::printf("note: the costs were measured at %d and %d threads: compare them with care\n",
                diff.threads_a, diff.threads_b);
  if (diff.identical()) {
    std::printf("identical: all %zu kernels have the same nodes and backend\n", diff.unchanged_kernels);
  } else {
    std::printf("%zu kernel%s unchanged; %zu node%s changed in %zu region%s:\n", diff.unchanged_kernels,
                diff.unchanged_kernels == 1 ? "" : "s", diff.changed_nodes,
                diff.changed_nodes == 1 ? "" : "s", diff.regions.size(), diff.regions.size() == 1 ? "" : "s");
    for (size_t i = 0; i < diff.regions.size(); ++i) {
      const DiffRegion& r = diff.regions[i];
      std::printf("region %zu: %zu node%s, %s -> %s: A %.3f ms, B %.3f ms, delta %+.3f ms%s\n", i + 1,
                  r.nodes.size(), r.nodes.size() == 1 ? "" : "s", backend_summary(r.a).c_str(),
                  backend_summary(r.b).c_str(), r.a_ms, r.b_ms, r.delta_ms(),
                  r.costs_complete() ? "" : " (kernels with no cost left out)");
      for (const auto& [side, kernels] : {std::pair{"A", &r.a}, std::pair{"B", &r.b}})
        for (const PlacedKernel& k : *kernels) {
          char cost[32] = "    no cost";
          if (k.cost.valid()) std::snprintf(cost, sizeof cost, "%8.3f ms", k.cost.median_ms);
          std::printf("  %s %-18s %-28s %s  nodes %s\n", side, k.backend.c_str(), k.label.c_str(), cost,
                      nodes_text(k.nodes, g).c_str());
        }
    }
  }
  std::string per_backend;
  for (const auto& [backend, n] : diff.nodes_per_backend)
    per_backend += (per_backend.empty() ? "" : ", ") + backend + " " + std::to_string(n.a) + " -> " +
                   std::to_string(n.b);
  std::printf("nodes per backend (A -> B): %s\n", per_backend.c_str());
  std::printf("predicted: A %.3f ms, B %.3f ms, delta %+.3f ms\n", diff.predicted_a_ms, diff.predicted_b_ms,
              diff.predicted_delta_ms());
  return 0;
}

}  // namespace collage::cli
