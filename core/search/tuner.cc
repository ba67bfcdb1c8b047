#include "core/search/tuner.h"

#include <chrono>

#include "core/backend_api/kernel_signature.h"
#include "core/ir/random_inputs.h"

namespace collage {

TuneResult tune(const Graph& graph, const std::vector<const BackendSpec*>& backends,
                const NodeEvaluator& evaluator, const TuneOptions& options, CostDb* db,
                ProgressObserver* observer) {
  TuneResult r;
  // Thread settings such as OpenMP's are per calling thread: apply them here, where measuring happens.
  apply_threads(backends, options.measure.threads);
  r.candidates = enumerate_candidates(graph, backends);
  // Fail fast, before measuring, on pins no candidate could ever satisfy.
  for (const auto& [node, backend] : options.pins.pinned) {
    bool offered = false;
    for (const Candidate& c : r.candidates)
      offered |= c.backend == backend && c.nodes.contains(static_cast<size_t>(node));
    if (!offered)
      throw Error(ErrorKind::InvalidInput, "cannot place " + graph.node(node).describe() +
                                               ": it is pinned to '" + backend +
                                               "', which offers no kernel for it");
  }
  r.inputs = random_inputs(graph, options.input_seed);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<double> node_ms;
  Measurer measurer(graph, reference_values(graph, r.inputs, evaluator, &node_ms), db, options.measure);
  measurer.set_node_ms(std::move(node_ms));
  if (options.shared_worker) measurer.share_worker(options.shared_worker, options.shared_bucket);
  if (options.skip) {
    std::vector<Candidate> kept;
    std::vector<size_t> kept_at;
    std::vector<std::string> why(r.candidates.size());
    for (size_t i = 0; i < r.candidates.size(); ++i) {
      why[i] = options.skip(r.candidates[i]);
      if (why[i].empty()) {
        kept.push_back(r.candidates[i]);
        kept_at.push_back(i);
      }
    }
    std::vector<MeasuredCandidate> measured = measurer.measure(kept, backends, observer);
    r.costs.resize(r.candidates.size());
    for (size_t i = 0; i < r.candidates.size(); ++i)
      if (!why[i].empty()) {
        r.costs[i].cost = Cost::invalid(why[i], CostStatus::NotMeasured);
        ++r.skipped;
      }
    for (size_t k = 0; k < kept.size(); ++k) r.costs[kept_at[k]] = std::move(measured[k]);
  } else {
    r.costs = measurer.measure(r.candidates, backends, observer);
  }
  r.workers_started = measurer.workers_started();
  r.measure_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<Cost> cost;
  for (const MeasuredCandidate& m : r.costs) {
    r.from_cache += m.from_cache;
    r.invalid += !m.cost.valid();
    cost.push_back(m.cost);
  }
  r.measured_now = r.costs.size() - r.from_cache - r.skipped;
  SearchOptions sopts = options.search;
  if (sopts.epsilon_ms < 0) sopts.epsilon_ms = measure_dispatch_overhead_ms();
  Placement& p = r.placement;
  p.model_fingerprint = model_fingerprint(graph);
  for (const BackendSpec* b : backends) p.backend_versions[b->name] = b->version;
  p.threads = options.measure.threads;
  p.device = device_fingerprint();
  p.epsilon_ms = sopts.epsilon_ms;
  search_again(graph, options.pins, r, observer);
  return r;
}

void search_again(const Graph& graph, const Pins& pins, TuneResult& r, ProgressObserver* observer) {
  std::vector<Cost> cost;
  for (const MeasuredCandidate& m : r.costs) cost.push_back(m.cost);
  SearchOptions sopts;
  sopts.epsilon_ms = r.placement.epsilon_ms;
  r.search = search_placement(graph, r.candidates, cost, pins, sopts, observer);
  Placement& p = r.placement;
  p.predicted_ms = r.search.predicted_ms;
  p.pins = pins;
  p.kernels.clear();
  for (size_t k : r.search.kernels)
    p.kernels.push_back(
        {r.candidates[k].group(), Cost::of_ms(cost[k].median_ms)});  // the search picks valid costs only
}

}  // namespace collage
