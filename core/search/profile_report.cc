#include "core/search/profile_report.h"

#include <nlohmann/json.hpp>

namespace collage {

using nlohmann::json;

std::string profile_to_json(const ProfileReport& r) {
  json kernels = json::array();
  for (const KernelProfile& k : r.kernels)
    kernels.push_back({{"label", k.label},
                       {"backend", k.backend},
                       {"nodes", k.nodes},
                       {"in_run_ms", k.in_run_ms},
                       {"start_ms", k.start_ms},
                       {"isolated_ms", k.isolated_ms},
                       {"delta_ms", k.delta_ms()},
                       {"share", r.e2e_median_ms > 0 ? k.in_run_ms / r.e2e_median_ms : 0.0},
                       {"flops", k.flops},
                       {"gflop_per_s", k.gflop_per_s()}});
  json doc = {{"threads", r.threads},
              {"runs", r.runs.size()},
              {"e2e_median_ms", r.e2e_median_ms},
              {"kernel_sum_ms", r.kernel_sum_ms},
              {"isolated_sum_ms", r.isolated_sum_ms},
              {"additive_error_ms", r.additive_error_ms()},
              {"outside_kernels_ms", r.outside_kernels_ms()},
              {"predicted_ms", r.predicted_ms},
              {"flops", r.flops},
              {"gflop_per_s", r.gflop_per_s()},
              {"kernels", kernels}};
  return doc.dump(1);
}

std::string profile_chrome_trace(const ProfileReport& r) {
  constexpr int kPid = 1, kTid = 1;
  json events = json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"tid", kTid},
                    {"args", {{"name", "collage profile"}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", kPid},
                    {"tid", kTid},
                    {"args", {{"name", "executor (" + std::to_string(r.threads) + " threads)"}}}});
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const ProfiledRun& run = r.runs[i];
    events.push_back({{"name", "run " + std::to_string(i + 1)},
                      {"cat", "run"},
                      {"ph", "X"},
                      {"ts", run.start_ms * 1000},
                      {"dur", run.total_ms * 1000},
                      {"pid", kPid},
                      {"tid", kTid},
                      {"args", {{"kernels", run.steps.size()}}}});
    for (size_t k = 0; k < run.steps.size() && k < r.kernels.size(); ++k) {
      const KernelProfile& kernel = r.kernels[k];
      events.push_back(
          {{"name", kernel.label},
           {"cat", kernel.backend},
           {"ph", "X"},
           {"ts", (run.start_ms + run.steps[k].start_ms) * 1000},
           {"dur", (run.steps[k].end_ms - run.steps[k].start_ms) * 1000},
           {"pid", kPid},
           {"tid", kTid},
           {"args", {{"kernel", k}, {"nodes", kernel.nodes}, {"isolated_ms", kernel.isolated_ms}}}});
    }
  }
  return events.dump();
}

}  // namespace collage
