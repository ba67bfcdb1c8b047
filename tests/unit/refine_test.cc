#include "core/search/refine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "backends/xnnpack_graph/xnnpack_graph.h"
#include "core/import/onnx_import.h"
#include "core/ir/random_inputs.h"
#include "core/runtime/composite_kernel.h"
#include "core/search/placement_timing.h"
#include "onnx_test_model.h"
#include "refine_test_models.h"
#include "resources/samples/zoo.h"
#include "temp_dir.h"

namespace collage {
namespace {

using testing::graphy;
using testing::import_model;
using testing::mixed_chain;
using testing::one_kernel_per_node;
using testing::OnnxTestModel;

// The stated test fitness: a native kernel costs its op-level cost (1 ms); a
// graph-level region of m nodes costs 0.3 + 0.5 m, so offloading pays and
// merging regions pays more.
double test_ms(const Placement& p) {
  double total = 0;
  for (const PlacedKernel& k : p.kernels)
    total += k.backend == "graphy" ? 0.3 + 0.5 * static_cast<double>(k.nodes.size()) : k.cost.median_ms;
  return total;
}
Cost test_fitness(const Placement& p) { return Cost::of_ms(test_ms(p)); }

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
    best = std::min(best, test_ms(decode_genome(g, seed, genes, genome)));
  }
  RefineOptions options;
  options.population = 12;
  options.max_generations = 60;
  options.patience = 20;
  RefineResult r = refine_placement(g, seed, {&gl}, test_fitness, options);
  EXPECT_NEAR(r.best_fitness.median_ms, best, 1e-9);
  EXPECT_LE(r.best_fitness.median_ms, r.seed_fitness.median_ms);
  EXPECT_NEAR(r.seed_fitness.median_ms, 9.0, 1e-9);  // 9 native kernels of 1 ms
  EXPECT_LE(r.evaluations, 128);                     // cached: never more than the distinct genomes
  EXPECT_EQ(r.history.size(), static_cast<size_t>(r.generations));
  RefineResult again = refine_placement(g, seed, {&gl}, test_fitness, options);
  EXPECT_EQ(again.best_genome, r.best_genome);  // deterministic for a seed
}

// A kernel the op-level search already put on graphy joins the region of a moved
// neighbour, so "all to graphy" does not leave it on its own; all-stay forms no region.
TEST(Refine, KernelsAlreadyOnTheBackendJoinTheMovedRegion) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  auto kernel_of = [&](const std::string& value) {
    for (size_t k = 0; k < seed.kernels.size(); ++k)
      if (g.value(g.node(seed.kernels[k].nodes[0]).outputs[0]).name == value) return k;
    return seed.kernels.size();
  };
  size_t relu = kernel_of("v3"), neg = kernel_of("v4");
  ASSERT_LT(relu, seed.kernels.size());
  seed.kernels[relu].backend = "graphy";  // as the op-level search might have placed it
  BackendSpec gl = graphy();
  auto genes = refine_genes(g, seed, {&gl});
  for (const Gene& gene : genes) EXPECT_NE(gene.kernel, relu);  // no other backend could take it
  Placement none = decode_genome(g, seed, genes, Genome(genes.size(), 0));
  EXPECT_EQ(none.kernels.size(), seed.kernels.size());
  Genome only_neg(genes.size(), 0);
  for (size_t i = 0; i < genes.size(); ++i) only_neg[i] = genes[i].kernel == neg ? 1 : 0;
  Placement joined = decode_genome(g, seed, genes, only_neg);
  EXPECT_EQ(joined.kernels.size(), seed.kernels.size() - 1);
  bool found = false;
  for (const PlacedKernel& k : joined.kernels)
    if (k.backend == "graphy") {
      EXPECT_EQ(k.nodes.size(), 2u) << k.label;
      found = k.nodes.size() == 2;
    }
  EXPECT_TRUE(found);
}

TEST(Refine, FitterRanksMeasuredAboveInvalidAndFasterFirst) {
  const Cost fast = Cost::of_ms(1), slow = Cost::of_ms(2), failed = Cost::invalid("no region"),
             lost = Cost::lost("crashed");
  EXPECT_TRUE(fitter(fast, slow));
  EXPECT_FALSE(fitter(slow, fast));
  EXPECT_FALSE(fitter(fast, fast));
  EXPECT_TRUE(fitter(slow, failed));
  EXPECT_TRUE(fitter(slow, lost));
  EXPECT_FALSE(fitter(failed, slow));
  EXPECT_FALSE(fitter(failed, lost));  // invalid genomes tie
  EXPECT_FALSE(fitter(lost, failed));
}

// A genome whose placement cannot be measured ranks below every measured one: the search
// finds the best measurable genome, and the means leave the failures out.
TEST(Refine, GenomesWithoutAFitnessRankLast) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  // Regions of more than two nodes "fail to build" (so the unconstrained optimum is out of reach).
  auto buildable = [](const Placement& p) {
    for (const PlacedKernel& k : p.kernels)
      if (k.backend == "graphy" && k.nodes.size() > 2) return false;
    return true;
  };
  int failures = 0;
  FitnessFn fitness = [&](const Placement& p) {
    if (buildable(p)) return test_fitness(p);
    ++failures;
    return Cost::invalid("graphy: region too large");
  };
  auto genes = refine_genes(g, seed, {&gl});
  double best = 1e9, unconstrained = 1e9;
  for (uint32_t bits = 0; bits < (1u << genes.size()); ++bits) {
    Genome genome(genes.size());
    for (size_t i = 0; i < genes.size(); ++i) genome[i] = (bits >> i) & 1;
    Placement p = decode_genome(g, seed, genes, genome);
    unconstrained = std::min(unconstrained, test_ms(p));
    if (buildable(p)) best = std::min(best, test_ms(p));
  }
  ASSERT_LT(unconstrained, best - 0.1);  // the failing genomes would have won
  struct Recorder : ProgressObserver {
    std::vector<ProgressEvent> generations;
    void on_progress(const ProgressEvent& e) override {
      if (e.stage == ProgressEvent::Stage::Refine) generations.push_back(e);
    }
  } recorder;
  RefineOptions options;
  options.population = 12;
  options.max_generations = 60;
  options.patience = 20;
  RefineResult r = refine_placement(g, seed, {&gl}, fitness, options, &recorder);
  EXPECT_GT(failures, 0);
  ASSERT_TRUE(r.best_fitness.valid());
  EXPECT_NEAR(r.best_fitness.median_ms, best, 1e-9);
  EXPECT_TRUE(buildable(r.best));
  ASSERT_EQ(recorder.generations.size(), r.history.size());
  for (size_t i = 0; i < r.history.size(); ++i) {
    ASSERT_TRUE(r.history[i].best_ms && r.history[i].mean_ms);  // the seed is measurable and kept
    EXPECT_LE(*r.history[i].best_ms, *r.history[i].mean_ms);    // a mean over measured genomes only
    EXPECT_EQ(recorder.generations[i].mean_ms, r.history[i].mean_ms);
  }
}

// When no genome can be measured, not even the op-level seed, nothing is invented: no best,
// no means, the op-level placement stays.
TEST(Refine, NoMeasurableGenomeLeavesNoBestValue) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  FitnessFn nothing = [](const Placement&) { return Cost::invalid("no library builds it"); };
  struct Recorder : ProgressObserver {
    std::vector<ProgressEvent> events;
    int bests = 0;
    void on_progress(const ProgressEvent& e) override { events.push_back(e); }
    void on_best_placement(const Placement&, double) override { ++bests; }
  } recorder;
  RefineOptions options;
  options.max_generations = 3;
  options.patience = 3;
  RefineResult r = refine_placement(g, seed, {&gl}, nothing, options, &recorder);
  EXPECT_FALSE(r.seed_fitness.valid());
  EXPECT_FALSE(r.best_fitness.valid());
  EXPECT_EQ(r.best_fitness.invalid_reason, "no library builds it");
  EXPECT_EQ(r.moved(), 0);
  EXPECT_EQ(placement_to_json(r.best, g), placement_to_json(seed, g));
  EXPECT_EQ(recorder.bests, 0);
  ASSERT_FALSE(recorder.events.empty());
  for (const ProgressEvent& e : recorder.events) {
    EXPECT_FALSE(e.best_ms.has_value());
    EXPECT_FALSE(e.mean_ms.has_value());
  }
  ASSERT_FALSE(r.history.empty());
  for (const GenerationFitness& h : r.history) EXPECT_FALSE(h.best_ms || h.mean_ms);
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
      EXPECT_NEAR(test_ms(best), fitness_ms, 1e-12);
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
  EXPECT_LE(r.best_fitness.median_ms, r.seed_fitness.median_ms);
  EXPECT_NEAR(test_ms(r.best), r.best_fitness.median_ms,
              1e-12);                   // `best` is the genome the fitness belongs to
  ASSERT_FALSE(stop.reported.empty());  // all-1 beats the seed in the stated fitness
  for (size_t i = 1; i < stop.reported.size(); ++i) EXPECT_LT(stop.reported[i], stop.reported[i - 1]);
  EXPECT_EQ(stop.reported.back(), r.best_fitness.median_ms);
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
  EXPECT_EQ(recorder.evaluations.front().best_ms, r.seed_fitness.median_ms);  // the seed comes first
  EXPECT_EQ(recorder.evaluations.back().best_ms, r.best_fitness.median_ms);
  ASSERT_EQ(recorder.generations.size(), static_cast<size_t>(r.generations));
  for (const ProgressEvent& e : recorder.generations) EXPECT_EQ(e.stage, ProgressEvent::Stage::Refine);
  EXPECT_EQ(recorder.generations.back().evaluations, static_cast<size_t>(r.evaluations));
  EXPECT_EQ(recorder.generations.back().best_ms, r.best_fitness.median_ms);
}

TEST(Refine, GenomeFitnessIsStoredInTheCostDb) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  testing::ScopedTempDir dir("collage_refine_db");
  auto path = dir.file("costs.sqlite");
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

// --- Two graph-level backends -------------------------------------------------

// A second graph-level stand-in: takes Relu, Exp and Sigmoid (no Neg, no Add) and
// runs a region as the native kernels of its nodes in sequence.
BackendSpec seqy() {
  BackendSpec s;
  s.name = "seqy";
  s.version = "test";
  s.kind = BackendKind::GraphLevel;
  s.supports_node = [](const Graph&, const Node& n) {
    return n.op_type == "Relu" || n.op_type == "Exp" || n.op_type == "Sigmoid";
  };
  s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) {
    return make_composite_kernel(g, sub, [](const Node& n) { return native::make_node_kernel(n); });
  };
  return s;
}

// A synthetic fitness that rewards mixing: a native kernel costs its op-level cost
// (1 ms), a graphy region of m nodes 0.3 + 0.5 m, a seqy region 0.2 + 0.45 m. Neither
// backend takes the whole chain, so the optimum uses both.
double mix_ms(const Placement& p) {
  double total = 0;
  for (const PlacedKernel& k : p.kernels) {
    const double m = static_cast<double>(k.nodes.size());
    total += k.backend == "graphy" ? 0.3 + 0.5 * m : k.backend == "seqy" ? 0.2 + 0.45 * m : k.cost.median_ms;
  }
  return total;
}
Cost mix_fitness(const Placement& p) { return Cost::of_ms(mix_ms(p)); }

// Every genome of the genes, in mixed-radix order.
std::vector<Genome> all_genomes(const std::vector<Gene>& genes) {
  std::vector<Genome> out;
  Genome g(genes.size(), 0);
  for (;;) {
    out.push_back(g);
    size_t i = 0;
    while (i < g.size() && static_cast<size_t>(++g[i]) > genes[i].choices.size()) g[i++] = 0;
    if (i == g.size()) return out;
  }
}

bool uses(const Placement& p, const std::string& backend) {
  return std::any_of(p.kernels.begin(), p.kernels.end(),
                     [&](const PlacedKernel& k) { return k.backend == backend; });
}

// Every node covered once, every kernel convex and on a backend supporting its nodes,
// the kernel order valid (placement_from_json checks coverage, backends and order).
void expect_valid(const Graph& g, const Placement& p, const std::vector<const BackendSpec*>& backends) {
  EXPECT_NO_THROW(placement_from_json(placement_to_json(p, g), g, backends));
  ConvexityChecker convex(g);
  std::vector<int> covered(g.nodes.size(), 0);
  for (const PlacedKernel& k : p.kernels) {
    IndexSet set(g.nodes.size());
    for (NodeId n : k.nodes) {
      ++covered[static_cast<size_t>(n)];
      set.add(static_cast<size_t>(n));
    }
    EXPECT_TRUE(convex.is_convex(set)) << k.backend << " " << k.label;
    for (const BackendSpec* b : backends) {
      if (b->name != k.backend || b->kind != BackendKind::GraphLevel) continue;
      for (NodeId n : k.nodes) EXPECT_TRUE(b->supports_node(g, g.node(n))) << k.backend << " " << n;
    }
  }
  for (int c : covered) EXPECT_EQ(c, 1);
}

TEST(Refine, GenesOfferEveryGraphLevelBackendAllowedToTakeTheKernel) {
  Graph g = mixed_chain();
  const std::vector<std::string> ops = {"Relu", "Neg", "Exp", "Relu", "Neg", "Sigmoid", "Relu", "Neg", "Add"};
  ASSERT_EQ(g.num_nodes(), 9);
  for (NodeId n = 0; n < 9; ++n) ASSERT_EQ(g.node(n).op_type, ops[static_cast<size_t>(n)]);
  BackendSpec a = graphy(), b = seqy();
  Placement seed = one_kernel_per_node(g);
  seed.kernels[0].backend = "graphy";  // a Relu already on graphy: may move to seqy only
  seed.kernels[1].backend = "graphy";  // a Neg on graphy: nothing else takes it, not a gene
  seed.pins.forbidden[3] = {"seqy"};   // this Relu may go to graphy only
  seed.pins.pinned[6] = "native";      // this one stays
  seed.pins.pinned[0] = "graphy";      // ... and this one after all stays on graphy
  std::vector<Gene> genes = refine_genes(g, seed, {&a, &b});
  std::map<size_t, std::vector<std::string>> want = {{2, {"seqy"}}, {3, {"graphy"}}, {4, {"graphy"}},
                                                     {5, {"seqy"}}, {7, {"graphy"}}, {8, {"graphy"}}};
  std::map<size_t, std::vector<std::string>> got;
  for (const Gene& gene : genes) got[gene.kernel] = gene.choices;
  EXPECT_EQ(got, want);
  seed.pins.pinned.erase(0);
  genes = refine_genes(g, seed, {&a, &b});
  ASSERT_EQ(genes.front().kernel, 0u);
  EXPECT_EQ(genes.front().choices, std::vector<std::string>{"seqy"});
  EXPECT_EQ(refine_genes(g, seed, {&a}).front().kernel, 3u);  // one backend: the graphy kernels are no genes
  // Unpinned, a Relu offers both, in the order the backends were given.
  genes = refine_genes(g, one_kernel_per_node(g), {&b, &a});
  ASSERT_EQ(genes.size(), 9u);
  EXPECT_EQ(genes[0].choices, (std::vector<std::string>{"seqy", "graphy"}));
  EXPECT_EQ(chosen_backend(genes[0], 0), "");
  EXPECT_EQ(chosen_backend(genes[0], 2), "graphy");
  // All 0 is the op-level placement, kernels on graph-level backends included.
  Placement zero = decode_genome(g, seed, refine_genes(g, seed, {&a, &b}),
                                 Genome(refine_genes(g, seed, {&a, &b}).size(), 0));
  ASSERT_EQ(zero.kernels.size(), seed.kernels.size());
  for (size_t k = 0; k < seed.kernels.size(); ++k) {
    EXPECT_EQ(zero.kernels[k].nodes, seed.kernels[k].nodes);
    EXPECT_EQ(zero.kernels[k].backend, seed.kernels[k].backend);
  }
}

TEST(Refine, SeedsAreTheOpLevelPlacementAndEverythingToEachBackend) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec a = graphy(), b = seqy(), none = graphy();
  none.name = "takes-nothing";
  none.supports_node = [](const Graph&, const Node& n) { return n.op_type == "Conv"; };
  std::vector<const BackendSpec*> graph_level = {&a, &none, &b};
  std::vector<Gene> genes = refine_genes(g, seed, graph_level);
  std::vector<Genome> seeds = refine_seeds(genes, graph_level);
  ASSERT_EQ(seeds.size(), 3u);  // all 0, all to graphy, all to seqy; takes-nothing adds none
  EXPECT_EQ(seeds[0], Genome(genes.size(), 0));
  for (size_t s = 1; s < 3; ++s) {
    const std::string& backend = s == 1 ? a.name : b.name;
    for (size_t i = 0; i < genes.size(); ++i) {
      bool can =
          std::find(genes[i].choices.begin(), genes[i].choices.end(), backend) != genes[i].choices.end();
      EXPECT_EQ(chosen_backend(genes[i], seeds[s][i]), can ? backend : "") << backend << " gene " << i;
    }
  }
  // The search measures the seeds first, in that order.
  std::vector<Placement> measured;
  FitnessFn recording = [&](const Placement& p) {
    measured.push_back(p);
    return mix_fitness(p);
  };
  RefineOptions options;
  options.max_generations = 1;
  refine_placement(g, seed, graph_level, recording, options);
  ASSERT_GE(measured.size(), 3u);
  for (size_t s = 0; s < 3; ++s)
    EXPECT_EQ(placement_to_json(measured[s], g),
              placement_to_json(decode_genome(g, seed, genes, seeds[s]), g));
  EXPECT_TRUE(uses(measured[1], "graphy") && !uses(measured[1], "seqy"));
  EXPECT_TRUE(uses(measured[2], "seqy") && !uses(measured[2], "graphy"));
}

TEST(Refine, FindsTheOptimumThatMixesBothBackendsDeterministically) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec a = graphy(), b = seqy();
  std::vector<const BackendSpec*> graph_level = {&a, &b};
  std::vector<Gene> genes = refine_genes(g, seed, graph_level);
  ASSERT_EQ(genes.size(), 9u);
  std::vector<Genome> every = all_genomes(genes);
  ASSERT_EQ(every.size(), 27u * 64u);  // three Relus with three alleles, six kernels with two
  double best = 1e9;
  Placement optimum;
  for (const Genome& genome : every) {
    Placement p = decode_genome(g, seed, genes, genome);
    if (mix_ms(p) < best) best = mix_ms(p), optimum = p;
  }
  ASSERT_TRUE(uses(optimum, "graphy") && uses(optimum, "seqy"));  // the fitness rewards mixing
  for (const Genome& s : refine_seeds(genes, graph_level))
    EXPECT_GT(mix_ms(decode_genome(g, seed, genes, s)), best + 0.1);  // no seed is the optimum
  RefineOptions options;
  options.population = 16;
  options.max_generations = 80;
  options.patience = 30;
  RefineResult r = refine_placement(g, seed, graph_level, mix_fitness, options);
  EXPECT_NEAR(r.best_fitness.median_ms, best, 1e-9);
  EXPECT_NEAR(mix_ms(r.best), r.best_fitness.median_ms, 1e-12);
  EXPECT_LT(r.evaluations, static_cast<int>(every.size()));
  EXPECT_GT(r.moved_per_backend["graphy"], 0);
  EXPECT_GT(r.moved_per_backend["seqy"], 0);
  int moved = 0;
  for (uint8_t allele : r.best_genome) moved += allele != 0;
  EXPECT_EQ(r.moved(), moved);
  expect_valid(g, r.best, {&native_backend(), &a, &b});
  RefineResult again = refine_placement(g, seed, graph_level, mix_fitness, options);
  EXPECT_EQ(again.best_genome, r.best_genome);  // deterministic for a seed
  EXPECT_EQ(again.history, r.history);
  EXPECT_EQ(again.evaluations, r.evaluations);
}

// Runs for segment moves cut the genes into about equal runs, where one node's output alone
// crosses when such a cut is near.
TEST(Refine, SegmentRunsCoverTheGenesInOrderAndCutWhereOneOutputCrosses) {
  // Twelve Relus in a chain: every boundary is a single-output cut.
  OnnxTestModel chain(17);
  chain.input("x", {2, 8});
  std::string prev = "x";
  for (int i = 0; i < 12; ++i) {
    const std::string out = "r" + std::to_string(i);
    chain.node("Relu", {prev}, {out});
    prev = out;
  }
  chain.output(prev);
  Graph g = import_model(chain);
  Placement seed = one_kernel_per_node(g);
  BackendSpec gl = graphy();
  std::vector<Gene> genes = refine_genes(g, seed, {&gl});
  ASSERT_EQ(genes.size(), 12u);
  using Runs = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(refine_segments(g, seed, genes, 3), (Runs{{0, 4}, {4, 8}, {8, 12}}));
  EXPECT_EQ(refine_segments(g, seed, genes, 1), (Runs{{0, 12}}));
  EXPECT_EQ(refine_segments(g, seed, genes, 40).size(), 12u);  // at most one run per gene
  EXPECT_TRUE(refine_segments(g, seed, {}, 3).empty());

  // Three blocks y = Relu(Neg(x)) + x: inside a block two values cross, between blocks one.
  OnnxTestModel blocks(17);
  blocks.input("x", {2, 8});
  prev = "x";
  for (int b = 0; b < 3; ++b) {
    const std::string p = "b" + std::to_string(b);
    blocks.node("Neg", {prev}, {p + "n"});
    blocks.node("Relu", {p + "n"}, {p + "r"});
    blocks.node("Add", {p + "r", prev}, {p + "y"});
    prev = p + "y";
  }
  blocks.output(prev);
  Graph h = import_model(blocks);
  Placement per_node = one_kernel_per_node(h);
  std::vector<Gene> block_genes = refine_genes(h, per_node, {&gl});
  ASSERT_EQ(block_genes.size(), 9u);
  // (In the first block the other value is the graph input, which no node produces: a cut
  // there is single-output too.) Targets 3 and 6 are block boundaries. For 4 runs (targets
  // 2.25, 4.5, 6.75, half a run 1.125): 2 inside the first block, 6; no single-output cut is
  // within half a run of 4.5, so that cut falls at the nearest kernel boundary, 4.
  EXPECT_EQ(refine_segments(h, per_node, block_genes, 3), (Runs{{0, 3}, {3, 6}, {6, 9}}));
  EXPECT_EQ(refine_segments(h, per_node, block_genes, 4), (Runs{{0, 2}, {2, 4}, {4, 6}, {6, 9}}));
}

// Every genome decodes to a valid placement; a sample runs and matches the native reference.
TEST(Refine, EveryTwoBackendGenomeDecodesToAValidPlacement) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec a = graphy(), b = seqy();
  std::vector<const BackendSpec*> backends = {&native_backend(), &a, &b};
  std::vector<Gene> genes = refine_genes(g, seed, {&a, &b});
  auto inputs = random_inputs(g, 5);
  Executor reference(g, native::native_steps(g));
  auto want = reference.run(inputs);
  std::vector<Genome> every = all_genomes(genes);
  for (size_t i = 0; i < every.size(); ++i) {
    Placement p = decode_genome(g, seed, genes, every[i]);
    expect_valid(g, p, backends);
    if (i % 97 != 0) continue;
    Executor ex(g, placement_steps(g, p, backends, CompileOptions{}));
    ASSERT_EQ(ex.run(inputs)[0].to_double_vector(), want[0].to_double_vector()) << "genome " << i;
  }
}

TEST(Refine, TwoBackendCancellationKeepsTheBestSoFar) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec a = graphy(), b = seqy();
  struct StopAfter : ProgressObserver {
    int allowed;
    mutable int asked = 0;
    std::vector<double> reported;
    explicit StopAfter(int n) : allowed(n) {}
    void on_progress(const ProgressEvent&) override {}
    void on_best_placement(const Placement& best, double fitness_ms) override {
      EXPECT_NEAR(mix_ms(best), fitness_ms, 1e-12);
      reported.push_back(fitness_ms);
    }
    bool cancel_requested() const override { return ++asked > allowed; }
  } stop(6);
  RefineOptions options;
  options.max_generations = 60;
  options.patience = 60;
  RefineResult full = refine_placement(g, seed, {&a, &b}, mix_fitness, options);
  RefineResult r = refine_placement(g, seed, {&a, &b}, mix_fitness, options, &stop);
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(r.evaluations, full.evaluations);
  EXPECT_LT(r.best_fitness.median_ms,
            r.seed_fitness.median_ms);  // the all-to-X seeds beat the op-level placement
  EXPECT_NEAR(mix_ms(r.best), r.best_fitness.median_ms, 1e-12);
  ASSERT_FALSE(stop.reported.empty());
  EXPECT_EQ(stop.reported.back(), r.best_fitness.median_ms);
  expect_valid(g, r.best, {&native_backend(), &a, &b});
}

// Two genomes that differ only in which backend one gene chose are told apart by the
// in-memory cache (keyed by alleles) and by the cost DB (keyed by the decoded placement).
TEST(Refine, FitnessKeysTellApartTheBackendAGeneChose) {
  Graph g = mixed_chain();
  Placement seed = one_kernel_per_node(g);
  BackendSpec a = graphy(), b = seqy();
  std::vector<Gene> genes = refine_genes(g, seed, {&a, &b});
  ASSERT_EQ(genes[0].choices.size(), 2u);  // a Relu: graphy or seqy
  Genome x(genes.size(), 0), y(genes.size(), 0);
  x[0] = 1;
  y[0] = 2;
  Placement px = decode_genome(g, seed, genes, x), py = decode_genome(g, seed, genes, y);
  const std::string model = model_fingerprint(g);
  EXPECT_NE(placement_fitness_key(px, model, 1).signature, placement_fitness_key(py, model, 1).signature);
  EXPECT_EQ(placement_fitness_key(px, model, 1).signature,
            placement_fitness_key(decode_genome(g, seed, genes, x), model, 1).signature);
  testing::ScopedTempDir dir("collage_refine_keys");
  auto path = dir.file("costs.sqlite");
  std::vector<std::string> measured;
  FitnessFn counting = [&](const Placement& p) {
    measured.push_back(p.kernels.front().backend);
    return Cost::of_ms(p.kernels.front().backend == "graphy" ? 1.0 : 2.0);
  };
  {
    CostDb db(path);
    FitnessFn f = cached_fitness(counting, &db, g, 1);
    EXPECT_EQ(f(px).median_ms, 1.0);
    EXPECT_EQ(f(py).median_ms, 2.0);  // not the graphy entry
    EXPECT_EQ(f(px).median_ms, 1.0);
    EXPECT_EQ(f(py).median_ms, 2.0);
  }
  EXPECT_EQ(measured, (std::vector<std::string>{"graphy", "seqy"}));
}

// Regions of every size that the genome can produce on the CNN samples run on
// XNNPACK's subgraph runtime and agree with the native reference.
TEST(XnnpackGraph, RegionsOnTheSamplesMatchTheNativeReference) {
  testing::ScopedTempDir dir("collage_xnnpack_graph");
  for (const char* name : {"inception_small", "resnet_small", "mobilenet_small", "transformer_small"}) {
    auto path = dir.path() / (std::string(name) + ".onnx");
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
