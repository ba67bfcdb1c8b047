#include "core/tuning/measurer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "core/ir/random_inputs.h"
#include "core/tuning/measure_worker.h"
#include "onnx_test_model.h"
#include "temp_dir.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

Graph chain() {
  OnnxTestModel m(17);
  m.input("x", {16, 16});
  m.node("Relu", {"x"}, {"a"});
  m.node("Neg", {"a"}, {"y"});
  m.output("y");
  return import_model(m);
}

// A backend whose kernels return zeros: a wrong kernel must be caught, not timed.
BackendSpec wrong_backend() {
  BackendSpec s;
  s.name = "wrong";
  s.version = "0";
  s.rules.push_back(std::make_shared<TvmStyleRule>([](const Graph&, const Node&) { return true; }));
  s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
    struct Zeros : Kernel {
      std::vector<Shape> shapes;
      std::vector<Tensor> run(KernelInputs, TensorAllocator&) override {
        std::vector<Tensor> out;
        for (const Shape& s : shapes) {
          Tensor t(DType::Float32, s);
          t.data<float>()[0] = 123.0f;  // never equal to the reference of relu/neg on [-1, 1)
          out.push_back(t);
        }
        return out;
      }
    };
    auto k = std::make_unique<Zeros>();
    for (ValueId v : sub.outputs) k->shapes.push_back(g.value(v).shape);
    return k;
  };
  return s;
}

BackendSpec refusing_backend() {
  BackendSpec s = wrong_backend();
  s.name = "refusing";
  s.compile = [](const Graph&, const SubGraph&, const CompileOptions&) -> std::unique_ptr<Kernel> {
    throw Error(ErrorKind::Unsupported, "refusing: no such primitive");
  };
  return s;
}

TEST(Measurer, InvalidKernelsGetReasonsAndValidOnesAreCached) {
  Graph g = chain();
  BackendSpec wrong = wrong_backend(), refusing = refusing_backend();
  std::vector<const BackendSpec*> backends = {&native_backend(), &wrong, &refusing};
  auto candidates = enumerate_candidates(g, backends);
  auto values = reference_values(g, random_inputs(g, 5), native::node_evaluator());
  testing::ScopedTempDir dir("collage_measurer");
  std::string path = dir.file("costs.sqlite");
  MeasureOptions options;
  options.min_time_ms = 1;
  options.min_samples = 3;
  {
    CostDb db(path);
    Measurer m(g, values, &db, options);
    auto measured = m.measure(candidates, backends);
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto& c = measured[i].cost;
      EXPECT_FALSE(measured[i].from_cache);
      if (candidates[i].backend == "native") {
        EXPECT_TRUE(c.valid()) << c.invalid_reason;
        EXPECT_GE(c.samples, 3);
        EXPECT_GT(c.median_ms, 0);
        EXPECT_LE(c.median_ms, c.p90_ms);
      } else if (candidates[i].backend == "wrong") {
        EXPECT_FALSE(c.valid());
        EXPECT_NE(c.invalid_reason.find("disagrees"), std::string::npos) << c.invalid_reason;
      } else {
        EXPECT_FALSE(c.valid());
        EXPECT_NE(c.invalid_reason.find("no such primitive"), std::string::npos) << c.invalid_reason;
      }
    }
  }
  CostDb db(path);
  Measurer again(g, values, &db, options);
  for (const auto& m : again.measure(candidates, backends))
    EXPECT_TRUE(m.from_cache);  // nothing measured twice
}

TEST(Measurer, ReportsTheCandidateListThenEveryResultInOrder) {
  Graph g = chain();
  BackendSpec wrong = wrong_backend();
  std::vector<const BackendSpec*> backends = {&native_backend(), &wrong};
  auto candidates = enumerate_candidates(g, backends);
  struct Recorder : ProgressObserver {
    std::vector<std::string> log;
    std::vector<MeasuredCandidate> results;
    void on_progress(const ProgressEvent&) override {}
    void on_candidates(const std::vector<Candidate>& c) override {
      log.push_back("list " + std::to_string(c.size()));
    }
    void on_measured(size_t index, const MeasuredCandidate& r) override {
      log.push_back("result " + std::to_string(index));
      results.push_back(r);
    }
  } recorder;
  MeasureOptions options;
  options.min_time_ms = 1;
  Measurer m(g, reference_values(g, random_inputs(g, 2), native::node_evaluator()), nullptr, options);
  auto measured = m.measure(candidates, backends, &recorder);
  std::vector<std::string> want = {"list " + std::to_string(candidates.size())};
  for (size_t i = 0; i < candidates.size(); ++i) want.push_back("result " + std::to_string(i));
  EXPECT_EQ(recorder.log, want);
  ASSERT_EQ(recorder.results.size(), measured.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_EQ(recorder.results[i].signature, measured[i].signature);
    EXPECT_EQ(recorder.results[i].cost.valid(), measured[i].cost.valid());
    EXPECT_EQ(recorder.results[i].cost.median_ms, measured[i].cost.median_ms);
  }
}

TEST(Measurer, CancelKeepsWhatWasMeasured) {
  Graph g = chain();
  auto candidates = enumerate_candidates(g, {&native_backend()});
  ASSERT_GE(candidates.size(), 2u);
  struct CancelAfterOne : ProgressObserver {
    size_t seen = 0;
    void on_progress(const ProgressEvent&) override { ++seen; }
    bool cancel_requested() const override { return seen >= 2; }
  } observer;
  testing::ScopedTempDir dir("collage_cancel");
  std::string path = dir.file("costs.sqlite");
  auto db_holder = std::make_unique<CostDb>(path);
  CostDb& db = *db_holder;
  MeasureOptions options;
  options.min_time_ms = 1;
  Measurer m(g, reference_values(g, random_inputs(g, 1), native::node_evaluator()), &db, options);
  try {
    m.measure(candidates, {&native_backend()}, &observer);
    FAIL() << "expected cancellation";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Cancelled);
  }
  EXPECT_GE(db.size(), 1u);
  EXPECT_LT(db.size(), candidates.size());
}

// One Cost: a status plus a reason, checked on construction, and the status survives the
// measurement worker's channel (the front ends report lost workers from it, not from words).
TEST(Cost, StatusIsCheckedOnConstructionAndCrossesTheWorkerChannel) {
  EXPECT_TRUE(Cost::of_ms(1.25).valid());
  EXPECT_THROW(Cost::of_ms(-1), Error);
  EXPECT_THROW(Cost::of_ms(std::numeric_limits<double>::infinity()), Error);
  EXPECT_THROW(Cost::of_ms(std::nan("")), Error);
  EXPECT_THROW(Cost::invalid("why", CostStatus::Measured), Error);
  EXPECT_EQ(Cost::invalid("").invalid_reason, "invalid");
  EXPECT_EQ(Cost::not_measured().status, CostStatus::NotMeasured);
  EXPECT_FALSE(Cost::not_measured().valid());
  for (CostStatus status : {CostStatus::Failed, CostStatus::Lost, CostStatus::NotMeasured}) {
    Cost sent = Cost::invalid("crashed: SIGSEGV in a kernel", status);
    sent.build_ms = 3.5;
    Cost got = worker_channel::parse_cost_reply(worker_channel::cost_reply(sent));
    EXPECT_EQ(got.status, status) << cost_status_name(status);
    EXPECT_EQ(got.invalid_reason, sent.invalid_reason);
    EXPECT_EQ(got.build_ms, 3.5);
    EXPECT_EQ(cost_status_from_name(cost_status_name(status)), status);
  }
  Cost measured = Cost::of_ms(0.75);
  measured.samples = 12;
  Cost got = worker_channel::parse_cost_reply(worker_channel::cost_reply(measured));
  EXPECT_TRUE(got.valid());
  EXPECT_EQ(got.median_ms, 0.75);
  EXPECT_EQ(got.samples, 12);
  // A reply without a status word (or a garbled one) is a malformed reply, never a valid cost.
  EXPECT_FALSE(worker_channel::parse_cost_reply("invalid 3.5\n").valid());
  EXPECT_EQ(worker_channel::parse_cost_reply("invalid garbled 3.5 why\n").status, CostStatus::Failed);
}

}  // namespace
}  // namespace collage
