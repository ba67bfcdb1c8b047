// Compiled artifacts and the runtime: round trips on the sample models against
// the in-process execution, the static memory plan, and hostile files (version,
// truncation, bit flips, mutated manifests) — every bad file must give a clear
// error, never a crash (run under the asan preset too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "app/runtime/collage_runtime.h"
#include "app/runtime/runtime.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/ir/random_inputs.h"
#include "core/search/artifact_export.h"
#include "core/search/search.h"
#include "core/tuning/candidates.h"
#include "resources/samples/zoo.h"
#include "tests/unit/mixed_placement.h"
#include "tests/unit/temp_dir.h"

namespace collage {
namespace {

namespace fs = std::filesystem;
using testing::mixed_placement;

Graph sample_graph(const std::string& name) {
  testing::ScopedTempDir dir("collage_artifact_sample");
  fs::path path = dir.path() / (name + ".onnx");
  samples::build_sample(name).save(path.string());
  ImportOptions io;
  io.evaluator = native::node_evaluator();
  Graph g = import_onnx_file(path.string(), io);
  fs::remove(path);
  return g;
}

// In this test process's own directory, removed at exit.
fs::path temp_file(const std::string& name) {
  static const testing::ScopedTempDir dir("collage_artifact_test");
  return dir.path() / name;
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class ArtifactSamples : public ::testing::TestWithParam<std::string> {};

// The artifact's outputs equal the in-process run of the same placement, bit for bit
// (the same kernels run on the same data), with and without the memory plan.
TEST_P(ArtifactSamples, RuntimeMatchesInProcessBitwise) {
  Graph g = sample_graph(GetParam());
  Placement p = mixed_placement(g);
  set_backend_threads(p.threads);  // as the runtime will: results may depend on the thread count
  std::set<std::string> used;
  for (const PlacedKernel& k : p.kernels) used.insert(k.backend);
  EXPECT_GE(used.size(), 2u) << "the placement should mix backends";
  fs::path path = temp_file(GetParam() + ".collage");
  ExportReport report = export_artifact(g, p, all_backends(), GetParam(), path.string());
  EXPECT_TRUE(report.mismatch.empty()) << report.mismatch;
  EXPECT_LE(report.arena_bytes, report.unplanned_bytes);

  std::vector<Tensor> inputs = random_inputs(g, 11);
  Executor in_process(g, placement_steps(g, p, all_backends(), CompileOptions{}));
  std::vector<Tensor> want = in_process.run(inputs);
  for (bool plan : {true, false}) {
    RuntimeOptions options;
    options.use_memory_plan = plan;
    auto rt = Runtime::load(path.string(), options);
    EXPECT_EQ(rt->info().model_fingerprint, model_fingerprint(g));
    for (int run = 0; run < 2; ++run) {  // the second run starts on a dirty arena
      std::vector<Tensor> got = rt->run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < want.size(); ++o) {
        EXPECT_TRUE(bitwise_equal(got[o], want[o])) << "output " << o << " plan " << plan;
      }
    }
    if (plan) {
      EXPECT_EQ(rt->last_memory_stats().unplanned_allocations, 0u);
    }
  }
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Samples, ArtifactSamples,
                         ::testing::Values("resnet_small", "mobilenet_small", "transformer_small",
                                           "inception_small", "resnext_small", "dcgan_generator"));

// Hand-made lifetimes: buffers that are never live together share memory, ones that
// are must not overlap, outputs stay out of the arena.
TEST(MemoryPlan, SharesOnlyDisjointLifetimes) {
  std::vector<BufferLifetime> lt = {
      {1000, 0, 1, false},  // a: steps 0-1
      {2000, 1, 2, false},  // b: 1-2 (overlaps a)
      {1000, 2, 3, false},  // c: 2-3 (may reuse a)
      {500, 3, 3, true},    // an output
  };
  MemoryPlan plan = plan_memory(lt);
  ASSERT_EQ(plan.buffers.size(), 4u);
  EXPECT_EQ(plan.buffers[3].offset, MemoryPlan::kHeap);
  auto overlap = [&](size_t i, size_t j) {
    int64_t a0 = plan.buffers[i].offset, a1 = a0 + plan.buffers[i].bytes;
    int64_t b0 = plan.buffers[j].offset, b1 = b0 + plan.buffers[j].bytes;
    return a0 < b1 && b0 < a1;
  };
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = i + 1; j < 3; ++j)
      if (lt[i].first_step <= lt[j].last_step && lt[j].first_step <= lt[i].last_step) {
        EXPECT_FALSE(overlap(i, j)) << i << "," << j;
      }
  EXPECT_TRUE(overlap(0, 2)) << "a and c never live together: c should take a's place";
  EXPECT_LT(plan.arena_bytes, unplanned_bytes(lt));
  for (const auto& b : plan.buffers)
    if (b.offset != MemoryPlan::kHeap) {
      EXPECT_EQ(b.offset % 64, 0);
    }
}

class ArtifactFile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    graph_ = std::make_unique<Graph>(sample_graph("resnet_small"));
    placement_ = std::make_unique<Placement>(mixed_placement(*graph_));
    set_backend_threads(placement_->threads);
    bytes_ = serialize_artifact(build_artifact(*graph_, *placement_, all_backends(), "resnet_small"));
  }
  static void TearDownTestSuite() {
    graph_.reset();
    placement_.reset();
  }
  static std::string error_of(const std::string& bytes) {
    try {
      parse_artifact(bytes, "x.collage");
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
      return e.what();
    }
    return "";
  }
  static inline std::unique_ptr<Graph> graph_;
  static inline std::unique_ptr<Placement> placement_;
  static inline std::string bytes_;
};

TEST_F(ArtifactFile, NewerMajorVersionIsRefusedByName) {
  std::string b = bytes_;
  b[8] = kArtifactMajor + 1;  // major version field
  artifact_detail::reseal(b);
  const std::string want = "format version " + std::to_string(kArtifactMajor + 1) + "." +
                           std::to_string(kArtifactMinor) + " is newer";
  EXPECT_NE(error_of(b).find(want), std::string::npos) << error_of(b);
}

TEST_F(ArtifactFile, TruncationAndBitFlipsAreNamed) {
  EXPECT_NE(error_of(bytes_.substr(0, bytes_.size() - 100)).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(bytes_.substr(0, 10)).find("truncated"), std::string::npos);
  EXPECT_NE(
      error_of("hello, this is not an artifact at all, not even close to one.........").find("bad magic"),
      std::string::npos);
  std::string flipped = bytes_;
  flipped[bytes_.size() / 2] ^= 0x10;
  EXPECT_NE(error_of(flipped).find("checksum mismatch"), std::string::npos);
}

TEST_F(ArtifactFile, UnreadableFilesAreNamed) {
  auto message = [](const std::string& path) {
    try {
      load_artifact(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(fs::temp_directory_path().string()).find("not a regular file"), std::string::npos);
  fs::path empty = temp_file("empty.collage");
  write_bytes(empty, "");
  EXPECT_NE(message(empty.string()).find("bad magic"), std::string::npos);
  fs::path good = temp_file("good.collage");
  write_bytes(good, bytes_);
  EXPECT_EQ(message(good.string()), "");
  write_bytes(good, bytes_.substr(0, bytes_.size() / 2));  // a copy cut short
  EXPECT_NE(message(good.string()).find("truncated"), std::string::npos);
  fs::remove(empty);
  fs::remove(good);
}

// Fuzz: random byte mutations (the checksum must catch them) and mutations of the
// manifest re-sealed with a valid checksum (the parser must catch or survive them).
TEST_F(ArtifactFile, MutatedArtifactsNeverCrash) {
  uint64_t state = 12345;
  auto next = [&] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int i = 0; i < 200; ++i) {
    std::string b = bytes_;
    int flips = 1 + static_cast<int>(next() % 4);
    for (int f = 0; f < flips; ++f) b[next() % b.size()] ^= static_cast<char>(1u << (next() % 8));
    if (i % 10 == 0) b.resize(next() % b.size());
    EXPECT_FALSE(error_of(b).empty()) << "mutation " << i << " went unnoticed";
  }
  // Manifest mutations behind a valid checksum: digits and structural characters.
  size_t manifest_end = artifact_detail::kHeaderBytes + 1;
  while (manifest_end < bytes_.size() && bytes_[manifest_end] != '\0') ++manifest_end;
  const char replacements[] = "0123456789-[]{},:\"ex";
  int accepted = 0;
  for (int i = 0; i < 400; ++i) {
    std::string b = bytes_;
    size_t at = artifact_detail::kHeaderBytes + next() % (manifest_end - artifact_detail::kHeaderBytes);
    b[at] = replacements[next() % (sizeof replacements - 1)];
    artifact_detail::reseal(b);
    try {
      Artifact a = parse_artifact(b, "fuzz.collage");
      artifact_steps(a, all_backends(), CompileOptions{});  // building kernels must survive it too
      ++accepted;
    } catch (const Error&) {
    }
  }
  std::printf("manifest mutations: %d of 400 still parsed and compiled (harmless edits such as names)\n",
              accepted);
}

TEST_F(ArtifactFile, StructuralLiesAreRejected) {
  auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    uint64_t len = 0;
    std::memcpy(&len, bytes_.data() + 24, 8);
    nlohmann::json m = nlohmann::json::parse(bytes_.substr(artifact_detail::kHeaderBytes, len));
    edit(m);
    std::string text = m.dump();
    // Rebuild the file around the edited manifest, keeping the weights section as is.
    uint64_t weights_at = 0, weights_len = 0;
    std::memcpy(&weights_at, bytes_.data() + 32, 8);
    std::memcpy(&weights_len, bytes_.data() + 40, 8);
    size_t new_weights_at = (artifact_detail::kHeaderBytes + text.size() + 63) / 64 * 64;
    std::string out(new_weights_at + weights_len, '\0');
    std::memcpy(out.data(), bytes_.data(), artifact_detail::kHeaderBytes);
    uint64_t tl = text.size(), wa = new_weights_at;
    std::memcpy(out.data() + 24, &tl, 8);
    std::memcpy(out.data() + 32, &wa, 8);
    std::memcpy(out.data() + artifact_detail::kHeaderBytes, text.data(), text.size());
    std::memcpy(out.data() + new_weights_at, bytes_.data() + weights_at, weights_len);
    artifact_detail::reseal(out);
    return out;
  };
  auto with_manifest = [&](const std::function<void(nlohmann::json&)>& edit) {
    return error_of(edited(edit));
  };
  EXPECT_EQ(with_manifest([](nlohmann::json&) {}), "") << "an unedited manifest must load";
  EXPECT_NE(with_manifest([](nlohmann::json& m) { m["plan"].erase(0); }).find("is in no kernel"),
            std::string::npos);
  EXPECT_NE(with_manifest([](nlohmann::json& m) {
              m["graph"]["nodes"][0]["inputs"][0] = 999999;
            }).find("out of range"),
            std::string::npos);
  EXPECT_NE(with_manifest([](nlohmann::json& m) {
              m["memory_plan"]["arena_bytes"] = 1ull << 50;
            }).find("implausibly large"),
            std::string::npos);
  EXPECT_NE(with_manifest([](nlohmann::json& m) { m.erase("graph"); }).find("malformed manifest"),
            std::string::npos);
  EXPECT_NE(with_manifest([](nlohmann::json& m) {
              for (auto& v : m["graph"]["values"])
                if (v.contains("weight")) {
                  v["weight"]["offset"] = 1ull << 40;
                  break;
                }
            }).find("outside the weights section"),
            std::string::npos);
  // A plan whose first kernel is moved last reads values before they exist.
  Artifact reordered = parse_artifact(edited([](nlohmann::json& m) {
                                        auto first = m["plan"][0];
                                        m["plan"].erase(0);
                                        m["plan"].push_back(first);
                                      }),
                                      "x");
  try {
    artifact_steps(reordered, all_backends(), CompileOptions{});
    ADD_FAILURE() << "a kernel reading an uncomputed value was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("before any kernel computes it"), std::string::npos) << e.what();
  }
}

// The C API: info, missing input, wrong shape, and concurrent runs on separate contexts.
TEST_F(ArtifactFile, CApiReportsBadInputsAndRunsConcurrently) {
  fs::path path = temp_file("capi.collage");
  write_bytes(path, bytes_);
  EXPECT_EQ(collage_load(temp_file("missing.collage").c_str()), nullptr);
  EXPECT_NE(std::string(collage_last_error()).find("cannot open artifact"), std::string::npos);

  collage_model* a = collage_load(path.c_str());
  collage_model* b = collage_load(path.c_str());
  ASSERT_NE(a, nullptr) << collage_last_error();
  ASSERT_NE(b, nullptr) << collage_last_error();
  ASSERT_EQ(collage_num_inputs(a), 1);
  collage_tensor_info in{};
  ASSERT_EQ(collage_input_info(a, 0, &in), 0);
  EXPECT_NE(collage_input_info(a, 5, &in), 0);
  ASSERT_EQ(collage_input_info(a, 0, &in), 0);
  EXPECT_NE(collage_run(a), 0);
  EXPECT_NE(std::string(collage_last_error()).find("was not set"), std::string::npos) << collage_last_error();

  std::vector<float> data(in.bytes / sizeof(float));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 13) * 0.1f - 0.5f;
  std::vector<int64_t> wrong(in.shape, in.shape + in.rank);
  wrong[0] += 1;
  EXPECT_NE(collage_set_input(a, in.name, data.data(), in.rank, wrong.data()), 0);
  EXPECT_NE(std::string(collage_last_error()).find("must have shape"), std::string::npos)
      << collage_last_error();
  EXPECT_NE(collage_set_input(a, "nope", data.data(), in.rank, in.shape), 0);

  // Reference: the in-process placement on the same input.
  Tensor x(DType::Float32, Shape(in.shape, in.shape + in.rank));
  std::memcpy(x.raw(), data.data(), in.bytes);
  Executor in_process(*graph_, placement_steps(*graph_, *placement_, all_backends(), CompileOptions{}));
  Tensor want = in_process.run(std::vector<Tensor>{x})[0];

  ASSERT_EQ(collage_set_input(a, in.name, data.data(), in.rank, in.shape), 0);
  ASSERT_EQ(collage_set_input(b, in.name, data.data(), in.rank, in.shape), 0);
  std::vector<int> failures(2, 0);
  auto worker = [&](collage_model* m, int id) {
    for (int r = 0; r < 20; ++r) {
      if (collage_run(m) != 0) ++failures[static_cast<size_t>(id)];
      collage_tensor_info out{};
      collage_output_info(m, 0, &out);
      if (std::memcmp(collage_output_data(m, 0), want.raw(), out.bytes) != 0)
        ++failures[static_cast<size_t>(id)];
    }
  };
  std::thread ta(worker, a, 0), tb(worker, b, 1);
  ta.join();
  tb.join();
  EXPECT_EQ(failures[0], 0);
  EXPECT_EQ(failures[1], 0);
  collage_free(a);
  collage_free(b);
  collage_free(nullptr);
  fs::remove(path);
}

}  // namespace
}  // namespace collage
