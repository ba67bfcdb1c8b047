// Graph-level search (Collage §4.3): an evolutionary refinement of the op-level
// placement. The additive cost model cannot see what a graph-level library gains
// by running a whole region at once, so fitness is a measured end-to-end latency.
//
// Genome: one bit per op-level kernel that a graph-level backend can take (1 =
// offload). Offloaded kernels that touch are merged into one region per backend;
// a merge that would make a region non-convex or the kernel graph cyclic starts a
// new region instead. Deterministic for a given seed and fitness function.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "core/cost_db.h"
#include "core/placement.h"
#include "core/progress.h"

namespace collage {

struct RefineOptions {
  int population = 16;
  int max_generations = 40;
  int patience = 8;            // stop after this many generations without improvement
  double time_budget_s = 600;  // stop after this much wall time
  double mutation_rate = -1;   // per bit; < 0 means 1 / genome length
  int tournament = 3;
  uint64_t seed = 1;
};

// Lower is better (ms). Called once per distinct genome.
using FitnessFn = std::function<double(const Placement&)>;

struct RefineResult {
  Placement best;
  double best_fitness = 0;
  double seed_fitness = 0;  // the op-level placement's fitness (all bits 0)
  std::vector<uint8_t> best_genome;
  std::vector<size_t> genes;  // kernel index (in the op-level placement) per bit
  int generations = 0;
  int evaluations = 0;
  std::vector<std::pair<double, double>> history;  // best, mean fitness per generation
  bool cancelled = false;  // stopped by the observer: `best` is the best found until then
};

// The placement a genome stands for.
Placement decode_genome(const Graph& graph, const Placement& op_level, const std::vector<size_t>& genes,
                        const std::vector<std::string>& gene_backend, const std::vector<uint8_t>& genome);

// Kernels that may be offloaded: every node supported by a graph-level backend,
// not already on it, not pinned elsewhere. Returns kernel indices and the backend per gene.
std::vector<size_t> offloadable_kernels(const Graph& graph, const Placement& op_level,
                                        const std::vector<const BackendSpec*>& graph_level,
                                        std::vector<std::string>& gene_backend);

// Wraps `fitness` with the cost DB: a placement measured once (same model, kernels,
// backends, threads, device) is never measured again, across runs. `db` may be null.
FitnessFn cached_fitness(FitnessFn fitness, CostDb* db, const Graph& graph, int threads);

// Cancellation (observer->cancel_requested()) is checked before every measurement and
// every generation; it ends the search early and returns the best placement so far.
RefineResult refine_placement(const Graph& graph, const Placement& op_level,
                              const std::vector<const BackendSpec*>& graph_level, const FitnessFn& fitness,
                              const RefineOptions& options, ProgressObserver* observer = nullptr);

}  // namespace collage
