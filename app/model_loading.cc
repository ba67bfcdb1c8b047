#include "app/model_loading.h"

#include <algorithm>

#include "app/args/args.h"
#include "core/tensor_io/tensor_proto.h"

namespace collage::cli {

std::vector<DimValues> parse_buckets(const Args& args) {
  return expand_buckets(parse_dim_choices(args.all("--dim")));
}

std::set<std::string> with_model_options(std::set<std::string> value_options) {
  value_options.insert("--dim");
  value_options.insert("--bind");
  value_options.insert("--memory-budget");
  value_options.insert("--shapes");
  return value_options;
}

// "512M", "4G", "1073741824": a positive byte count (K/M/G/T are powers of 1024).
int64_t parse_bytes(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = used ? text.substr(used) : "";
  static const std::map<std::string, double> kUnits = {
      {"", 1}, {"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}, {"T", 1099511627776.0}};
  auto it = kUnits.find(unit);
  if (!used || it == kUnits.end() || !(v > 0) || v * it->second > 9e18)
    throw Error(ErrorKind::InvalidInput, "--memory-budget " + text + ": expected a size such as 512M or 4G");
  return static_cast<int64_t>(v * it->second);
}

workflow::LoadOptions parse_load_options(const Args& args) {
  std::vector<DimValues> buckets = parse_buckets(args);
  if (buckets.size() > 1)
    throw Error(ErrorKind::InvalidInput,
                "--dim lists " + std::to_string(buckets.size()) + " shapes (" + bucket_list(buckets) +
                    "); this command takes one (tune, export, explain and profile take several)");
  workflow::LoadOptions options = parse_load_options_for_buckets(args);
  options.dims = buckets.front();
  return options;
}

workflow::LoadOptions parse_load_options_for_buckets(const Args& args) {
  workflow::LoadOptions options;
  for (const std::string& text : args.all("--bind")) {
    auto [name, file] = split_assignment(text, "--bind");
    if (options.bound_inputs.count(name))
      throw Error(ErrorKind::InvalidInput, "--bind " + text + ": input '" + name + "' is bound twice");
    options.bound_inputs[name] = read_tensor_file(file);
  }
  if (args.has("--memory-budget")) options.memory_budget_bytes = parse_bytes(args.get("--memory-budget", ""));
  const std::string shapes = args.get("--shapes", "static");
  if (shapes != "static" && shapes != "dynamic")
    throw Error(ErrorKind::InvalidInput, "--shapes " + shapes + ": expected static or dynamic");
  options.dynamic_shapes = shapes == "dynamic";
  return options;
}

NodeId node_by_ref(const Graph& graph, const std::string& ref, const std::string& option) {
  for (NodeId n = 0; n < graph.num_nodes(); ++n)
    if (graph.node(n).name == ref) return n;
  if (!ref.empty() && ref.size() < 10 && std::all_of(ref.begin(), ref.end(), ::isdigit)) {
    long id = std::stol(ref);
    if (id >= 0 && id < graph.num_nodes()) return static_cast<NodeId>(id);
  }
  throw Error(ErrorKind::InvalidInput, option + " " + ref + ": the model has no node with that name or id");
}

}  // namespace collage::cli
