// Close contests (core/search/close_contests.h): which choices of the search are looked at
// again, and the tuner measuring them again side by side.
#include "core/search/close_contests.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "core/ir/random_inputs.h"
#include "core/search/tuner.h"
#include "core/tuning/cost_db.h"
#include "onnx_test_model.h"
#include "temp_dir.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

// Two "layers" of two element-wise nodes each: nodes 0,1 and 2,3.
Graph two_layers() {
  OnnxTestModel m(17);
  m.input("x", {16, 16});
  m.node("Relu", {"x"}, {"a"});
  m.node("Neg", {"a"}, {"b"});
  m.node("Relu", {"b"}, {"c"});
  m.node("Neg", {"c"}, {"y"});
  m.output("y");
  return import_model(m);
}

// Per layer: one fused kernel on backend "A" (signature "F"), or two single kernels on "B"
// (signatures "S1" and "S2"); identical layers share signatures, as measuring does.
struct Problem {
  std::vector<Candidate> candidates;
  std::vector<Cost> costs;
  std::vector<std::string> signatures;
  Problem(double fused_ms, double s1_ms, double s2_ms) {
    for (size_t layer = 0; layer < 2; ++layer) {
      add(IndexSet(4, {2 * layer, 2 * layer + 1}), "A", "F", fused_ms);
      add(IndexSet(4, {2 * layer}), "B", "S1", s1_ms);
      add(IndexSet(4, {2 * layer + 1}), "B", "S2", s2_ms);
    }
  }
  void add(IndexSet nodes, const char* backend, const char* signature, double ms) {
    candidates.push_back({std::move(nodes), backend, signature});
    costs.push_back(Cost::of_ms(ms));
    signatures.push_back(signature);
  }
};

struct Found {
  std::vector<Contest> contests;
  SearchResult placed;
};

Found contests_of(const Graph& g, const Problem& p, const Pins& pins = {}, ContestOptions options = {}) {
  SearchOptions search;
  search.epsilon_ms = 0;
  Found f;
  f.placed = search_placement(g, p.candidates, p.costs, pins, search);
  f.contests = find_close_contests(g, p.candidates, p.costs, p.signatures, pins, search, f.placed, options);
  return f;
}

std::vector<std::string> signatures_of(const Problem& p, const Contest& c) {
  std::vector<std::string> out;
  for (size_t m : c.members) out.push_back(p.signatures[m]);
  return out;
}

TEST(CloseContests, AFusedKernelWithinTheMarginOfItsSinglesIsAContest) {
  Graph g = two_layers();
  Problem p(1.0, 0.5, 0.55);  // fused 2 x 1.0 against singles 2 x 1.05: 5% apart
  Found f = contests_of(g, p);
  ASSERT_EQ(f.contests.size(), 1u);  // one signature placed (both layers), one contest
  const Contest& c = f.contests[0];
  EXPECT_EQ(signatures_of(p, c), (std::vector<std::string>{"F", "S1", "S2"}));
  EXPECT_DOUBLE_EQ(c.placed_ms, 2.0);
  EXPECT_DOUBLE_EQ(c.without_ms, 2.1);
}

TEST(CloseContests, SinglesPlacedAreEachContestedByTheFusedKernel) {
  Graph g = two_layers();
  Problem p(1.0, 0.5, 0.45);  // singles 2 x 0.95 placed; fused 2 x 1.0
  Found f = contests_of(g, p);
  ASSERT_EQ(f.contests.size(), 2u);
  // The larger holder first: S1 holds 1.0 ms, S2 0.9 ms; ruling either out costs 0.1 ms.
  EXPECT_EQ(signatures_of(p, f.contests[0]), (std::vector<std::string>{"S1", "F"}));
  EXPECT_EQ(signatures_of(p, f.contests[1]), (std::vector<std::string>{"S2", "F"}));
}

TEST(CloseContests, AClearWinIsNoContest) {
  Graph g = two_layers();
  EXPECT_TRUE(contests_of(g, Problem(1.0, 0.8, 0.8)).contests.empty());  // 1.6 against 1.0 per layer
  // The margin is a share of the placed signature's own time: 15% of 2.0 ms is 0.3 ms.
  EXPECT_EQ(contests_of(g, Problem(1.0, 0.6, 0.54)).contests.size(), 1u);  // 0.28 ms more
  EXPECT_TRUE(contests_of(g, Problem(1.0, 0.6, 0.56)).contests.empty());   // 0.32 ms more
}

TEST(CloseContests, ThresholdsPinsAndRoundsLimitThem) {
  Graph g = two_layers();
  Problem p(1.0, 0.5, 0.55);
  ContestOptions options;
  options.min_share = 1.01;  // F holds all of the placement, not more
  EXPECT_TRUE(contests_of(g, p, {}, options).contests.empty());
  options = {};
  options.rounds = 0;
  EXPECT_TRUE(contests_of(g, p, {}, options).contests.empty());
  Pins pins;
  pins.pinned[0] = "A";  // nothing but the fused kernel may run node 0
  EXPECT_TRUE(contests_of(g, p, pins).contests.empty());
}

// A copy of the native backend under another name: every kernel has an equal twin, so with
// an unbounded margin every placed kernel is a contest.
BackendSpec twin_of_native(std::vector<std::string>* builds) {
  BackendSpec s = native_backend();
  s.name = "twin";
  CompileFn inner = s.compile;
  s.compile = [inner, builds](const Graph& g, const SubGraph& sub, const CompileOptions& o) {
    if (builds) builds->push_back("twin");
    return inner(g, sub, o);
  };
  return s;
}

TEST(CloseContests, MeasuringAlternatesTheRivalsAndAFailureIsKept) {
  Graph g = two_layers();
  std::vector<std::string> builds;
  BackendSpec twin = twin_of_native(&builds);
  int native_builds = 0;
  BackendSpec flaky = native_backend();  // fails on its second build
  flaky.name = "flaky";
  CompileFn inner = flaky.compile;
  flaky.compile = [&, inner](const Graph& graph, const SubGraph& sub, const CompileOptions& o) {
    builds.push_back("flaky");
    if (++native_builds == 2) throw Error(ErrorKind::Unsupported, "second build refused");
    return inner(graph, sub, o);
  };
  std::vector<const BackendSpec*> backends = {&twin, &flaky};
  MeasureOptions options;
  options.min_time_ms = 0.2;
  options.min_samples = 3;
  Measurer m(g, reference_values(g, random_inputs(g, 3), native::node_evaluator()), nullptr, options);
  std::vector<Candidate> rivals = {{IndexSet(4, {0}), "twin", "Relu"}, {IndexSet(4, {0}), "flaky", "Relu"}};
  std::vector<Cost> costs = m.measure_alternating(rivals, {"twin-sig", "flaky-sig"}, backends, 3);
  EXPECT_EQ(builds, (std::vector<std::string>{"twin", "flaky", "flaky", "twin", "twin", "flaky"}));
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_TRUE(costs[0].valid()) << costs[0].invalid_reason;
  EXPECT_FALSE(costs[1].valid());  // two good rounds do not outvote a failed one
  EXPECT_NE(costs[1].invalid_reason.find("second build refused"), std::string::npos)
      << costs[1].invalid_reason;
}

TEST(CloseContests, TheTuneMeasuresThemAgainStoresTheNewCostsAndATuneFromTheDbDoesNot) {
  Graph g = two_layers();
  BackendSpec twin = twin_of_native(nullptr);
  std::vector<const BackendSpec*> backends = {&native_backend(), &twin};
  testing::ScopedTempDir dir("collage_contests");
  CostDb db(dir.file("costs.sqlite"));
  TuneOptions options;
  options.measure.min_time_ms = 0.2;
  options.measure.min_samples = 3;
  options.measure.warmup_runs = 1;
  options.search.epsilon_ms = 0;
  options.contests.margin = 1e9;
  options.contests.min_share = 0;
  struct Count : ProgressObserver {
    std::map<size_t, int> landed;
    void on_progress(const ProgressEvent&) override {}
    void on_measured(size_t i, const MeasuredCandidate&) override { ++landed[i]; }
  } count;
  TuneResult r = tune(g, backends, native::node_evaluator(), options, &db, &count);
  ASSERT_FALSE(r.contests.empty());
  EXPECT_GT(r.contest_ms, 0);
  for (const SettledContest& c : r.contests) {
    ASSERT_EQ(c.after_ms.size(), c.members.size());
    for (size_t j = 0; j < c.members.size(); ++j) {
      const MeasuredCandidate& now = r.costs[c.members[j]];
      // Later contests may measure a member again; its cost is then the last one's.
      bool last = true;
      for (const SettledContest& later : r.contests)
        if (&later > &c && std::count(later.members.begin(), later.members.end(), c.members[j])) last = false;
      if (!last) continue;
      ASSERT_TRUE(now.cost.valid());
      EXPECT_EQ(now.cost.median_ms, c.after_ms[j]);
      auto stored = db.find(CostKey{now.signature, 1, device_fingerprint()});
      ASSERT_TRUE(stored);
      EXPECT_EQ(stored->cost.median_ms, c.after_ms[j]);
      EXPECT_GE(count.landed[c.members[j]], 2);  // its first cost, then the new one
    }
  }
  // The placement is the search over the new costs.
  double predicted = 0;
  for (const PlacedKernel& k : r.placement.kernels) predicted += k.cost.median_ms;
  EXPECT_NEAR(predicted, r.placement.predicted_ms, 1e-9);
  TuneResult again = tune(g, backends, native::node_evaluator(), options, &db);
  EXPECT_EQ(again.measured_now, 0u);
  EXPECT_TRUE(again.contests.empty());  // costs from the DB were settled by the tune that stored them
  TuneOptions none = options;
  none.contests.rounds = 0;
  EXPECT_TRUE(tune(g, backends, native::node_evaluator(), none, nullptr).contests.empty());
}

}  // namespace
}  // namespace collage
