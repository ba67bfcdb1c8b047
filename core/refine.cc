#include "core/refine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "core/kernel_signature.h"
#include "core/subgraph.h"

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

std::vector<size_t> offloadable_kernels(const Graph& graph, const Placement& op_level,
                                        const std::vector<const BackendSpec*>& graph_level,
                                        std::vector<std::string>& gene_backend) {
  std::vector<size_t> genes;
  gene_backend.clear();
  for (size_t k = 0; k < op_level.kernels.size(); ++k) {
    const PlacedKernel& kernel = op_level.kernels[k];
    for (const BackendSpec* b : graph_level) {
      if (kernel.backend == b->name || !b->supports_node) continue;
      bool ok = true;
      for (NodeId n : kernel.nodes)
        ok &= b->supports_node(graph, graph.node(n)) && op_level.pins.allows(n, b->name);
      if (!ok) continue;
      genes.push_back(k);
      gene_backend.push_back(b->name);
      break;
    }
  }
  return genes;
}

Placement decode_genome(const Graph& graph, const Placement& op_level, const std::vector<size_t>& genes,
                        const std::vector<std::string>& gene_backend, const std::vector<uint8_t>& genome) {
  std::vector<int> offloaded_to(op_level.kernels.size(), -1);  // gene index per kernel
  for (size_t i = 0; i < genes.size(); ++i)
    if (genome[i]) offloaded_to[genes[i]] = static_cast<int>(i);
  std::vector<IndexSet> sets;
  std::vector<PlacedKernel> kernels;
  for (size_t k = 0; k < op_level.kernels.size(); ++k)
    if (offloaded_to[k] < 0) {
      sets.push_back(set_of(graph, op_level.kernels[k].nodes));
      kernels.push_back(op_level.kernels[k]);
    }
  // Grow regions greedily in execution order: join a touching region of the same
  // backend if it stays convex and the kernel graph stays acyclic.
  ConvexityChecker convex(graph);
  NodeEdges edges = node_edges(graph);
  std::vector<IndexSet> regions;
  std::vector<std::string> region_backend;
  std::vector<double> region_cost;
  for (size_t k = 0; k < op_level.kernels.size(); ++k) {
    if (offloaded_to[k] < 0) continue;
    const std::string& backend = gene_backend[static_cast<size_t>(offloaded_to[k])];
    IndexSet mine = set_of(graph, op_level.kernels[k].nodes);
    bool merged = false;
    for (size_t r = 0; r < regions.size() && !merged; ++r) {
      if (region_backend[r] != backend) continue;
      bool touches = false;
      for (size_t n : mine.indices()) {
        for (NodeId p : edges.preds[n]) touches |= regions[r].contains(static_cast<size_t>(p));
        for (NodeId s : edges.succs[n]) touches |= regions[r].contains(static_cast<size_t>(s));
      }
      IndexSet joined = regions[r] | mine;
      if (!touches || !convex.is_convex(joined)) continue;
      std::vector<IndexSet> trial = sets;
      for (size_t q = 0; q < regions.size(); ++q) trial.push_back(q == r ? joined : regions[q]);
      for (size_t later = k + 1; later < op_level.kernels.size();
           ++later)  // not yet placed: count as they are
        if (offloaded_to[later] >= 0) trial.push_back(set_of(graph, op_level.kernels[later].nodes));
      if (!partition_is_acyclic(graph, trial)) continue;
      regions[r] = joined;
      region_cost[r] += op_level.kernels[k].cost_ms;
      merged = true;
    }
    if (!merged) {
      regions.push_back(mine);
      region_backend.push_back(backend);
      region_cost.push_back(op_level.kernels[k].cost_ms);
    }
  }
  for (size_t r = 0; r < regions.size(); ++r) {
    PlacedKernel pk;
    for (size_t n : regions[r].indices()) pk.nodes.push_back(static_cast<NodeId>(n));
    pk.backend = region_backend[r];
    pk.label = subgraph_label(graph, regions[r]);
    pk.cost_ms = region_cost[r];  // op-level estimate; the refined placement is judged by measurement
    sets.push_back(regions[r]);
    kernels.push_back(std::move(pk));
  }
  Placement out = op_level;
  out.kernels.clear();
  for (size_t i : execution_order(graph, sets)) out.kernels.push_back(kernels[i]);
  out.predicted_ms = 0;
  for (const PlacedKernel& k : out.kernels) out.predicted_ms += k.cost_ms + out.epsilon_ms;
  return out;
}

FitnessFn cached_fitness(FitnessFn fitness, CostDb* db, const Graph& graph, int threads) {
  if (!db) return fitness;
  std::string model = model_fingerprint(graph);
  return [fitness = std::move(fitness), db, model, threads](const Placement& p) {
    // Keyed like kernel costs: a canonical text of the whole placement.
    std::string signature = "placement|" + model + "|";
    for (const PlacedKernel& k : p.kernels) {
      auto version = p.backend_versions.find(k.backend);
      signature += k.backend + "@" + (version == p.backend_versions.end() ? "" : version->second) + ":";
      for (NodeId n : k.nodes) signature += std::to_string(n) + ",";
      signature += ";";
    }
    CostKey key{signature, threads, device_fingerprint()};
    if (auto hit = db->find(key))
      return hit->cost.valid ? hit->cost.median_ms : std::numeric_limits<double>::infinity();
    double ms = fitness(p);
    CostRecord record;
    record.key = key;
    record.backend = "placement";
    record.backend_version = "1";
    record.label = "refine genome (" + std::to_string(p.kernels.size()) + " kernels)";
    record.cost.valid = std::isfinite(ms);
    record.cost.reason = record.cost.valid ? "" : "a region could not be built";
    record.cost.median_ms = std::isfinite(ms) ? ms : 0;
    record.cost.samples = 1;
    db->put(record);
    return ms;
  };
}

RefineResult refine_placement(const Graph& graph, const Placement& op_level,
                              const std::vector<const BackendSpec*>& graph_level, const FitnessFn& fitness,
                              const RefineOptions& options, ProgressObserver* observer) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  RefineResult r;
  std::vector<std::string> gene_backend;
  r.genes = offloadable_kernels(graph, op_level, graph_level, gene_backend);
  const size_t n = r.genes.size();
  std::unordered_map<std::string, double> cache;  // genome bytes -> fitness: no genome is measured twice
  struct Stop {};                                 // unwinds to the generation loop on cancellation
  auto stop_requested = [&] { return observer && observer->cancel_requested(); };
  auto evaluate = [&](const std::vector<uint8_t>& genome) {
    std::string key(genome.begin(), genome.end());
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    if (!cache.empty() && stop_requested()) throw Stop{};  // the seed is always measured
    double f = fitness(decode_genome(graph, op_level, r.genes, gene_backend, genome));
    cache[key] = f;
    ++r.evaluations;
    if (!r.best_genome.empty() && f < r.best_fitness) {  // the best so far is kept per evaluation
      r.best_fitness = f;
      r.best_genome = genome;
      if (observer)
        observer->on_best_placement(decode_genome(graph, op_level, r.genes, gene_backend, genome), f);
    }
    if (observer) {
      ProgressEvent e;
      e.stage = ProgressEvent::Stage::RefineEvaluation;
      e.done = e.evaluations = static_cast<size_t>(r.evaluations);
      e.best_ms = r.best_genome.empty() ? f : r.best_fitness;  // the seed is the first best
      e.message = ms_text(f);
      e.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      observer->on_progress(e);
    }
    return f;
  };
  std::vector<uint8_t> zeros(n, 0), ones(n, 1);
  r.seed_fitness = evaluate(zeros);
  r.best_genome = zeros;
  r.best_fitness = r.seed_fitness;
  if (n == 0) {
    r.best = op_level;
    return r;
  }
  uint64_t rng = options.seed;
  const double mutation = options.mutation_rate >= 0 ? options.mutation_rate : 1.0 / static_cast<double>(n);
  std::vector<std::vector<uint8_t>> population = {zeros, ones};
  while (static_cast<int>(population.size()) < std::max(2, options.population)) {
    std::vector<uint8_t> g(n);
    for (auto& bit : g) bit = splitmix(rng) & 1;
    population.push_back(g);
  }
  int stale = 0;
  try {
    for (int gen = 0; gen < options.max_generations; ++gen) {
      if (stop_requested()) throw Stop{};
      const double best_before = r.best_fitness;
      std::vector<double> fit;
      for (const auto& g : population) fit.push_back(evaluate(g));
      size_t best = static_cast<size_t>(std::min_element(fit.begin(), fit.end()) - fit.begin());
      double sum = 0;  // mean over buildable genomes (unbuildable ones score +inf)
      int finite = 0;
      for (double f : fit)
        if (std::isfinite(f)) sum += f, ++finite;
      double mean = finite ? sum / finite : fit[best];
      r.history.emplace_back(fit[best], mean);
      r.generations = gen + 1;
      stale = r.best_fitness < best_before ? 0 : stale + 1;
      if (observer) {
        ProgressEvent e;
        e.stage = ProgressEvent::Stage::Refine;
        e.done = static_cast<size_t>(gen + 1);
        e.total = static_cast<size_t>(options.max_generations);
        e.best_ms = r.best_fitness;
        e.mean_ms = mean;
        e.evaluations = static_cast<size_t>(r.evaluations);
        e.message = "generation " + std::to_string(gen + 1) + ", mean " + ms_text(mean) + ", " +
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
          if (fit[c] < fit[winner]) winner = c;
        }
        return population[winner];
      };
      std::vector<std::vector<uint8_t>> next = {r.best_genome};  // elitism
      while (next.size() < population.size()) {
        std::vector<uint8_t> a = pick(), b = pick();
        size_t p1 = static_cast<size_t>(splitmix(rng) % (n + 1)),
               p2 = static_cast<size_t>(splitmix(rng) % (n + 1));
        if (p1 > p2) std::swap(p1, p2);
        for (size_t i = p1; i < p2; ++i) a[i] = b[i];  // two-point crossover
        for (auto& bit : a)
          if (uniform(rng) < mutation) bit ^= 1;
        next.push_back(std::move(a));
      }
      population = std::move(next);
    }
  } catch (const Stop&) {
    r.cancelled = true;
  }
  r.best = decode_genome(graph, op_level, r.genes, gene_backend, r.best_genome);
  return r;
}

}  // namespace collage
