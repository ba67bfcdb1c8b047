#include "core/search/refine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <unordered_map>

#include "core/backend_api/kernel_signature.h"
#include "core/ir/graph_analysis.h"
#include "core/ir/subgraph.h"
#include "core/search/search.h"

namespace collage {

namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double uniform(uint64_t& s) { return static_cast<double>(splitmix(s) >> 11) * 0x1.0p-53; }

IndexSet set_of(const Graph& g, const std::vector<NodeId>& nodes) {
  IndexSet s(g.nodes.size());
  for (NodeId n : nodes) s.add(static_cast<size_t>(n));
  return s;
}

bool partition_is_acyclic(const Graph& g, const std::vector<IndexSet>& sets) {
  try {
    execution_order(g, sets);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string ms_text(double ms) {  // "0.743 ms": progress text, not data
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

}  // namespace

bool fitter(const Cost& a, const Cost& b) { return a.valid() && (!b.valid() || a.median_ms < b.median_ms); }

int RefineResult::moved() const {
  int total = 0;
  for (const auto& [backend, count] : moved_per_backend) total += count;
  return total;
}

std::vector<Gene> refine_genes(const Graph& graph, const Placement& op_level,
                               const std::vector<const BackendSpec*>& graph_level) {
  if (graph_level.size() > 254)
    throw Error(ErrorKind::InvalidInput, "refine: more than 254 graph-level backends");
  std::vector<Gene> genes;
  const IndexSet dynamic_nodes = nodes_with_dynamic_shapes(graph);
  for (size_t k = 0; k < op_level.kernels.size(); ++k) {
    const PlacedKernel& kernel = op_level.kernels[k];
    Gene gene;
    gene.kernel = k;
    if (std::any_of(kernel.nodes.begin(), kernel.nodes.end(),
                    [&](NodeId n) { return dynamic_nodes.contains(static_cast<size_t>(n)); }))
      continue;  // shapes decided at run time: no region takes it
    for (const BackendSpec* b : graph_level) {
      if (kernel.backend == b->name || !b->supports_node) continue;
      bool ok = true;
      for (NodeId n : kernel.nodes)
        ok = ok && b->supports_node(graph, graph.node(n)) && op_level.pins.allows(n, b->name);
      if (ok) gene.choices.push_back(b->name);
    }
    if (!gene.choices.empty()) genes.push_back(std::move(gene));
  }
  return genes;
}

std::vector<std::pair<size_t, size_t>> refine_segments(const Graph& graph, const Placement& op_level,
                                                       const std::vector<Gene>& genes, int count) {
  std::vector<std::pair<size_t, size_t>> runs;
  if (genes.empty()) return runs;
  const size_t kernels = op_level.kernels.size();
  // crossing[c]: nodes of kernels before c whose output a kernel from c on reads.
  std::vector<long> kernel_of(graph.nodes.size(), -1);
  for (size_t k = 0; k < kernels; ++k)
    for (NodeId n : op_level.kernels[k].nodes) kernel_of[static_cast<size_t>(n)] = static_cast<long>(k);
  const NodeEdges edges = node_edges(graph);
  std::vector<long> diff(kernels + 2, 0);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (kernel_of[n] < 0) continue;
    long last = kernel_of[n];
    for (NodeId q : edges.succs[n]) last = std::max(last, kernel_of[static_cast<size_t>(q)]);
    if (last > kernel_of[n])
      ++diff[static_cast<size_t>(kernel_of[n]) + 1], --diff[static_cast<size_t>(last) + 1];
  }
  std::vector<long> crossing(kernels + 1, 0);
  for (size_t c = 1; c <= kernels; ++c) crossing[c] = crossing[c - 1] + diff[c];
  // Cut candidates as gene indices: the first gene at or after kernel boundary c.
  std::vector<size_t> single, any;
  for (size_t c = 1, g = 0; c < kernels; ++c) {
    while (g < genes.size() && genes[g].kernel < c) ++g;
    if (g == 0 || g == genes.size()) continue;
    any.push_back(g);
    if (crossing[c] == 1) single.push_back(g);
  }
  std::vector<size_t> cuts;
  for (int j = 1; j < count; ++j) {
    const double target = static_cast<double>(genes.size()) * j / count;
    auto nearest = [&](const std::vector<size_t>& from) -> std::optional<size_t> {
      std::optional<size_t> best;
      for (size_t g : from)
        if (!best ||
            std::abs(static_cast<double>(g) - target) < std::abs(static_cast<double>(*best) - target))
          best = g;
      return best;
    };
    // A single-output cut within half a run of the target, else any kernel boundary.
    std::optional<size_t> cut = nearest(single);
    const double half_run = static_cast<double>(genes.size()) / count / 2;
    if (!cut || std::abs(static_cast<double>(*cut) - target) > half_run) cut = nearest(any);
    if (cut) cuts.push_back(*cut);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  size_t begin = 0;
  for (size_t cut : cuts) runs.push_back({begin, cut}), begin = cut;
  runs.push_back({begin, genes.size()});
  return runs;
}

std::vector<Genome> refine_seeds(const std::vector<Gene>& genes,
                                 const std::vector<const BackendSpec*>& graph_level) {
  std::vector<Genome> seeds = {Genome(genes.size(), 0)};
  for (const BackendSpec* b : graph_level) {
    Genome g(genes.size(), 0);
    for (size_t i = 0; i < genes.size(); ++i) {
      auto it = std::find(genes[i].choices.begin(), genes[i].choices.end(), b->name);
      if (it != genes[i].choices.end()) g[i] = static_cast<uint8_t>(it - genes[i].choices.begin() + 1);
    }
    if (std::find(seeds.begin(), seeds.end(), g) == seeds.end()) seeds.push_back(std::move(g));
  }
  return seeds;
}

const std::string& chosen_backend(const Gene& gene, uint8_t allele) {
  static const std::string stay;
  return allele == 0 ? stay : gene.choices.at(allele - 1u);
}

Placement decode_genome(const Graph& graph, const Placement& op_level, const std::vector<Gene>& genes,
                        const Genome& genome) {
  if (genome.size() != genes.size())
    throw Error(ErrorKind::Internal, "refine: genome of " + std::to_string(genome.size()) + " alleles for " +
                                         std::to_string(genes.size()) + " genes");
  std::vector<const std::string*> moved_to(op_level.kernels.size(), nullptr);  // backend per moved kernel
  for (size_t i = 0; i < genes.size(); ++i)
    if (genome[i]) moved_to[genes[i].kernel] = &chosen_backend(genes[i], genome[i]);
  // Grow regions greedily in execution order: a moved kernel joins a touching region of
  // its backend if the region stays convex and the kernel graph acyclic, else starts one.
  // A kept kernel already on a region's backend joins such a region too (it never starts
  // one, so all-0 is the op-level placement): "everything to X" is then one region rather
  // than one per kernel the op-level search happened to give X. A kept kernel that comes
  // before its region's first moved kernel is joined in a second pass.
  ConvexityChecker convex(graph);
  NodeEdges edges = node_edges(graph);
  std::vector<IndexSet> sets;  // kept kernels placed so far
  std::vector<PlacedKernel> kernels;
  std::vector<IndexSet> regions;
  std::vector<std::string> region_backend;
  std::vector<std::optional<double>> region_cost;  // the op-level costs summed; none if one has none
  // Joins `mine` (kernel `k`, or a kept kernel at `sets[skip]`) into a region of `backend`.
  auto try_join = [&](const IndexSet& mine, const std::string& backend, size_t k, const Cost& cost,
                      size_t skip) {
    for (size_t r = 0; r < regions.size(); ++r) {
      if (region_backend[r] != backend) continue;
      bool touches = false;
      for (size_t n : mine.indices()) {
        for (NodeId p : edges.preds[n]) touches |= regions[r].contains(static_cast<size_t>(p));
        for (NodeId q : edges.succs[n]) touches |= regions[r].contains(static_cast<size_t>(q));
      }
      if (!touches) continue;
      IndexSet joined = regions[r] | mine;
      if (!convex.is_convex(joined)) continue;
      std::vector<IndexSet> trial;
      for (size_t j = 0; j < sets.size(); ++j)
        if (j != skip) trial.push_back(sets[j]);
      for (size_t q = 0; q < regions.size(); ++q) trial.push_back(q == r ? joined : regions[q]);
      for (size_t later = k + 1; later < op_level.kernels.size(); ++later)  // not yet placed: as they are
        trial.push_back(set_of(graph, op_level.kernels[later].nodes));
      if (!partition_is_acyclic(graph, trial)) continue;
      regions[r] = joined;
      if (region_cost[r] && cost.valid())
        *region_cost[r] += cost.median_ms;
      else
        region_cost[r].reset();
      return true;
    }
    return false;
  };
  for (size_t k = 0; k < op_level.kernels.size(); ++k) {
    const PlacedKernel& kernel = op_level.kernels[k];
    IndexSet mine = set_of(graph, kernel.nodes);
    if (moved_to[k]) {
      if (try_join(mine, *moved_to[k], k, kernel.cost, sets.size())) continue;
      regions.push_back(mine);
      region_backend.push_back(*moved_to[k]);
      region_cost.push_back(kernel.cost.valid() ? std::optional<double>(kernel.cost.median_ms)
                                                : std::nullopt);
    } else if (!try_join(mine, kernel.backend, k, kernel.cost, sets.size())) {
      sets.push_back(mine);
      kernels.push_back(kernel);
    }
  }
  for (bool changed = !regions.empty(); changed;) {
    changed = false;
    for (size_t i = 0; i < kernels.size() && !changed; ++i) {
      if (!try_join(sets[i], kernels[i].backend, op_level.kernels.size(), kernels[i].cost, i)) continue;
      sets.erase(sets.begin() + static_cast<std::ptrdiff_t>(i));
      kernels.erase(kernels.begin() + static_cast<std::ptrdiff_t>(i));
      changed = true;
    }
  }
  for (size_t r = 0; r < regions.size(); ++r) {
    // The cost is the op-level estimate; the refined placement is judged by measurement.
    kernels.push_back({{node_ids(regions[r]), region_backend[r], subgraph_label(graph, regions[r])},
                       region_cost[r] ? Cost::of_ms(*region_cost[r]) : PlacedKernel::no_placed_cost()});
    sets.push_back(regions[r]);
  }
  Placement out = op_level;
  out.kernels.clear();
  for (size_t i : execution_order(graph, sets)) out.kernels.push_back(kernels[i]);
  // The kernels regroup the op-level costs, so without every cost the op-level estimate
  // stands, less the epsilon of the kernels merged away.
  std::optional<double> predicted = summed_cost_ms(out.kernels, out.epsilon_ms);
  out.predicted_ms =
      predicted ? *predicted
                : op_level.predicted_ms -
                      out.epsilon_ms * static_cast<double>(op_level.kernels.size() - out.kernels.size());
  return out;
}

CostKey placement_fitness_key(const Placement& placement, const std::string& model_fingerprint, int threads) {
  // Keyed like kernel costs: a canonical text of the whole placement. "r2": timed with no pool
  // awake between turns (CompileOptions::beside_others); earlier fitness and contests are not reused.
  std::string signature = "placement|r2|" + model_fingerprint + "|";
  for (const PlacedKernel& k : placement.kernels) {
    auto version = placement.backend_versions.find(k.backend);
    signature += k.backend + "@" + (version == placement.backend_versions.end() ? "" : version->second) + ":";
    for (NodeId n : k.nodes) signature += std::to_string(n) + ",";
    signature += ";";
  }
  return CostKey{signature, threads, device_fingerprint()};
}

FitnessFn cached_fitness(FitnessFn fitness, CostDb* db, const Graph& graph, int threads) {
  if (!db) return fitness;
  std::string model = model_fingerprint(graph);
  return [fitness = std::move(fitness), db, model, threads](const Placement& p) {
    CostKey key = placement_fitness_key(p, model, threads);
    if (auto hit = db->find(key)) return hit->cost;
    Cost cost = fitness(p);
    if (cost.status == CostStatus::NotMeasured) return cost;  // e.g. cancelled: nothing to keep
    CostRecord record;
    record.key = key;
    record.backend = "placement";
    record.backend_version = "1";
    record.label = "refine genome (" + std::to_string(p.kernels.size()) + " kernels)";
    record.cost = cost;
    record.cost.samples = 1;
    db->put(record);
    return cost;
  };
}

RefineResult refine_placement(const Graph& graph, const Placement& op_level,
                              const std::vector<const BackendSpec*>& graph_level, const FitnessFn& fitness,
                              const RefineOptions& options, ProgressObserver* observer) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  RefineResult r;
  r.genes = refine_genes(graph, op_level, graph_level);
  const size_t n = r.genes.size();
  std::unordered_map<std::string, Cost> cache;  // genome bytes -> fitness: no genome is measured twice
  struct Stop {};                               // unwinds to the generation loop on cancellation
  auto stop_requested = [&] { return observer && observer->cancel_requested(); };
  auto evaluate = [&](const Genome& genome) {
    std::string key(genome.begin(), genome.end());
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    if (!cache.empty() && stop_requested()) throw Stop{};  // the seed is always measured
    Cost f = fitness(decode_genome(graph, op_level, r.genes, genome));
    cache[key] = f;
    ++r.evaluations;
    if (!r.best_genome.empty() && fitter(f, r.best_fitness)) {  // the best so far is kept per evaluation
      r.best_fitness = f;
      r.best_genome = genome;
      if (observer) observer->on_best_placement(decode_genome(graph, op_level, r.genes, genome), f.median_ms);
    }
    if (observer) {
      ProgressEvent e;
      e.stage = ProgressEvent::Stage::RefineEvaluation;
      e.done = e.evaluations = static_cast<size_t>(r.evaluations);
      const Cost& best = r.best_genome.empty() ? f : r.best_fitness;  // the seed is the first best
      if (best.valid()) e.best_ms = best.median_ms;
      e.message = f.valid() ? ms_text(f.median_ms) : "no fitness: " + f.invalid_reason;
      e.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      observer->on_progress(e);
    }
    return f;
  };
  std::vector<Genome> population = refine_seeds(r.genes, graph_level);  // all 0 first
  r.seed_fitness = evaluate(population.front());
  r.best_genome = population.front();
  r.best_fitness = r.seed_fitness;
  if (n == 0) {
    r.best = op_level;
    return r;
  }
  uint64_t rng = options.seed;
  const double mutation = options.mutation_rate >= 0 ? options.mutation_rate : 1.0 / static_cast<double>(n);
  auto alleles = [&](size_t i) { return static_cast<uint64_t>(r.genes[i].choices.size() + 1); };
  const size_t size = std::max(population.size(), static_cast<size_t>(std::max(2, options.population)));
  while (population.size() < size) {
    Genome g(n);
    for (size_t i = 0; i < n; ++i) g[i] = static_cast<uint8_t>(splitmix(rng) % alleles(i));
    population.push_back(g);
  }
  int stale = 0;
  try {
    for (int gen = 0; gen < options.max_generations; ++gen) {
      if (stop_requested()) throw Stop{};
      const Cost best_before = r.best_fitness;
      std::vector<Cost> fit;
      for (const auto& g : population) fit.push_back(evaluate(g));
      size_t best = static_cast<size_t>(std::min_element(fit.begin(), fit.end(), fitter) - fit.begin());
      GenerationFitness generation;  // the mean is over measured genomes
      double sum = 0;
      int measured = 0;
      for (const Cost& f : fit)
        if (f.valid()) sum += f.median_ms, ++measured;
      if (measured) generation.best_ms = fit[best].median_ms, generation.mean_ms = sum / measured;
      r.history.push_back(generation);
      r.generations = gen + 1;
      stale = fitter(r.best_fitness, best_before) ? 0 : stale + 1;
      if (observer) {
        ProgressEvent e;
        e.stage = ProgressEvent::Stage::Refine;
        e.done = static_cast<size_t>(gen + 1);
        e.total = static_cast<size_t>(options.max_generations);
        if (r.best_fitness.valid()) e.best_ms = r.best_fitness.median_ms;
        e.mean_ms = generation.mean_ms;
        e.evaluations = static_cast<size_t>(r.evaluations);
        e.message = "generation " + std::to_string(gen + 1) + ", mean " +
                    (generation.mean_ms ? ms_text(*generation.mean_ms) : "- (no genome measured)") + ", " +
                    std::to_string(r.evaluations) + " evaluations";
        e.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        observer->on_progress(e);
      }
      if (stale >= options.patience ||
          std::chrono::duration<double>(Clock::now() - start).count() > options.time_budget_s)
        break;
      auto pick = [&] {  // tournament selection
        size_t winner = static_cast<size_t>(splitmix(rng) % population.size());
        for (int t = 1; t < options.tournament; ++t) {
          size_t c = static_cast<size_t>(splitmix(rng) % population.size());
          if (fitter(fit[c], fit[winner])) winner = c;
        }
        return population[winner];
      };
      std::vector<Genome> next = {r.best_genome};  // elitism
      while (next.size() < population.size()) {
        Genome a = pick(), b = pick();
        size_t p1 = static_cast<size_t>(splitmix(rng) % (n + 1)),
               p2 = static_cast<size_t>(splitmix(rng) % (n + 1));
        if (p1 > p2) std::swap(p1, p2);
        for (size_t i = p1; i < p2; ++i) a[i] = b[i];  // two-point crossover
        for (size_t i = 0; i < n; ++i) {
          if (uniform(rng) >= mutation) continue;
          const uint64_t m = alleles(i);  // a different allele, uniformly (two alleles: a flip, no draw)
          a[i] = static_cast<uint8_t>(m == 2 ? a[i] ^ 1 : (a[i] + 1 + splitmix(rng) % (m - 1)) % m);
        }
        next.push_back(std::move(a));
      }
      population = std::move(next);
    }
  } catch (const Stop&) {
    r.cancelled = true;
  }
  for (const Genome& seed : refine_seeds(r.genes, graph_level)) {
    auto it = cache.find(std::string(seed.begin(), seed.end()));
    auto gene = std::find_if(seed.begin(), seed.end(), [](uint8_t a) { return a != 0; });
    if (it == cache.end() || gene == seed.end()) continue;  // not measured (cancelled), or all 0
    const size_t i = static_cast<size_t>(gene - seed.begin());
    r.seeds.push_back({chosen_backend(r.genes[i], seed[i]), seed, it->second});
  }
  adopt_genome(graph, op_level, r, r.best_genome, r.best_fitness);
  return r;
}

void adopt_genome(const Graph& graph, const Placement& op_level, RefineResult& result, const Genome& genome,
                  const Cost& fitness) {
  result.best_genome = genome;
  result.best_fitness = fitness;
  result.best = decode_genome(graph, op_level, result.genes, genome);
  result.moved_per_backend.clear();
  for (size_t i = 0; i < genome.size(); ++i)
    if (genome[i]) ++result.moved_per_backend[chosen_backend(result.genes[i], genome[i])];
}

}  // namespace collage
