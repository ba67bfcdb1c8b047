#include "core/refine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "backends/xnnpack_graph/xnnpack_graph.h"
#include "core/onnx_import.h"
#include "core/placement_timing.h"
#include "core/random_inputs.h"
#include "onnx_test_model.h"
#include "resources/samples/zoo.h"

namespace collage {
namespace {

using testing::import_model;
using testing::OnnxTestModel;

// A graph-level stand-in that takes Relu, Neg and Add and runs regions with the native kernels.
BackendSpec graphy() {
  BackendSpec s;
  s.name = "graphy";
  s.version = "test";
  s.kind = BackendKind::GraphLevel;
  s.supports_node = [](const Graph&, const Node& n) {
    return n.op_type == "Relu" || n.op_type == "Neg" || n.op_type == "Add";
  };
  s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) {
    return native::make_fused_kernel(g, sub);
  };
  return s;
}

Placement one_kernel_per_node(const Graph& g) {
  Placement p;
  p.model_fingerprint = model_fingerprint(g);
  for (NodeId n = 0; n < g.num_nodes(); ++n) p.kernels.push_back({{n}, "native", g.node(n).op_type, 1.0});
  p.predicted_ms = g.num_nodes();
  return p;
}

// The stated test fitness: a native kernel costs its op-level cost (1 ms); a
// graph-level region of m nodes costs 0.3 + 0.5 m, so offloading pays and
// merging regions pays more.
double test_fitness(const Placement& p) {
  double total = 0;
  for (const PlacedKernel& k : p.kernels)
    total += k.backend == "graphy" ? 0.3 + 0.5 * static_cast<double>(k.nodes.size()) : k.cost_ms;
  return total;
}

// Relu, Neg, Exp, Relu, Neg, Sigmoid, Relu, Neg, plus a skip edge: two runs of offloadable ops.
Graph mixed_chain() {
  OnnxTestModel m(17);
  m.input("x", {2, 8});
  const char* ops[] = {"Relu", "Neg", "Exp", "Relu", "Neg", "Sigmoid", "Relu", "Neg"};
  std::string prev = "x";
  for (int i = 0; i < 8; ++i) {
    std::string out = "v" + std::to_string(i);
    m.node(ops[i], {prev}, {out});
    prev = out;
  }
  m.node("Add", {"v1", prev}, {"y"});
  m.output("y");
  return import_model(m);
}

TEST(Refine, FindsTheBruteForceOptimumAndNeverLosesToTheSeed) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  auto genes = refine_genes(g, seed, {&gl});
  ASSERT_EQ(genes.size(), 7u);  // the Relu, Neg and Add kernels
  double best = 1e9;
  for (uint32_t bits = 0; bits < (1u << genes.size()); ++bits) {
    Genome genome(genes.size());
    for (size_t i = 0; i < genes.size(); ++i) genome[i] = (bits >> i) & 1;
    best = std::min(best, test_fitness(decode_genome(g, seed, genes, genome)));
  }
  RefineOptions options;
  options.population = 12;
  options.max_generations = 60;
  options.patience = 20;
  RefineResult r = refine_placement(g, seed, {&gl}, test_fitness, options);
  EXPECT_NEAR(r.best_fitness, best, 1e-9);
  EXPECT_LE(r.best_fitness, r.seed_fitness);
  EXPECT_NEAR(r.seed_fitness, 9.0, 1e-9);  // 9 native kernels of 1 ms
  EXPECT_LE(r.evaluations, 128);           // cached: never more than the distinct genomes
  EXPECT_EQ(r.history.size(), static_cast<size_t>(r.generations));
  RefineResult again = refine_placement(g, seed, {&gl}, test_fitness, options);
  EXPECT_EQ(again.best_genome, r.best_genome);  // deterministic for a seed
}

// Stopping mid-search returns (no exception) the best placement found so far; every
// improvement was reported with its placement as it happened.
TEST(Refine, CancellationKeepsTheBestSoFarAndImprovementsAreReported) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  struct StopAfter : ProgressObserver {
    int evaluations_allowed;
    mutable int asked = 0;
    std::vector<double> reported;  // fitness of each reported best, recomputed from its placement
    explicit StopAfter(int n) : evaluations_allowed(n) {}
    void on_progress(const ProgressEvent&) override {}
    void on_best_placement(const Placement& best, double fitness_ms) override {
      EXPECT_NEAR(test_fitness(best), fitness_ms, 1e-12);
      reported.push_back(fitness_ms);
    }
    bool cancel_requested() const override { return ++asked > evaluations_allowed; }
  };
  RefineOptions options;
  options.population = 12;
  options.max_generations = 60;
  options.patience = 60;
  RefineResult full = refine_placement(g, seed, {&gl}, test_fitness, options);
  StopAfter stop(5);
  RefineResult r = refine_placement(g, seed, {&gl}, test_fitness, options, &stop);
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(full.cancelled);
  EXPECT_LT(r.evaluations, full.evaluations);
  EXPECT_LE(r.best_fitness, r.seed_fitness);
  EXPECT_NEAR(test_fitness(r.best), r.best_fitness, 1e-12);  // `best` is the genome the fitness belongs to
  ASSERT_FALSE(stop.reported.empty());                       // all-1 beats the seed in the stated fitness
  for (size_t i = 1; i < stop.reported.size(); ++i) EXPECT_LT(stop.reported[i], stop.reported[i - 1]);
  EXPECT_EQ(stop.reported.back(), r.best_fitness);
}

// One event per measured genome and one per generation, with the counts agreeing with the result.
TEST(Refine, ReportsEveryEvaluationAndEveryGeneration) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  struct Recorder : ProgressObserver {
    std::vector<ProgressEvent> evaluations, generations;
    void on_progress(const ProgressEvent& e) override {
      (e.stage == ProgressEvent::Stage::RefineEvaluation ? evaluations : generations).push_back(e);
    }
  } recorder;
  RefineOptions options;
  options.max_generations = 6;
  options.patience = 6;
  RefineResult r = refine_placement(g, seed, {&gl}, test_fitness, options, &recorder);
  ASSERT_EQ(recorder.evaluations.size(), static_cast<size_t>(r.evaluations));
  for (size_t i = 0; i < recorder.evaluations.size(); ++i) EXPECT_EQ(recorder.evaluations[i].done, i + 1);
  EXPECT_EQ(recorder.evaluations.front().best_ms, r.seed_fitness);  // the seed comes first
  EXPECT_EQ(recorder.evaluations.back().best_ms, r.best_fitness);
  ASSERT_EQ(recorder.generations.size(), static_cast<size_t>(r.generations));
  for (const ProgressEvent& e : recorder.generations) EXPECT_EQ(e.stage, ProgressEvent::Stage::Refine);
  EXPECT_EQ(recorder.generations.back().evaluations, static_cast<size_t>(r.evaluations));
  EXPECT_EQ(recorder.generations.back().best_ms, r.best_fitness);
}

TEST(Refine, GenomeFitnessIsStoredInTheCostDb) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  auto path = (std::filesystem::temp_directory_path() / ("refine_db_" + std::to_string(::getpid()))).string();
  int calls = 0;
  FitnessFn counting = [&](const Placement& p) {
    ++calls;
    return test_fitness(p);
  };
  RefineOptions options;
  RefineResult first, second;
  {
    CostDb db(path);
    first = refine_placement(g, seed, {&gl}, cached_fitness(counting, &db, g, 1), options);
  }
  int first_calls = calls;
  EXPECT_EQ(first_calls, first.evaluations);
  {
    CostDb db(path);  // a later run on the same model measures nothing it has seen
    second = refine_placement(g, seed, {&gl}, cached_fitness(counting, &db, g, 1), options);
  }
  EXPECT_EQ(calls, first_calls);
  EXPECT_EQ(second.best_genome, first.best_genome);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

TEST(PlacementTiming, SideBySideAlternatesAndTakesEachSidesMedian) {
  // A fake clock that the two workloads advance by known amounts.
  double clock = 0;
  std::string order;
  std::vector<double> a_cost = {5, 1, 3, 9, 4}, b_cost = {2, 2, 7, 2, 6};
  size_t ai = 0, bi = 0;
  SideBySide r = time_side_by_side(
      [&] {
        order += 'A';
        clock += a_cost[ai++];
      },
      [&] {
        order += 'B';
        clock += b_cost[bi++];
      },
      5, [&] { return clock; });
  EXPECT_EQ(order, "ABBAABBAAB");  // ABBA: drift over time hits both sides alike
  EXPECT_EQ(r.rounds, 5);
  EXPECT_EQ(r.a_ms, median_ms(a_cost));
  EXPECT_EQ(r.b_ms, median_ms(b_cost));
  EXPECT_EQ(median_ms({5, 1, 3, 9}), 4.0);  // even count: mean of the middle two
  EXPECT_EQ(median_ms({}), 0.0);
}

// A graph-level stand-in whose library refuses every region.
BackendSpec refusing() {
  BackendSpec s = graphy();
  s.name = "refusing";
  s.compile = [](const Graph&, const SubGraph&, const CompileOptions&) -> std::unique_ptr<Kernel> {
    throw Error(ErrorKind::Unsupported, "refusing: no region is supported");
  };
  return s;
}

TEST(PlacementTiming, UnbuildablePlacementsLoseAndOthersAreTimed) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy(), no = refusing();
  std::vector<const BackendSpec*> backends = {&native_backend(), &gl, &no};
  FitnessFn fitness = measured_fitness(g, backends, CompileOptions{}, random_inputs(g, 3), 3);
  double seed_ms = fitness(seed);
  EXPECT_TRUE(std::isfinite(seed_ms));
  EXPECT_GE(seed_ms, 0.0);
  Placement refused = seed;
  refused.kernels[0].backend = "refusing";
  EXPECT_TRUE(std::isinf(fitness(refused)));
  // Any other failure is a bug, not a losing genome: it propagates.
  Placement unknown = seed;
  unknown.kernels[0].backend = "no-such-backend";
  EXPECT_THROW(fitness(unknown), Error);

  SideBySide ab = compare_placements(g, seed, seed, backends, CompileOptions{}, random_inputs(g, 3), 4);
  EXPECT_EQ(ab.rounds, 4);
  EXPECT_TRUE(std::isfinite(ab.a_ms) && std::isfinite(ab.b_ms));
}

TEST(Refine, AdjacentKernelsMergeAndCyclicMergesSplit) {
  // a(Relu) -> b(Exp) -> c(Add) and a -> c: a and c touch, but {a, c} would leave
  // through b and re-enter, so they must stay apart; c and d merge.
  OnnxTestModel m(17);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"a"});
  m.node("Exp", {"a"}, {"b"});
  m.node("Add", {"a", "b"}, {"c"});
  m.node("Neg", {"c"}, {"d"});
  m.output("d");
  Graph g = import_model(m);
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  auto genes = refine_genes(g, seed, {&gl});
  ASSERT_EQ(genes.size(), 3u);  // a, c, d
  Placement p = decode_genome(g, seed, genes, {1, 1, 1});
  int regions = 0;
  size_t largest = 0;
  for (const PlacedKernel& k : p.kernels)
    if (k.backend == "graphy") {
      ++regions;
      largest = std::max(largest, k.nodes.size());
    }
  EXPECT_EQ(regions, 2);  // {a} alone; {c, d} merged
  EXPECT_EQ(largest, 2u);
}

TEST(Refine, EveryDecodedPlacementMatchesTheNativeReference) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  auto genes = refine_genes(g, seed, {&gl});
  auto inputs = random_inputs(g, 9);
  Executor reference(g, native::native_steps(g));
  auto want = reference.run(inputs);
  for (uint32_t bits = 0; bits < (1u << genes.size()); bits += 5) {
    Genome genome(genes.size());
    for (size_t i = 0; i < genes.size(); ++i) genome[i] = (bits >> i) & 1;
    Placement p = decode_genome(g, seed, genes, genome);
    Executor ex(g, placement_steps(g, p, {&native_backend(), &gl}, CompileOptions{}));
    auto got = ex.run(inputs);
    ASSERT_EQ(got[0].to_double_vector(), want[0].to_double_vector()) << "genome " << bits;
  }
}

// Regions of every size that the genome can produce on the CNN samples run on
// XNNPACK's subgraph runtime and agree with the native reference.
TEST(XnnpackGraph, RegionsOnTheSamplesMatchTheNativeReference) {
  for (const char* name : {"inception_small", "resnet_small", "mobilenet_small", "transformer_small"}) {
    auto path = std::filesystem::temp_directory_path() /
                (std::string(name) + "_xg" + std::to_string(::getpid()) + ".onnx");
    samples::build_sample(name).save(path.string());
    ImportOptions io;
    io.evaluator = native::node_evaluator();
    Graph g = import_onnx_file(path.string(), io);
    std::filesystem::remove(path);
    Placement seed = one_kernel_per_node(g);
    auto genes = refine_genes(g, seed, {&xnnpack_graph_backend()});
    ASSERT_GT(genes.size(), 5u) << name;
    auto inputs = random_inputs(g, 4);
    Executor reference(g, native::native_steps(g));
    auto want = reference.run(inputs);
    uint64_t state = 7;
    for (int trial = 0; trial < 6; ++trial) {
      Genome genome(genes.size());
      for (auto& bit : genome)
        bit = trial == 0 ? 1 : (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 63;
      Placement p = decode_genome(g, seed, genes, genome);
      std::vector<ExecStep> steps;
      try {
        steps = placement_steps(g, p, {&native_backend(), &xnnpack_graph_backend()}, CompileOptions{});
      } catch (const Error& e) {
        // A region with a BatchNormalization but not its Conv is declined (the GA scores it +inf);
        // offloading everything must always build.
        ASSERT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
        ASSERT_NE(trial, 0) << e.what();
        continue;
      }
      Executor ex(g, std::move(steps));
      auto got = ex.run(inputs);
      auto a = got[0].to_double_vector(), b = want[0].to_double_vector();
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_NEAR(a[i], b[i], 1e-4 + 1e-3 * std::fabs(b[i])) << name << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace collage
