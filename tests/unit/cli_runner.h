// Runs the real `collage` binary from a test: its exit code, stdout and stderr, in a
// scratch directory per test (removed afterwards).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#ifndef COLLAGE_CLI_PATH
#error "COLLAGE_CLI_PATH must point at the collage binary"
#endif

namespace collage::testing {

namespace fs = std::filesystem;

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("collage_cli_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

  CliResult cli(const std::string& args) {
    std::string out = (dir_ / "stdout.txt").string(), err = (dir_ / "stderr.txt").string();
    std::string cmd = std::string(COLLAGE_CLI_PATH) + " " + args + " >" + out + " 2>" + err;
    int status = std::system(cmd.c_str());
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    auto slurp = [](const std::string& path) {
      std::ifstream in(path);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  void expect_bad_input(const std::string& args, const std::string& must_mention) {
    CliResult r = cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(must_mention), std::string::npos) << r.err;
  }

  fs::path dir_;
};

}  // namespace collage::testing
