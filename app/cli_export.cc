// collage export MODEL --placement P.json -o OUT.collage [--qdq OUT.onnx] [--dim NAME=VALUE ...]
#include <cstdio>
#include <filesystem>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/model_loading.h"
#include "app/workflow/workflow.h"
#include "core/import/qdq_writer.h"

namespace collage::cli {

namespace {

void write_qdq(const Graph& graph, const Placement& placement, const std::string& model_path,
               const std::string& out_path) {
  workflow::QdqPlan plan = workflow::qdq_plan(graph, placement);
  size_t written = write_qdq_model(model_path, plan.matmuls, out_path);
  std::printf(
      "QDQ model written to %s: %zu int8 product%s (MatMul, Gemm) as DynamicQuantizeLinear + "
      "MatMulInteger%s%s\n",
      out_path.c_str(), written, written == 1 ? "" : "s",
      plan.int8_left_fp32 ? (", " + std::to_string(plan.int8_left_fp32) + " int8 kernel(s) left fp32").c_str()
                          : "",
      plan.bf16_left_fp32 ? (", " + std::to_string(plan.bf16_left_fp32) + " bf16 kernel(s) left fp32").c_str()
                          : "");
}

}  // namespace

int command_export(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, with_model_options({"--placement", "-o", "--output", "--qdq"}), {});
  std::string out_path = args.get("-o", args.get("--output", ""));
  if (args.positional.size() != 1 || !args.has("--placement") || out_path.empty())
    throw Error(ErrorKind::InvalidInput,
                "usage: collage export MODEL --placement P.json -o OUT.collage [--qdq OUT.onnx] [--dim "
                "NAME=V1,V2,...]");
  const std::string& path = args.positional[0];
  std::vector<workflow::PlacedBucket> buckets = workflow::read_placed_buckets(
      path, args.get("--placement", ""), parse_load_options_for_buckets(args), parse_buckets(args));
  if (args.has("--qdq") && buckets.size() > 1)
    throw Error(ErrorKind::InvalidInput, "--qdq writes one shape; name one bucket with --dim");
  const Graph& first = buckets.front().graph;
  workflow::ExportStepOptions options;
  options.model_name = first.name.empty() ? std::filesystem::path(path).stem().string() : first.name;
  options.path = out_path;
  BucketedExportReport report = workflow::export_buckets(buckets, options);
  size_t kernels = 0;
  for (const workflow::PlacedBucket& b : buckets) kernels += b.placement.kernels.size();
  const int threads = buckets.front().placement.threads;
  std::printf("artifact written to %s: %.2f MiB, %zu kernels%s, %d thread%s\n", out_path.c_str(),
              static_cast<double>(report.file_bytes) / (1 << 20), kernels,
              buckets.size() > 1 ? (" in " + std::to_string(buckets.size()) + " shape buckets").c_str() : "",
              threads, threads == 1 ? "" : "s");
  bool agree = true;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const ExportReport& r = report.buckets[b];
    std::string prefix = buckets.size() > 1 ? "bucket " + bucket_label(buckets[b].dims) + ": " : "";
    std::printf("%smemory plan: arena %.2f MiB for intermediates that take %.2f MiB without reuse\n",
                prefix.c_str(), static_cast<double>(r.arena_bytes) / (1 << 20),
                static_cast<double>(r.unplanned_bytes) / (1 << 20));
    if (!r.mismatch.empty()) {
      std::printf("%sthe artifact's outputs disagree with the in-process run: %s\n", prefix.c_str(),
                  r.mismatch.c_str());
      agree = false;
      continue;
    }
    std::printf(
        "%sreloaded and run: outputs %s the in-process execution of the placement%s\n", prefix.c_str(),
        r.bitwise_equal ? "bitwise equal to" : "within 1e-5 of",
        r.bitwise_equal ? "" : (" (max abs difference " + std::to_string(r.max_abs_diff) + ")").c_str());
  }
  if (!agree) return 1;
  if (args.has("--qdq")) write_qdq(first, buckets.front().placement, path, args.get("--qdq", ""));
  return 0;
}

}  // namespace collage::cli
