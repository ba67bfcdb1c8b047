#pragma once

#include <optional>
#include <string>
#include <vector>

namespace collage {
struct ProgressEvent;
}

namespace collage::cli {

// The whole `collage` program: serves as a measure worker when asked
// (core/tuning/measure_worker.h), else dispatches to a command; returns the exit code.
int run_cli(int argc, char** argv);

// Each returns the process exit code; errors are thrown as collage::Error.
int command_info(const std::vector<std::string>& argv);
int command_run(const std::vector<std::string>& argv);
int command_candidates(const std::vector<std::string>& argv);
int command_tune(const std::vector<std::string>& argv);
int command_costs(const std::vector<std::string>& argv);
int command_worker(const std::vector<std::string>& argv);
int command_workers(const std::vector<std::string>& argv);
int command_compare(const std::vector<std::string>& argv);
int command_export(const std::vector<std::string>& argv);
int command_explain(const std::vector<std::string>& argv);
int command_diff(const std::vector<std::string>& argv);
int command_profile(const std::vector<std::string>& argv);

// "0.743 ms", or "-" for a latency there is none of (no genome measured yet).
std::string ms_or_none(std::optional<double> ms);
// The line `collage tune` prints per refine generation (ProgressEvent::Stage::Refine).
std::string refine_generation_line(const ProgressEvent& e);

}  // namespace collage::cli
