// Isolated measurement (core/tuning/measure_worker.h), end to end with the test-only
// faulty backend (tests/faulty): a kernel that crashes, aborts, hangs or hoards memory
// costs its candidate, with the reason, and the measuring goes on.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "core/ir/random_inputs.h"
#include "core/tuning/measurer.h"
#include "onnx_test_model.h"
#include "temp_dir.h"
#include "tests/faulty/faulty_backend.h"
#include "tests/faulty/faulty_model.h"

#ifndef COLLAGE_FAULTY_CLI
#error "COLLAGE_FAULTY_CLI must point at collage_faulty_cli"
#endif

namespace collage {
namespace {

namespace fs = std::filesystem;
using testing::faulty_model;
using testing::kFaultOfDim;

TEST(IsolatedMeasure, EveryFaultCostsOnlyItsCandidate) {
  Graph g = testing::import_model(faulty_model());
  std::vector<const BackendSpec*> backends = {&native_backend(), &testing::faulty_backend()};
  std::vector<Candidate> candidates = enumerate_candidates(g, backends);
  MeasureOptions options;
  options.min_time_ms = 2;
  options.worker.command = {COLLAGE_FAULTY_CLI, kMeasureWorkerFlag};
  options.worker.min_limit_s = 2;
  options.worker.limit_factor = 0;
  options.worker.memory_budget_mb = 1024;
  Measurer measurer(g, reference_values(g, random_inputs(g, 1), native::node_evaluator()), nullptr, options);
  std::vector<MeasuredCandidate> costs = measurer.measure(candidates, backends);

  size_t deaths_before_last = 0;
  std::vector<size_t> deaths;
  int faulty_seen = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    int64_t dim = g.value(g.node(node_ids(c.nodes).at(0)).inputs.at(0)).shape.at(0);
    std::string want = c.backend == "faulty" ? kFaultOfDim.at(dim) : "";
    SCOPED_TRACE(c.backend + " " + c.label + " dim " + std::to_string(dim));
    if (c.backend == "faulty") ++faulty_seen;
    if (want.empty()) {
      EXPECT_TRUE(costs[i].cost.valid()) << costs[i].cost.invalid_reason;
      EXPECT_GT(costs[i].cost.samples, 0);
    } else {
      EXPECT_EQ(costs[i].cost.invalid_reason, want);
      EXPECT_EQ(costs[i].cost.status, CostStatus::Lost) << costs[i].cost.invalid_reason;
      if (dim != 16) deaths.push_back(i);  // the hoarder's bad_alloc leaves its worker alive
    }
  }
  EXPECT_EQ(faulty_seen, testing::kFaultyModelHasHoarder ? 5 : 4);
  for (size_t d : deaths) deaths_before_last += d < candidates.size() - 1;
  // One worker to start with, and one more after each death that had work after it.
  EXPECT_EQ(measurer.workers_started(), 1 + static_cast<int>(deaths_before_last));
}

TEST(IsolatedMeasure, WorkerTimingsMatchInProcessValidity) {
  Graph g = testing::import_model(faulty_model());
  std::vector<const BackendSpec*> backends = {&native_backend()};
  std::vector<Candidate> candidates = enumerate_candidates(g, backends);
  std::vector<Tensor> values = reference_values(g, random_inputs(g, 1), native::node_evaluator());
  MeasureOptions options;
  options.min_time_ms = 2;
  std::vector<MeasuredCandidate> in_process =
      Measurer(g, values, nullptr, options).measure(candidates, backends);
  options.worker.command = {COLLAGE_FAULTY_CLI, kMeasureWorkerFlag};
  std::vector<MeasuredCandidate> isolated =
      Measurer(g, values, nullptr, options).measure(candidates, backends);
  ASSERT_EQ(in_process.size(), isolated.size());
  for (size_t i = 0; i < isolated.size(); ++i) {
    EXPECT_EQ(in_process[i].signature, isolated[i].signature);
    EXPECT_EQ(in_process[i].cost.valid(), isolated[i].cost.valid()) << isolated[i].cost.invalid_reason;
    EXPECT_GE(isolated[i].cost.samples, 10);  // min_samples, timed inside the worker
  }
}

// Refinement's whole-placement fitness in the worker: a placement with a crashing
// kernel costs that evaluation, the next one gets a fresh worker.
TEST(IsolatedMeasure, FitnessOfAPlacementRunsInTheWorker) {
  Graph g = testing::import_model(faulty_model(false));
  MeasureOptions options;
  options.worker.command = {COLLAGE_FAULTY_CLI, kMeasureWorkerFlag};
  MeasureWorker worker(g, random_inputs(g, 1), options);
  auto placement = [&](bool crash) {
    std::vector<KernelGroup> kernels;
    for (NodeId n = 0; n < g.num_nodes(); ++n) {
      bool faulty = g.node(n).op_type == "Relu" && g.value(g.node(n).inputs[0]).shape[0] == (crash ? 2 : 1);
      kernels.push_back({{n}, faulty ? "faulty" : "native", g.node(n).op_type});
    }
    return kernels;
  };
  Cost ok = worker.fitness(placement(false), 3);
  ASSERT_TRUE(ok.valid()) << ok.invalid_reason;
  EXPECT_EQ(ok.samples, 3);
  EXPECT_GT(ok.median_ms, 0);
  EXPECT_EQ(worker.fitness(placement(true), 3).invalid_reason, testing::kSegvReason);
  EXPECT_TRUE(worker.fitness(placement(false), 3).valid());
  EXPECT_EQ(worker.workers_started(), 2);
}

TEST(IsolatedMeasure, AWorkerThatCannotStartIsAClearError) {
  Graph g = testing::import_model(faulty_model());
  std::vector<const BackendSpec*> backends = {&native_backend()};
  MeasureOptions options;
  options.worker.command = {"/nonexistent/collage-worker", kMeasureWorkerFlag};
  Measurer measurer(g, reference_values(g, random_inputs(g, 1), native::node_evaluator()), nullptr, options);
  try {
    measurer.measure(enumerate_candidates(g, backends), backends);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/collage-worker"), std::string::npos) << e.what();
  }
}

// The CLI: `tune` survives every fault, says which candidates were lost and why, and
// places the faulty nodes elsewhere.
TEST(IsolatedMeasure, TheCliTuneGoesOnAndReportsEachLostCandidate) {
  testing::ScopedTempDir tmp("collage_isolation");
  const fs::path& dir = tmp.path();
  // Without the hoarder: its default budget is 3/4 of the machine's available memory.
  std::ofstream((dir / "m.onnx").string(), std::ios::binary) << faulty_model(false).bytes();
  std::string cmd = std::string(COLLAGE_FAULTY_CLI) + " tune " + (dir / "m.onnx").string() +
                    " --backends native,faulty --no-cost-db --min-time-ms 2 -o " + (dir / "p.json").string() +
                    " >" + (dir / "out.txt").string() + " 2>" + (dir / "err.txt").string();
  // The hang candidate waits for its limit: 10 s + 50x its native time.
  int status = std::system(cmd.c_str());
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string out = slurp(dir / "out.txt"), err = slurp(dir / "err.txt");
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 0) << err;
  EXPECT_NE(out.find("verified against the native reference: ok"), std::string::npos) << out;
  for (const char* reason : {testing::kSegvReason, "crashed: SIGABRT", "timed out after 10 s"})
    EXPECT_NE(err.find(reason), std::string::npos) << reason << "\n" << err;
  // The verified run above is in-process: a faulty kernel placed on a fault would have killed it.
}

}  // namespace
}  // namespace collage
