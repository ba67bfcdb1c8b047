// collage export MODEL --placement P.json -o OUT.collage [--qdq OUT.onnx] [--dim NAME=VALUE ...]
#include <cstdio>
#include <filesystem>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/model_loading.h"
#include "app/workflow/workflow.h"
#include "backends/onednn_int8/int8_matmul.h"
#include "core/import/qdq_writer.h"

namespace collage::cli {

namespace {

// The placement's int8 MatMuls as ONNX integer ops (core/import/qdq_writer.h), with the very
// weights the onednn-int8 kernels quantize; its int8 Gemms stay fp32 there (said so).
void write_qdq(const Graph& graph, const Placement& placement, const std::string& model_path,
               const std::string& out_path) {
  std::vector<QdqMatmul> matmuls;
  size_t skipped = 0;
  for (const PlacedKernel& k : placement.kernels) {
    if (k.backend != "onednn-int8") continue;
    const Node& head = graph.node(k.nodes.front());
    const Value& w = graph.value(head.inputs.at(1));
    if (head.op_type != "MatMul" || !w.constant || w.shape.size() != 2) {
      ++skipped;
      continue;
    }
    onednn_int8::QuantizedWeights q =
        onednn_int8::quantize_weights(w.constant->data<float>(), w.shape[0], w.shape[1]);
    matmuls.push_back({head.name, w.shape[0], w.shape[1], std::move(q.q), std::move(q.scale)});
  }
  size_t written = write_qdq_model(model_path, matmuls, out_path);
  std::printf("QDQ model written to %s: %zu int8 MatMul%s as DynamicQuantizeLinear + MatMulInteger%s\n",
              out_path.c_str(), written, written == 1 ? "" : "s",
              skipped ? (", " + std::to_string(skipped) + " int8 Gemm(s) left fp32").c_str() : "");
}

}  // namespace

int command_export(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, with_model_options({"--placement", "-o", "--output", "--qdq"}), {});
  std::string out_path = args.get("-o", args.get("--output", ""));
  if (args.positional.size() != 1 || !args.has("--placement") || out_path.empty())
    throw Error(ErrorKind::InvalidInput,
                "usage: collage export MODEL --placement P.json -o OUT.collage [--qdq OUT.onnx] [--dim "
                "NAME=VALUE ...]");
  const std::string& path = args.positional[0];
  Graph graph = workflow::load_model(path, parse_load_options(args));
  Placement placement = workflow::read_placement(args.get("--placement", ""), graph);
  workflow::ExportStepOptions options;
  options.model_name = graph.name.empty() ? std::filesystem::path(path).stem().string() : graph.name;
  options.path = out_path;
  ExportReport report = workflow::export_placement(graph, placement, options);
  std::printf("artifact written to %s: %.2f MiB, %zu kernels, %d thread%s\n", out_path.c_str(),
              static_cast<double>(report.file_bytes) / (1 << 20), placement.kernels.size(), placement.threads,
              placement.threads == 1 ? "" : "s");
  std::printf("memory plan: arena %.2f MiB for intermediates that take %.2f MiB without reuse\n",
              static_cast<double>(report.arena_bytes) / (1 << 20),
              static_cast<double>(report.unplanned_bytes) / (1 << 20));
  if (!report.mismatch.empty()) {
    std::printf("the artifact's outputs disagree with the in-process run: %s\n", report.mismatch.c_str());
    return 1;
  }
  std::printf("reloaded and run: outputs %s the in-process execution of the placement%s\n",
              report.bitwise_equal ? "bitwise equal to" : "within 1e-5 of",
              report.bitwise_equal
                  ? ""
                  : (" (max abs difference " + std::to_string(report.max_abs_diff) + ")").c_str());
  if (args.has("--qdq")) write_qdq(graph, placement, path, args.get("--qdq", ""));
  return 0;
}

}  // namespace collage::cli
