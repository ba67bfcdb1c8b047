// Replays the fuzz regression corpus (tests/fuzz/regressions/<harness>/) and the
// committed seeds (tests/fuzz/seeds/<harness>/) through the same harness functions
// the libFuzzer executables run: every input must be handled without a finding.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_harness.h"

namespace collage::fuzz {
namespace {

using Harness = int (*)(const uint8_t*, size_t);

const std::map<std::string, Harness>& harnesses() {
  static const std::map<std::string, Harness> all = {
      {"onnx_import", fuzz_onnx_import},   {"placement_json", fuzz_placement_json},
      {"cost_json", fuzz_cost_json},       {"artifact", fuzz_artifact},
      {"tensor_proto", fuzz_tensor_proto}, {"run_path", fuzz_run_path},
  };
  return all;
}

// Replays every file under `root`/<harness>/; returns how many it ran.
size_t replay(const std::filesystem::path& root) {
  size_t count = 0;
  if (!std::filesystem::exists(root)) return 0;
  for (const auto& dir : std::filesystem::directory_iterator(root)) {
    auto it = harnesses().find(dir.path().filename().string());
    EXPECT_NE(it, harnesses().end()) << "no harness named " << dir.path().filename();
    if (it == harnesses().end()) continue;
    for (const auto& file : std::filesystem::directory_iterator(dir.path())) {
      std::ifstream in(file.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(it->second(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0) << file.path();
      ++count;
    }
  }
  return count;
}

TEST(FuzzRegression, RegressionCorpusHasNoFindings) { replay(COLLAGE_FUZZ_DIR "/regressions"); }

TEST(FuzzRegression, SeedsHaveNoFindings) { EXPECT_GT(replay(COLLAGE_FUZZ_DIR "/seeds"), 0u); }

// The classification itself: an Internal error and a foreign exception are findings.
TEST(FuzzRegression, GuardedClassifiesErrors) {
  EXPECT_EQ(guarded("t", [] { throw Error(ErrorKind::InvalidModel, "bad"); }), 0);
  EXPECT_EQ(guarded("t", [] { throw Error(ErrorKind::Internal, "bug"); }), 1);
  EXPECT_EQ(guarded("t", [] { throw std::out_of_range("vector::_M_range_check"); }), 1);
  EXPECT_EQ(guarded("t", [] {}), 0);
}

}  // namespace
}  // namespace collage::fuzz
