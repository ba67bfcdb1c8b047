// collage-run ARTIFACT [--input NAME=FILE.pb ...] [--output-dir DIR] [--repeat N]
//                      [--seed S] [--no-memory-plan]
// Loads a compiled artifact with the runtime library and runs it: inputs from .pb
// tensor files (random ones, seeded, for inputs not given), outputs to DIR/NAME.pb.
// Errors: one line on stderr and exit code 2 (3 for internal errors).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "app/args/args.h"
#include "app/runtime/runtime.h"
#include "core/ir/random_inputs.h"
#include "core/ir/settings.h"
#include "core/ir/statistics.h"
#include "core/tensor_io/tensor_proto.h"

namespace {

using namespace collage;
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
double mib(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

constexpr const char* kUsage =
    "usage: collage-run ARTIFACT [--input NAME=FILE.pb ...] [--dim NAME=V ...] [--output-dir DIR] [--repeat "
    "N] "
    "[--seed S] [--no-memory-plan]\n"
    "  loads a compiled artifact (collage export) and runs it; inputs not given are seeded random tensors;\n"
    "  prints load time, outputs, memory and median/min latency (with --repeat N > 1, after at least 3\n"
    "  untimed runs and 10 ms of them); errors exit with code 2.\n"
    "  An artifact with shape buckets runs the bucket --dim names, else the one the --input files' shapes\n"
    "  fit, else every bucket in turn (a line each; outputs in DIR/BUCKET/).\n";

// The buckets to run: the one --dim names, else the one the given input files fit, else all.
std::vector<size_t> buckets_to_run(const Runtime& rt, const cli::Args& args,
                                   const std::map<std::string, Tensor>& given) {
  std::vector<DimValues> all;
  for (size_t b = 0; b < rt.bucket_count(); ++b) all.push_back(rt.bucket_dims(b));
  if (args.has("--dim") && rt.bucket_count() == 1 && rt.bucket_dims(0).empty())
    throw Error(
        ErrorKind::InvalidInput,
        "--dim: the artifact holds one plan, no shape buckets (its inputs are its shapes); --dim picks a "
        "bucket of an artifact exported from a placement tuned with several --dim values");
  if (args.has("--dim")) {
    std::vector<DimValues> wanted = expand_buckets(parse_dim_choices(args.all("--dim")));
    if (wanted.size() != 1)
      throw Error(ErrorKind::InvalidInput, "--dim names one bucket to run, not " + bucket_list(wanted));
    const DimValues& dims = wanted.front();
    for (size_t b = 0; b < all.size(); ++b)
      if (all[b] == dims) return {b};
    throw Error(ErrorKind::InvalidInput,
                "the artifact has no plan for " + bucket_label(dims) + "; its buckets: " + bucket_list(all));
  }
  if (rt.bucket_count() == 1) return {0};
  if (given.empty()) {
    std::vector<size_t> every(rt.bucket_count());
    for (size_t b = 0; b < every.size(); ++b) every[b] = b;
    return every;
  }
  for (size_t b = 0; b < rt.bucket_count(); ++b) {
    bool fits = true;
    for (const ArtifactTensorInfo& t : rt.info(b).inputs)
      if (auto it = given.find(t.name); it != given.end()) fits = fits && it->second.shape() == t.shape;
    if (fits) return {b};
  }
  std::vector<Shape> shapes;  // the files' shapes, the others the first bucket's: select names the buckets
  for (const ArtifactTensorInfo& t : rt.info(0).inputs)
    shapes.push_back(given.count(t.name) ? given.at(t.name).shape() : t.shape);
  return {rt.select(shapes)};
}

int run(const std::vector<std::string>& argv) {
  if (!argv.empty() && (argv[0] == "--help" || argv[0] == "-h")) {
    std::printf("%s", kUsage);
    return 0;
  }
  cli::Args args =
      cli::parse_args(argv, {"--input", "--output-dir", "--repeat", "--seed", "--dim"}, {"--no-memory-plan"});
  if (args.positional.size() != 1)
    throw Error(ErrorKind::InvalidInput, std::string(kUsage).substr(0, std::string(kUsage).find('\n')));
  int repeat = args.get_int("--repeat", 1, 1, 1000000);
  RuntimeOptions options;
  options.use_memory_plan = !args.has("--no-memory-plan");
  auto t0 = Clock::now();
  std::unique_ptr<Runtime> rt = Runtime::load(args.positional[0], options);
  double load_ms = ms_since(t0);
  const ArtifactInfo& info = rt->info();
  size_t kernels = 0;
  for (size_t b = 0; b < rt->bucket_count(); ++b) kernels += rt->kernel_count(b);
  std::string buckets;
  if (rt->bucket_count() > 1) {
    std::vector<DimValues> all;
    for (size_t b = 0; b < rt->bucket_count(); ++b) all.push_back(rt->bucket_dims(b));
    buckets = ", " + std::to_string(rt->bucket_count()) + " shape buckets (" + bucket_list(all) + "; " +
              std::to_string(rt->shared_weights()) + " converted weights shared between them)";
  }
  std::printf(
      "artifact %s: model '%s', format %d.%d, %zu kernels%s, %d thread%s, loaded in %.1f ms "
      "(read, verify, parse %.1f ms; build kernels %.1f ms)\n",
      args.positional[0].c_str(), info.model_name.c_str(), info.major, info.minor, kernels, buckets.c_str(),
      info.threads, info.threads == 1 ? "" : "s", load_ms, rt->parse_ms(), rt->compile_ms());
  for (const std::string& note : rt->notes()) std::printf("note: %s\n", note.c_str());

  std::map<std::string, Tensor> given;
  for (const std::string& spec : args.all("--input")) {
    auto [name, file] = cli::split_assignment(spec, "--input");
    auto it = std::find_if(info.inputs.begin(), info.inputs.end(),
                           [&](const ArtifactTensorInfo& t) { return t.name == name; });
    if (it == info.inputs.end())
      throw Error(ErrorKind::InvalidInput, "--input " + spec + ": the model has no input '" + name + "'");
    const Graph& g = rt->graph(0);
    const ValueId id = g.find_value(name);
    given[name] =
        id == kNoValue ? read_tensor_file(file) : read_value_file(file, g.value(id).kind, g.value(id).dtype);
  }
  const std::vector<size_t> chosen = buckets_to_run(*rt, args, given);
  const bool several = chosen.size() > 1;
  for (size_t bucket : chosen) {
    const ArtifactInfo& plan = rt->info(bucket);
    std::vector<Tensor> inputs =
        random_inputs(rt->graph(bucket), static_cast<uint64_t>(args.get_int("--seed", 1, 0, 1 << 30)));
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      if (auto it = given.find(plan.inputs[i].name); it != given.end()) inputs[i] = it->second;
    std::vector<Tensor> outputs;
    std::vector<double> ms;
    if (repeat > 1) {  // timed runs start warm (first-touch pages, library caches, thread pools)
      auto settle = Clock::now();
      for (int warm = 0; warm < 3 || ms_since(settle) < kSettings.side_by_side_settle_ms; ++warm)
        outputs = rt->run(inputs);
    }
    for (int r = 0; r < repeat; ++r) {
      auto t1 = Clock::now();
      outputs = rt->run(inputs);
      ms.push_back(ms_since(t1));
    }
    std::string prefix =
        rt->bucket_count() > 1 ? "bucket " + bucket_label(rt->bucket_dims(bucket)) + ": " : "";
    if (args.has("--output-dir")) {
      std::vector<std::string> names;
      for (const ArtifactTensorInfo& t : plan.outputs) names.push_back(t.name);
      std::string dir = args.get("--output-dir", ".");
      if (several) dir += "/" + bucket_label(rt->bucket_dims(bucket));
      write_tensor_files(dir, names, outputs);
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      std::printf("%soutput %s: %s\n", prefix.c_str(), plan.outputs[i].name.c_str(),
                  describe_value(outputs[i]).c_str());
    MemoryStats mem = rt->last_memory_stats();
    if (options.use_memory_plan)
      std::printf(
          "%smemory: static plan arena %.2f MiB (without reuse %.2f MiB), %zu unplanned allocations%s\n",
          prefix.c_str(), mib(rt->arena_bytes(bucket)), mib(plan.unplanned_bytes), mem.unplanned_allocations,
          mem.unplanned_allocations ? " (values shaped as the model runs, or larger than their planned slot: "
                                      "served from the heap)"
                                    : "");
    else
      std::printf("%smemory: dynamic pool peak %.2f MiB (without reuse %.2f MiB)\n", prefix.c_str(),
                  mib(mem.peak_live_bytes), mib(plan.unplanned_bytes));
    std::printf("%s%d repeat%s: median %.3f ms, min %.3f ms\n", prefix.c_str(), repeat,
                repeat == 1 ? "" : "s", median(ms), *std::min_element(ms.begin(), ms.end()));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const collage::Error& e) {
    std::cerr << "collage-run: " << collage::error_kind_name(e.kind()) << ": " << e.what() << "\n";
    return e.kind() == collage::ErrorKind::Internal ? 3 : 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "collage-run: out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "collage-run: internal error: " << e.what() << "\n";
    return 3;
  }
}
