#pragma once

#include <string>
#include <vector>

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

}  // namespace collage::cli
