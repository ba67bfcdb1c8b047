// Isolated measurement (core/tuning/measure_worker.h), end to end with the test-only
// faulty backend (tests/faulty): a kernel that crashes, aborts, hangs or hoards memory
// costs its candidate, with the reason, and the measuring goes on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "core/ir/random_inputs.h"
#include "core/tuning/host_lock.h"
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

// Asks `stop` whether to stop and keeps what it is told.
struct WaitObserver : ProgressObserver {
  std::function<bool()> stop;
  std::vector<std::string> notices;
  void on_progress(const ProgressEvent&) override {}
  void on_notice(const std::string& message) override { notices.push_back(message); }
  bool cancel_requested() const override { return stop && stop(); }
};

// The faulty model's Relu whose input has `dim` rows (its fault: kFaultOfDim).
std::vector<NodeId> relu_of_dim(const Graph& g, int64_t dim) {
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (g.node(n).op_type == "Relu" && g.value(g.node(n).inputs[0]).shape[0] == dim) return {n};
  return {};
}

// A stop reaches a worker stuck in a kernel that never returns: the request ends with
// Error(Cancelled) long before its limit, the worker is gone, and the next request gets a new one.
TEST(IsolatedMeasure, AStopEndsAMeasurementStuckInAKernel) {
  Graph g = testing::import_model(faulty_model(false));
  MeasureOptions options;
  options.min_time_ms = 2;
  options.worker.command = {COLLAGE_FAULTY_CLI, kMeasureWorkerFlag};
  options.worker.min_limit_s = 60;  // a stop not honoured shows as "timed out after 60 s"
  options.worker.limit_factor = 0;
  // The hang kernel writes its process's pid on this pipe as it starts to hang.
  int hang[2];
  ASSERT_EQ(::pipe(hang), 0);
  int write_end = ::fcntl(hang[1], F_DUPFD, 100);  // clear of fd 3, the worker's channel
  ::close(hang[1]);
  ::setenv("COLLAGE_FAULTY_HANG_FD", std::to_string(write_end).c_str(), 1);  // the worker inherits it
  MeasureWorker worker(g, random_inputs(g, 1), options);
  pid_t hanging = 0;
  auto hung = [&] {
    pollfd p{hang[0], POLLIN, 0};
    return hanging != 0 ||
           (::poll(&p, 1, 0) == 1 && ::read(hang[0], &hanging, sizeof hanging) == sizeof hanging);
  };
  WaitObserver observer;
  observer.stop = hung;
  std::optional<ErrorKind> thrown;
  try {
    Cost cost = worker.measure("faulty", relu_of_dim(g, 8), &observer);
    ADD_FAILURE() << "the request ended without the stop: " << cost.invalid_reason;
  } catch (const Error& e) {
    thrown = e.kind();
  }
  ::unsetenv("COLLAGE_FAULTY_HANG_FD");
  ::close(write_end);
  ::close(hang[0]);
  EXPECT_EQ(thrown, ErrorKind::Cancelled);
  ASSERT_NE(hanging, 0);
  EXPECT_EQ(::kill(hanging, 0), -1) << "the stuck worker is still there";  // killed and reaped
  EXPECT_EQ(errno, ESRCH);
  Cost next = worker.measure("faulty", relu_of_dim(g, 1));
  EXPECT_TRUE(next.valid()) << next.invalid_reason;
  EXPECT_EQ(worker.workers_started(), 2);
}

// While another process on the machine holds the measurement lock (host_lock.h) the worker
// waits for it: that wait can be stopped, and it does not count against the kernel's limit.
TEST(IsolatedMeasure, WaitingForTheMachinesMeasurementLockIsStoppableAndUnlimited) {
  Graph g = testing::import_model(faulty_model(false));
  MeasureOptions options;
  options.min_time_ms = 2;
  options.worker.command = {COLLAGE_FAULTY_CLI, kMeasureWorkerFlag};
  options.worker.min_limit_s = 2;
  options.worker.limit_factor = 0;
  MeasureWorker worker(g, random_inputs(g, 1), options);
  const std::vector<NodeId> relu = relu_of_dim(g, 1);
  ASSERT_TRUE(worker.measure("native", relu).valid());
  {
    HostMeasureLock other(true);  // this process times: the worker cannot
    int asked = 0;
    WaitObserver observer;
    observer.stop = [&] { return ++asked > 3; };
    std::optional<ErrorKind> thrown;
    try {
      worker.measure("native", relu, &observer);
    } catch (const Error& e) {
      thrown = e.kind();
    }
    EXPECT_EQ(thrown, ErrorKind::Cancelled);
  }
  // Held half as long again as the limit, then let go: the candidate is timed, not timed out.
  using Clock = std::chrono::steady_clock;
  std::optional<HostMeasureLock> other(std::in_place, true);
  auto held_since = Clock::now();
  WaitObserver observer;
  observer.stop = [&] {
    if (other && Clock::now() - held_since > std::chrono::milliseconds(3000)) other.reset();
    return false;
  };
  Cost cost = worker.measure("native", relu, &observer);
  EXPECT_FALSE(other.has_value());
  EXPECT_TRUE(cost.valid()) << cost.invalid_reason;
  // Past HostMeasureLock::kNoticeAfterMs the user was told why nothing moved, once.
  ASSERT_EQ(observer.notices.size(), 1u);
  EXPECT_NE(observer.notices[0].find(HostMeasureLock::path()), std::string::npos) << observer.notices[0];
  EXPECT_EQ(worker.workers_started(), 2);  // one more after the stop
}

// The in-process wait for the lock: a stop gives up without holding it, and the waiting
// thread it leaves behind lets go as soon as it gets the lock.
TEST(IsolatedMeasure, AStoppedWaitForTheMeasurementLockLeavesItFree) {
  auto other_process = [] {  // an open file of its own excludes like another process's
    return ::open(HostMeasureLock::path(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  };
  int busy = other_process();
  ASSERT_GE(busy, 0);
  ASSERT_EQ(::flock(busy, LOCK_EX), 0);
  int asked = 0, told = 0;
  {
    HostMeasureLock stopped(
        true, [&] { return ++asked > 3; }, [&] { ++told; });
    EXPECT_TRUE(stopped.stopped());
  }
  EXPECT_EQ(told, 0);  // stopped long before kNoticeAfterMs
  ::close(busy);       // the abandoned wait gets the lock now, and lets go of it
  int gave_up_after = 0;
  {
    // Other tests on the machine may take it in between: 10 s is plenty for them.
    HostMeasureLock timing(true, [&] { return ++gave_up_after > 200; });
    ASSERT_FALSE(timing.stopped()) << "the lock was never let go";
    int probe = other_process();
    EXPECT_NE(::flock(probe, LOCK_EX | LOCK_NB), 0);  // held now
    ::close(probe);
  }
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
