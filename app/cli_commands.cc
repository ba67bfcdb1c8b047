#include "app/cli_commands.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "app/args/args.h"
#include "app/model_loading.h"
#include "app/workflow/workflow.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/ir/graph_analysis.h"
#include "core/ir/random_inputs.h"
#include "core/ir/statistics.h"
#include "core/ir/subgraph.h"
#include "core/runtime/executor.h"
#include "core/tensor_io/tensor_proto.h"

namespace collage::cli {

namespace {

std::string value_signature(const Value& v) { return describe_type(v); }

std::string human(double x) {
  char buf[32];
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (x >= 1000 && u < 4) {
    x /= 1000;
    ++u;
  }
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f%s", x, units[u]);
  return buf;
}

// `collage run` has the input values: a model whose shapes depend on some of them is
// specialised on the given ones (bound as with --bind) instead of refused.
Graph load_specialised(const std::string& path, workflow::LoadOptions& load,
                       const std::map<std::string, std::string>& input_files) {
  try {
    return workflow::load_model(path, load);
  } catch (const ValueDependentShapeError& e) {
    std::string names, missing;
    size_t count = 0;
    for (const std::string& name : e.inputs()) {
      if (load.bound_inputs.count(name)) continue;
      auto it = input_files.find(name);
      if (it == input_files.end()) {
        missing += " --input " + name + "=FILE.pb";
        continue;
      }
      load.bound_inputs[name] = read_tensor_file(it->second);
      names += (names.empty() ? "'" : ", '") + name + "'";
      ++count;
    }
    if (!missing.empty())
      throw ValueDependentShapeError(std::string(e.what()) + " (or give their values:" + missing + ")",
                                     e.inputs());
    if (names.empty()) throw;
    Graph graph = workflow::load_model(path, load);
    std::cout << "note: shapes depend on input" << (count == 1 ? " " : "s ") << names
              << ": specialised on the given values\n";
    return graph;
  }
}

const std::string& single_model(const Args& args, const char* command) {
  if (args.positional.size() != 1)
    throw Error(ErrorKind::InvalidInput,
                std::string("usage: collage ") + command + " MODEL [options] (see --help)");
  return args.positional[0];
}

}  // namespace

namespace {

// "bodies:" then, per control-flow node, each body's node count and op mix (nested indented).
void print_bodies(const Graph& graph, const std::string& indent) {
  bool first = true;
  for (const Node& n : graph.nodes)
    for (const auto& [key, a] : n.attrs) {
      if (a.kind != AttrKind::Graph || !a.g) continue;
      if (first && indent.empty()) std::cout << "bodies:\n";
      first = false;
      const std::string mix = op_mix(*a.g, all_nodes(*a.g));
      std::cout << indent << "  " << n.name << " (" << n.op_type << ") " << key << ": " << a.g->nodes.size()
                << " nodes" << (mix.empty() ? "" : " (" + mix + ")") << "\n";
      print_bodies(*a.g, indent + "  ");
    }
}

}  // namespace

int command_info(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, with_model_options({}), {});
  const std::string& path = single_model(args, "info");
  ImportReport report;
  Graph graph = workflow::load_model(path, parse_load_options(args), &report);

  std::cout << "model: " << path << "\n";
  for (const auto& note : report.notes) std::cout << "note: " << note << "\n";
  std::cout << "inputs:\n";
  for (ValueId id : graph.inputs)
    std::cout << "  " << graph.value(id).name << "  " << value_signature(graph.value(id)) << "\n";
  std::cout << "outputs:\n";
  for (ValueId id : graph.outputs)
    std::cout << "  " << graph.value(id).name << "  " << value_signature(graph.value(id)) << "\n";

  std::map<std::string, int> histogram;
  double flops = 0;
  for (NodeId n = 0; n < graph.num_nodes(); ++n) {
    histogram[graph.node(n).op_type]++;
    flops += node_cost(graph, n).flops;
  }
  double params = 0, param_bytes = 0;
  for (const Value& v : graph.values) {
    if (!v.constant || v.consumers.empty()) continue;
    params += static_cast<double>(v.constant->size());
    param_bytes += static_cast<double>(v.constant->bytes());
  }
  std::cout << "nodes: " << graph.num_nodes() << " (" << report.folded_nodes
            << " constant nodes folded at import)\n";
  std::cout << "FLOPs: " << human(flops) << " (" << static_cast<long long>(flops) << ")\n";
  std::cout << "parameters: " << human(params) << " (" << human(param_bytes) << "B)\n";
  std::vector<std::pair<std::string, int>> ops(histogram.begin(), histogram.end());
  std::stable_sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::cout << "ops:\n";
  for (const auto& [op, count] : ops) std::printf("  %-24s %d\n", op.c_str(), count);
  print_bodies(graph, "");
  return 0;
}

int command_run(const std::vector<std::string>& argv) {
  Args args = parse_args(
      argv, with_model_options({"--input", "--output-dir", "--repeat", "--threads", "--seed", "--placement"}),
      {});
  const std::string& path = single_model(args, "run");
  int repeat = args.get_int("--repeat", 1, 1, 1000000);
  int threads = args.get_int("--threads", 1, 1, 1024);
  int seed = args.get_int("--seed", 1, 0, 1 << 30);
  set_backend_threads(threads);
  std::map<std::string, std::string> input_files;
  for (const std::string& spec : args.all("--input")) {
    auto [name, file] = split_assignment(spec, "--input");
    input_files[name] = file;
  }
  workflow::LoadOptions load = parse_load_options(args);
  Graph graph = load_specialised(path, load, input_files);

  std::vector<Tensor> inputs = random_inputs(graph, static_cast<uint64_t>(seed));
  for (const auto& [name, file] : input_files) {
    if (load.bound_inputs.count(name)) continue;  // a constant of the graph now
    auto it = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                           [&](ValueId id) { return graph.value(id).name == name; });
    if (it == graph.inputs.end())
      throw Error(ErrorKind::InvalidInput,
                  "--input " + name + "=" + file + ": the model has no input '" + name + "'");
    inputs[static_cast<size_t>(it - graph.inputs.begin())] =
        read_value_file(file, graph.value(*it).kind, graph.value(*it).dtype);
  }

  std::vector<Tensor> outputs;
  double median_of_runs = 0, min_ms = 0;
  std::string verification, memory;
  if (args.has("--placement")) {
    Placement placement = workflow::read_placement(args.get("--placement", ""), graph);
    // Costs were measured at the placement's thread count: run at it unless told otherwise.
    if (!args.has("--threads")) threads = placement.threads;
    workflow::RunOptions options;
    options.threads = threads;
    options.repeat = repeat;
    workflow::PlacementRunReport run = workflow::verify_and_time(graph, placement, inputs, options);
    if (!run.verify.ok())
      throw Error(ErrorKind::Internal,
                  "the placement's outputs disagree with the native reference: " + run.verify.mismatch);
    outputs = run.verify.outputs;
    median_of_runs = run.timing.median_ms;
    min_ms = run.timing.min_ms;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "placement: %zu kernels, predicted %.3f ms; verified against the native reference "
                  "(max abs error %.3g)\n",
                  placement.kernels.size(), placement.predicted_ms, run.verify.max_abs_error);
    verification = buf;
  } else {
    Executor executor(graph, native::native_steps(graph));
    std::vector<double> ms;
    for (int r = 0; r < repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      outputs = executor.run(inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    median_of_runs = median(ms);
    min_ms = *std::min_element(ms.begin(), ms.end());
    char buf[96];
    std::snprintf(buf, sizeof buf, ", peak intermediate memory %.1f MiB",
                  static_cast<double>(executor.memory_stats().peak_live_bytes) / (1 << 20));
    memory = buf;
  }

  if (args.has("--output-dir")) {
    std::vector<std::string> names;
    for (ValueId v : graph.outputs) names.push_back(graph.value(v).name);
    write_tensor_files(args.get("--output-dir", "."), names, outputs);
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    std::cout << "output " << graph.value(graph.outputs[i]).name << ": " << describe_value(outputs[i])
              << "\n";
  std::cout << verification;
  std::printf("threads %d, %d repeat%s%s\n", threads, repeat, repeat == 1 ? "" : "s", memory.c_str());
  std::printf("median %.3f ms, min %.3f ms\n", median_of_runs, min_ms);
  return 0;
}

}  // namespace collage::cli
