// The fixture of the tests that run the real `collage` binary (COLLAGE_CLI_PATH): a
// temporary directory per test (removed after it, pass or fail), the exit code and both
// output streams of a run.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "onnx_test_model.h"
#include "temp_dir.h"

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

  ScopedTempDir tmp_{"collage_cli_test"};  // this test's own directory, removed after it
  fs::path dir_ = tmp_.path();
};

}  // namespace collage::testing
