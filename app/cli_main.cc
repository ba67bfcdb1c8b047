// `collage`'s main as a function (collage_main.cc calls it; test binaries call it
// after adding test-only backends). Errors in the input give one line on stderr
// and exit code 2.
#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "app/cli_commands.h"
#include "app/workflow/measure_worker_main.h"
#include "backends/registry.h"
#include "core/ir/error.h"

namespace {

const char* kUsage =
    "usage: collage COMMAND [options]\n"
    "commands:\n"
    "  info MODEL [--dim NAME=N ...]\n"
    "      inputs/outputs, op histogram, node count, FLOPs, parameters\n"
    "  run MODEL [--input NAME=FILE.pb ...] [--output-dir DIR] [--repeat N] [--threads N]\n"
    "            [--dim NAME=N ...] [--seed S] [--placement placement.json]\n"
    "      runs the model with the native kernels on random (or given) inputs,\n"
    "      writes DIR/<output>.pb and prints 'median X ms, min Y ms'\n"
    "  candidates MODEL [--backends B1,B2,...] [--json] [--dim NAME=N ...]\n"
    "      per backend: candidate kernels (single ops and fused groups), the largest group;\n"
    "      --json lists every candidate (node ids, backend, label)\n"
    "  tune MODEL [--backends B1,B2] [--threads N] [--pin NODE=BACKEND ...] [--forbid NODE=BACKEND ...]\n"
    "             [--cost-db PATH | --no-cost-db] [--epsilon MS] [--repeat N] [--in-process] [--log-costs]\n"
    "             [--remote] [--accuracy top1,max-rel=R,cosine=C] [--dim NAME=V1,V2,... ...]\n"
    "             [--contest-rounds N] [--min-time-ms MS] [--prune-ratio R] -o|--output placement.json\n"
    "             [--refine [--budget 90s|10m|1h] [--population N] [--generations G] [--patience K] [--seed "
    "S]]\n"
    "      measures every candidate (cached in the cost DB; --log-costs: a line per stored cost),\n"
    "      searches the cheapest placement, measures its close contests again side by side\n"
    "      (rivals within 15%, --contest-rounds alternated rounds, default 3; 0: none),\n"
    "      runs and verifies it, prints predicted vs measured latency; --refine then runs the\n"
    "      graph-level evolutionary search (onednn-region, xnnpack-graph, onnxruntime-region regions;\n"
    "      measured fitness);\n"
    "      --remote (a postgresql:// cost DB): the measurement workers of this machine kind measure\n"
    "      what the DB lacks (locally when none is running)\n"
    "      --accuracy: reduced-precision kernels (stream-gemm-int8, onednn-int8, onednn-bf16,\n"
    "      onnxruntime-int8; in refine, onnxruntime-int8-region) take part, each within the budget;\n"
    "      the placement is held to it end to end, backing kernels off to fp32 until it holds\n"
    "      --dim seq=16,32,64: a placement per shape bucket (every combination), one file\n"
    "  worker --cost-db postgresql://... [--threads N] [--name W] [--lease SECONDS] [--max-jobs N]\n"
    "         [--idle-exit SECONDS] [--share-host]\n"
    "      serves the team's measurement queue from this machine until Ctrl+C / SIGTERM; one kernel is\n"
    "      timed at a time per machine (a host-wide lock) unless --share-host (workers on disjoint cores)\n"
    "  workers --cost-db postgresql://...\n"
    "      lists the measurement workers (fingerprint, threads, alive, jobs done, in flight) and the queue\n"
    "  costs [--backend B] [--json] [--export FILE] [--import FILE] [--cost-db PATH]\n"
    "      lists the cost database (default: $COLLAGE_COST_DB or "
    "~/.local/share/collage-explorer/costs.sqlite)\n"
    "  compare A.pb B.pb [--rtol R] [--atol A] [--accuracy top1,max-rel=R,cosine=C]\n"
    "      element-wise agreement of two tensor files (exit 1 if any element is outside tolerance)\n"
    "      --accuracy: A against B as the reference under that budget (exit 1 if it does not hold)\n"
    "  export MODEL --placement placement.json -o|--output model.collage [--qdq OUT.onnx]\n"
    "               [--dim NAME=V1,V2,... ...]\n"
    "      writes the compiled artifact (docs/artifact-format.md) for collage-run / libcollage_runtime,\n"
    "      reloads it and checks its outputs against the in-process run of the placement\n"
    "      --qdq: the model with the placement's int8 MatMuls as ONNX integer ops (for other runtimes)\n"
    "      a placement with shape buckets: one artifact, a plan per bucket (--dim: some of them)\n"
    "  explain MODEL --placement placement.json [--node NAME|ID] [--json] [--cost-db PATH | --no-cost-db]\n"
    "                [--backends B1,B2] [--threads N] [--dim NAME=V1,V2,... ...]\n"
    "      why each node runs where the placement put it (reason, runner-up and its predicted delta);\n"
    "      --node: the candidates covering it and the what-ifs (run on / forbid each backend);\n"
    "      from the cost DB's costs alone, nothing is measured\n"
    "  profile MODEL --placement placement.json [--repeat N] [--threads N] [--seed S] [--json]\n"
    "                [--trace out.json]\n"
    "                [--dim NAME=V1,V2,... ...]\n"
    "      every kernel timed inside the end-to-end run, beside its isolated cost (where the time goes);\n"
    "      --trace writes a Chrome trace (chrome://tracing, Perfetto)\n"
    "  diff A.json B.json [--model MODEL] [--json] [--dim NAME=V | --bucket-a NAME=V --bucket-b NAME=V]\n"
    "      what changed between two placements of one model (--model: checked against it, names shown);\n"
    "      --bucket-a/-b: two shape buckets (also of one file): where the placement changes with the shape\n"
    "Symbolic input dims default to 1; set them with --dim batch=8. tune, export, explain and profile take\n"
    "several values (--dim seq=16,32 --dim batch=1,4: shape buckets); the other commands one.\n"
    "A model whose shapes depend on input VALUES (Range bounds, a Reshape shape fed by an input,\n"
    "NonMaxSuppression...) is refused naming those inputs; --bind NAME=FILE.pb (repeatable, every\n"
    "command that takes MODEL) specialises it on their values. `run` binds its --input values itself.\n"
    "--shapes dynamic instead decides such shapes as the model runs (detectors: NonZero, TopK, NMS);\n"
    "their nodes run on the native kernels, the rest is placed as usual.\n"
    "--memory-budget SIZE (every command that takes MODEL; 512M, 4G; default a quarter of the memory)\n"
    "refuses any tensor larger than SIZE before allocating it.\n"
    "Candidates are measured in worker processes (a crashing library costs one candidate);\n"
    "tune --in-process measures in the collage process itself.\n";

// The backends compiled in, as --backends names them; those this CPU cannot run say why.
std::string backends_text() {
  std::string out = "backends (--backends names them; reduced-precision ones need --accuracy):\n";
  for (const collage::BackendSpec* b : collage::all_backends()) {
    out += "  " + b->name + " (" + collage::precision_name(b->precision);
    if (b->min_threads > 1) out += ", at " + std::to_string(b->min_threads) + "+ threads";
    out += ")";
    if (const std::string why = collage::unavailable_reason(*b); !why.empty()) out += ": unavailable: " + why;
    out += "\n";
  }
  return out;
}

}  // namespace

namespace collage::cli {

int run_cli(int argc, char** argv) {
  int worker_rc = collage::workflow::enable_measure_workers(argc, argv);
  if (worker_rc >= 0) return worker_rc;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage << backends_text();
    return args.empty() ? 2 : 0;
  }
  std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "info") return collage::cli::command_info(args);
    if (command == "run") return collage::cli::command_run(args);
    if (command == "candidates") return collage::cli::command_candidates(args);
    if (command == "tune") return collage::cli::command_tune(args);
    if (command == "costs") return collage::cli::command_costs(args);
    if (command == "worker") return collage::cli::command_worker(args);
    if (command == "workers") return collage::cli::command_workers(args);
    if (command == "compare") return collage::cli::command_compare(args);
    if (command == "export") return collage::cli::command_export(args);
    if (command == "explain") return collage::cli::command_explain(args);
    if (command == "diff") return collage::cli::command_diff(args);
    if (command == "profile") return collage::cli::command_profile(args);
    std::cerr << "collage: unknown command '" << command << "'\n" << kUsage;
    return 2;
  } catch (const collage::Error& e) {
    std::cerr << "collage: " << collage::error_kind_name(e.kind()) << ": " << e.what() << "\n";
    return e.kind() == collage::ErrorKind::Internal ? 3 : 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "collage: out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "collage: internal error: " << e.what() << "\n";
    return 3;
  }
}

}  // namespace collage::cli
