// Graph-level search (Collage §4.3): an evolutionary refinement of the op-level
// placement. The additive cost model cannot see what a graph-level library gains
// by running a whole region at once, so fitness is a measured end-to-end latency.
//
// Genome: one gene per op-level kernel that at least one graph-level backend can
// take (every node supported by it and allowed by the pins: not pinned elsewhere,
// not forbidden for it). A gene's allele 0 keeps the kernel exactly as the op-level
// search placed it; allele a > 0 moves it to `Gene::choices[a - 1]`, the graph-level
// backends able to take it in the order they were given. A kernel the op-level
// search already put on a graph-level backend X is a gene only when another
// graph-level backend can take it (it may then move between them); X itself is not
// an allele, so all-0 is always the op-level placement and, with one graph-level
// backend, the genome is the one bit per kernel it always was.
//
// Decoding: moved kernels with the same backend that touch are merged into one
// region per backend; a merge that would make a region non-convex or the kernel
// graph cyclic starts a new region instead. Kernels kept (allele 0) stay as they are,
// except that a kept kernel already on a region's backend joins a region it touches
// (under the same rules): "everything to X" then is one region, not one per kernel
// the op-level search happened to give X. All-0 moves nothing and forms no region.
//
// The GA: seeds are the op-level placement (all 0) and, per graph-level backend X,
// "every kernel X can take goes to X"; the rest of the population is random; an
// elitist loop of tournament selection, two-point crossover and mutation (a mutated
// gene takes a different allele, uniformly). Deterministic for a given seed and
// fitness function (and, with one graph-level backend, draws the same numbers as
// the one-bit genome did).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/settings.h"
#include "core/search/placement.h"
#include "core/tuning/cost_db.h"
#include "core/tuning/progress.h"

namespace collage {

// Defaults are kSettings' (core/ir/settings.h), as for the CLI and the explorer.
struct RefineOptions {
  int population = kSettings.refine_population;  // raised to the number of distinct seeds if smaller
  int max_generations = kSettings.refine_generations;
  int patience = kSettings.refine_patience;          // stop after this many generations without improvement
  double time_budget_s = kSettings.refine_budget_s;  // stop after this much wall time
  double mutation_rate = -1;                         // per gene; < 0 means 1 / genome length
  int tournament = kSettings.refine_tournament;
  uint64_t seed = kSettings.refine_seed;
};

// A placement's measured end-to-end latency (median_ms; lower is better), or an invalid Cost
// saying why it has none (a region the library cannot build, a lost worker): such a genome
// ranks below every measured one. Called once per distinct genome.
using FitnessFn = std::function<Cost(const Placement&)>;

// The GA's order: `a` ranks above `b` when it is measured and `b` is not, or both are and
// a is faster. Invalid genomes tie with each other.
bool fitter(const Cost& a, const Cost& b);

// One generation's fitness: the best genome's and the mean over its measured genomes;
// none when no genome of the generation was measured.
struct GenerationFitness {
  std::optional<double> best_ms, mean_ms;
  bool operator==(const GenerationFitness& o) const { return best_ms == o.best_ms && mean_ms == o.mean_ms; }
};

struct Gene {
  size_t kernel = 0;                 // index in the op-level placement
  std::vector<std::string> choices;  // backend of allele a is choices[a - 1]; allele 0 = stay
};

using Genome = std::vector<uint8_t>;  // one allele per gene

// A seed "every kernel X can take goes to X" and the fitness it measured.
struct SeedFitness {
  std::string backend;  // X
  Genome genome;
  Cost fitness;
};

struct RefineResult {
  Placement best;
  Cost best_fitness;  // invalid only when no genome was measured (the seed's then)
  Cost seed_fitness;  // the op-level placement's fitness (all alleles 0)
  Genome best_genome;
  std::vector<Gene> genes;
  int generations = 0;
  int evaluations = 0;
  std::vector<GenerationFitness> history;  // per generation
  bool cancelled = false;                  // stopped by the observer: `best` is the best found until then
  // Op-level kernels the best genome moves, per graph-level backend (none: `best` is the op-level placement).
  std::map<std::string, int> moved_per_backend;
  // The whole-library seeds that were measured, in refine_seeds' order (the final contest
  // measures the close ones again against `best`: one fitness median is a few runs).
  std::vector<SeedFitness> seeds;
  int moved() const;
};

// The genes of an op-level placement, in kernel order (see the header comment).
std::vector<Gene> refine_genes(const Graph& graph, const Placement& op_level,
                               const std::vector<const BackendSpec*>& graph_level);

// Runs for segment moves (a whole run of genes set to one backend; the workflow's segment
// contests, app/workflow/workflow.h): [begin, end) gene ranges covering the genes in order, at most `count`
// of them, about equally many genes each. A cut goes between two op-level kernels where the output of one
// node alone crosses it (between residual blocks, stages) when such a cut is near, else at the nearest kernel
// boundary.
std::vector<std::pair<size_t, size_t>> refine_segments(const Graph& graph, const Placement& op_level,
                                                       const std::vector<Gene>& genes, int count);

// The seeds: all 0, then "every kernel X can take goes to X" for each graph-level
// backend X in order; duplicates dropped (a backend that can take nothing adds none).
std::vector<Genome> refine_seeds(const std::vector<Gene>& genes,
                                 const std::vector<const BackendSpec*>& graph_level);

// The backend a gene's allele puts its kernel on ("" for allele 0: the op-level one stays).
const std::string& chosen_backend(const Gene& gene, uint8_t allele);

// Makes `genome` (measured `fitness`) the result's best: best, best_genome, best_fitness and
// moved_per_backend all follow it.
void adopt_genome(const Graph& graph, const Placement& op_level, RefineResult& result, const Genome& genome,
                  const Cost& fitness);

// The placement a genome stands for.
Placement decode_genome(const Graph& graph, const Placement& op_level, const std::vector<Gene>& genes,
                        const Genome& genome);

// The cost-DB key of a placement's measured fitness: the model and, per kernel, its
// backend, that backend's version and its nodes. It names the decoded placement, not
// the genome, so an entry means the same whatever genome encoding wrote it (the
// one-bit genome's entries included): genomes that differ only in which backend a
// gene chose decode to different kernels' backends and so to different keys.
CostKey placement_fitness_key(const Placement& placement, const std::string& model_fingerprint, int threads);

// Wraps `fitness` with the cost DB: a placement measured once (same model, kernels,
// backends, threads, device) is never measured again, across runs. `db` may be null.
FitnessFn cached_fitness(FitnessFn fitness, CostDb* db, const Graph& graph, int threads);

// Cancellation (observer->cancel_requested()) is checked before every measurement and
// every generation; it ends the search early and returns the best placement so far.
RefineResult refine_placement(const Graph& graph, const Placement& op_level,
                              const std::vector<const BackendSpec*>& graph_level, const FitnessFn& fitness,
                              const RefineOptions& options, ProgressObserver* observer = nullptr);

}  // namespace collage
