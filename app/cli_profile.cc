// `collage profile MODEL --placement P.json [--repeat N] [--threads N] [--json] [--trace out.json]`:
// every kernel timed inside the end-to-end run (workflow::profile) beside its isolated cost.
#include <cstdio>
#include <fstream>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/model_loading.h"
#include "app/workflow/workflow.h"
#include "core/ir/random_inputs.h"

namespace collage::cli {

namespace {
void profile_bucket(const Args& args, const Graph& graph, const Placement& placement, int repeat, int seed);
}  // namespace

int command_profile(const std::vector<std::string>& argv) {
  Args args = parse_args(
      argv, with_model_options({"--placement", "--repeat", "--threads", "--seed", "--trace"}), {"--json"});
  if (args.positional.size() != 1 || !args.has("--placement"))
    throw Error(ErrorKind::InvalidInput,
                "usage: collage profile MODEL --placement P.json [--repeat N] [--threads N] [--json] "
                "[--trace out.json]");
  int repeat = args.get_int("--repeat", kSettings.repeat, 1, 100000);
  int seed = args.get_int("--seed", 1, 0, 1 << 30);
  std::vector<workflow::PlacedBucket> buckets =
      workflow::read_placed_buckets(args.positional[0], args.get("--placement", ""),
                                    parse_load_options_for_buckets(args), parse_buckets(args));
  if (buckets.size() > 1 && (args.has("--json") || args.has("--trace")))
    throw Error(ErrorKind::InvalidInput, "--json and --trace profile one shape bucket; name it with --dim");
  for (const workflow::PlacedBucket& bucket : buckets) {
    if (buckets.size() > 1) std::printf("== bucket %s\n", bucket_label(bucket.dims).c_str());
    profile_bucket(args, bucket.graph, bucket.placement, repeat, seed);
  }
  return 0;
}

namespace {

void profile_bucket(const Args& args, const Graph& graph, const Placement& placement, int repeat, int seed) {
  workflow::RunOptions options;
  // Isolated costs were measured at the placement's thread count: run at it unless told otherwise.
  options.threads = args.get_int("--threads", placement.threads, 1, 1024);
  options.repeat = repeat;
  ProfileReport r =
      workflow::profile(graph, placement, random_inputs(graph, static_cast<uint64_t>(seed)), options);

  if (args.has("--trace")) {
    std::string path = args.get("--trace", "");
    std::ofstream out(path, std::ios::trunc);
    out << profile_chrome_trace(r) << "\n";
    if (!out) throw Error(ErrorKind::Io, "cannot write trace '" + path + "'");
    std::fprintf(stderr, "trace written to %s (open it in Perfetto or chrome://tracing)\n", path.c_str());
  }
  if (args.has("--json")) {
    std::printf("%s\n", profile_to_json(r).c_str());
    return;
  }
  std::printf("%4s  %-18s %-32s %10s %12s %10s %6s %8s\n", "#", "backend", "kernel", "in-run ms",
              "isolated ms", "delta ms", "share", "GFLOP/s");
  for (size_t k = 0; k < r.kernels.size(); ++k) {
    const KernelProfile& kp = r.kernels[k];
    std::printf("%4zu  %-18s %-32.32s %10.3f %12.3f %+10.3f %5.1f%% %8.1f\n", k + 1, kp.backend.c_str(),
                kp.label.c_str(), kp.in_run_ms, kp.isolated_ms, kp.delta_ms(),
                r.e2e_median_ms > 0 ? 100 * kp.in_run_ms / r.e2e_median_ms : 0.0, kp.gflop_per_s());
  }
  std::printf("%4s  %-18s %-32s %10.3f %12.3f %+10.3f %5.1f%%\n", "", "", "all kernels", r.kernel_sum_ms,
              r.isolated_sum_ms, r.kernel_sum_ms - r.isolated_sum_ms,
              r.e2e_median_ms > 0 ? 100 * r.kernel_sum_ms / r.e2e_median_ms : 0.0);
  std::printf(
      "end to end: median %.3f ms over %zu profiled runs (after a warm-up), %d thread%s; outside kernels "
      "%.3f ms; %.3g GFLOP at %.1f GFLOP/s\n",
      r.e2e_median_ms, r.runs.size(), r.threads, r.threads == 1 ? "" : "s", r.outside_kernels_ms(),
      r.flops * 1e-9, r.gflop_per_s());
  std::printf(
      "additive error (end to end - sum of isolated costs %.3f ms): %+.3f ms (%+.1f%%) = kernels in the run "
      "%+.3f ms + outside kernels %+.3f ms\n",
      r.isolated_sum_ms, r.additive_error_ms(),
      r.isolated_sum_ms > 0 ? 100 * r.additive_error_ms() / r.isolated_sum_ms : 0.0,
      r.kernel_sum_ms - r.isolated_sum_ms, r.outside_kernels_ms());
}

}  // namespace

}  // namespace collage::cli
