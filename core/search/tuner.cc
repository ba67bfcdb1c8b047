#include "core/search/tuner.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "core/backend_api/kernel_signature.h"
#include "core/ir/random_inputs.h"

namespace collage {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string describe(const Candidate& c) { return c.label + " (" + c.backend + ")"; }

// Measures the close contests of r's placement again, side by side (close_contests.h), and
// searches again on the new costs; a second pass looks at the contests those costs opened.
// Only contests with a member measured by this tune: a cost from the DB was measured, and its
// contests settled, by the tune that put it there.
// `listed[i]`: candidate i's index in the list the observer was given (TuneOptions::skip leaves
// some out of it), npos for one left out.
void settle_close_contests(const Graph& graph, const std::vector<const BackendSpec*>& backends,
                           const TuneOptions& options, Measurer& measurer, const std::vector<size_t>& listed,
                           TuneResult& r, ProgressObserver* observer) {
  auto t0 = std::chrono::steady_clock::now();
  std::set<std::string> fresh, remeasured;
  for (const MeasuredCandidate& m : r.costs)
    if (!m.from_cache && m.cost.status != CostStatus::NotMeasured) fresh.insert(m.signature);
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<Cost> cost;
    std::vector<std::string> signature;
    for (const MeasuredCandidate& m : r.costs) {
      cost.push_back(m.cost);
      signature.push_back(m.signature);
    }
    SearchOptions sopts;
    sopts.epsilon_ms = r.placement.epsilon_ms;
    std::vector<Contest> contests = find_close_contests(graph, r.candidates, cost, signature, options.pins,
                                                        sopts, r.search, options.contests);
    std::erase_if(contests, [&](const Contest& c) {
      bool any_fresh = false, all_done = true;
      for (size_t m : c.members) {
        any_fresh |= fresh.count(signature[m]) > 0;
        all_done &= remeasured.count(signature[m]) > 0;
      }
      return !any_fresh || all_done;
    });
    if (contests.empty()) break;
    size_t first = r.contests.size();
    for (size_t ci = 0; ci < contests.size(); ++ci) {
      const Contest& contest = contests[ci];
      std::vector<Candidate> rivals;
      std::vector<std::string> rival_signatures;
      SettledContest settled;
      settled.members = contest.members;
      std::string message = "close contest: " + describe(r.candidates[contest.members[0]]) + " vs";
      for (size_t m : contest.members) {
        rivals.push_back(r.candidates[m]);
        rival_signatures.push_back(signature[m]);
        settled.before_ms.push_back(cost[m].median_ms);
        if (m != contest.members[0]) message += " " + describe(r.candidates[m]);
      }
      if (observer) {
        ProgressEvent e;
        e.stage = ProgressEvent::Stage::Measure;
        e.done = ci;
        e.total = contests.size();
        e.message = message;
        e.elapsed_ms = ms_since(t0);
        observer->on_progress(e);
      }
      std::vector<Cost> after =
          measurer.measure_alternating(rivals, rival_signatures, backends, options.contests.rounds, observer);
      for (size_t j = 0; j < contest.members.size(); ++j) {
        const std::string& sig = signature[contest.members[j]];
        remeasured.insert(sig);
        settled.after_ms.push_back(after[j].valid() ? after[j].median_ms : -1);
        for (size_t i = 0; i < r.costs.size(); ++i)
          if (r.costs[i].signature == sig) {
            r.costs[i].cost = after[j];
            r.costs[i].remeasured = true;
            if (observer && listed[i] != std::string::npos) observer->on_measured(listed[i], r.costs[i]);
          }
      }
      r.contests.push_back(std::move(settled));
    }
    search_again(graph, options.pins, r, observer);
    std::set<std::string> placed;
    for (size_t k : r.search.kernels) placed.insert(r.costs[k].signature);
    for (size_t ci = first; ci < r.contests.size(); ++ci) {
      SettledContest& c = r.contests[ci];
      c.kept = placed.count(signature[c.members[0]]) > 0;
      c.rivals_placed = !c.kept && std::all_of(c.members.begin() + 1, c.members.end(),
                                               [&](size_t m) { return placed.count(signature[m]) > 0; });
    }
  }
  r.contest_ms = ms_since(t0);
}

// Each body of each control-flow node, tuned as a graph of its own (its nested bodies with it).
// A body that cannot be tuned (its values cannot be computed on random inputs, say) keeps
// running node by node natively; `notes` says why.
void tune_bodies(const Graph& graph, const std::vector<const BackendSpec*>& backends,
                 const NodeEvaluator& evaluator, const TuneOptions& options, CostDb* db, TuneResult& r,
                 ProgressObserver* observer) {
  TuneOptions body_options = options;
  body_options.pins = Pins{};
  body_options.shared_worker = nullptr;
  for (const Node& n : graph.nodes)
    for (const auto& [key, a] : n.attrs) {
      if (a.kind != AttrKind::Graph || a.g->nodes.empty()) continue;
      const std::string what = "body '" + key + "' of " + n.describe();
      std::string unknown;
      for (ValueId in : a.g->inputs)
        if (a.g->value(in).kind != ValueKind::Tensor || !a.g->value(in).shape_known)
          unknown = a.g->value(in).name;
      if (!unknown.empty()) {  // its values are only known as it runs: nothing to measure them on
        r.notes.push_back(what + " runs node by node natively: the shape of its input '" + unknown +
                          "' is decided as the model runs");
        continue;
      }
      if (observer) {
        ProgressEvent e;
        e.stage = ProgressEvent::Stage::Measure;
        e.message = "tuning " + what + " (" + std::to_string(a.g->nodes.size()) + " nodes)";
        observer->on_progress(e);
      }
      try {
        TuneResult body = tune(*a.g, backends, evaluator, body_options, db, nullptr);
        r.measured_now += body.measured_now;
        r.from_cache += body.from_cache;
        r.measure_ms += body.measure_ms;
        for (std::string& note : body.notes) r.notes.push_back(std::move(note));
        r.placement.bodies.push_back({n.name, key, std::move(body.placement)});
      } catch (const Error& e) {
        r.notes.push_back(what + " runs node by node natively: " + e.what());
      }
    }
}

}  // namespace

TuneResult tune(const Graph& graph, const std::vector<const BackendSpec*>& offered_backends,
                const NodeEvaluator& evaluator, const TuneOptions& options, CostDb* db,
                ProgressObserver* observer) {
  TuneResult r;
  const std::vector<const BackendSpec*> backends =
      backends_for_threads(offered_backends, options.measure.threads);
  // Thread settings such as OpenMP's are per calling thread: apply them here, where measuring happens.
  apply_threads(backends, options.measure.threads);
  r.candidates = enumerate_candidates(graph, backends);
  // Fail fast, before measuring, on pins no candidate could ever satisfy.
  for (const auto& [node, backend] : options.pins.pinned) {
    bool offered = false;
    for (const Candidate& c : r.candidates)
      offered |= c.backend == backend && c.nodes.contains(static_cast<size_t>(node));
    if (offered) continue;
    std::string which = "offers no kernel for it";
    for (const BackendSpec* b : offered_backends)
      if (b->name == backend && options.measure.threads < b->min_threads)
        which = "takes part only at " + std::to_string(b->min_threads) + " threads or more (--threads " +
                std::to_string(options.measure.threads) + ")";
    throw Error(ErrorKind::InvalidInput, "cannot place " + graph.node(node).describe() +
                                             ": it is pinned to '" + backend + "', which " + which);
  }
  r.inputs = random_inputs(graph, options.input_seed);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<double> node_ms;
  Measurer measurer(graph, reference_values(graph, r.inputs, evaluator, &node_ms), db, options.measure);
  measurer.set_node_ms(std::move(node_ms));
  if (options.shared_worker) measurer.share_worker(options.shared_worker, options.shared_bucket);
  std::vector<size_t> listed(r.candidates.size());
  for (size_t i = 0; i < listed.size(); ++i) listed[i] = i;
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
    for (size_t i = 0; i < r.candidates.size(); ++i) listed[i] = std::string::npos;
    for (size_t k = 0; k < kept.size(); ++k) {
      r.costs[kept_at[k]] = std::move(measured[k]);
      listed[kept_at[k]] = k;
    }
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
  if (!options.measure.cached_only && options.measure.remote_queue.empty()) {
    settle_close_contests(graph, backends, options, measurer, listed, r, observer);
    r.measure_ms += r.contest_ms;
  }
  tune_bodies(graph, backends, evaluator, options, db, r, observer);
  return r;
}

namespace {

// `p` holds what `found` chose among `candidates` (the search picks valid costs only).
void take_search(Placement& p, const SearchResult& found, const std::vector<Candidate>& candidates,
                 const std::vector<Cost>& cost) {
  p.predicted_ms = found.predicted_ms;
  p.kernels.clear();
  for (size_t k : found.kernels) p.kernels.push_back({candidates[k].group(), Cost::of_ms(cost[k].median_ms)});
}

}  // namespace

void search_again(const Graph& graph, const Pins& pins, TuneResult& r, ProgressObserver* observer) {
  std::vector<Cost> cost;
  for (const MeasuredCandidate& m : r.costs) cost.push_back(m.cost);
  SearchOptions sopts;
  sopts.epsilon_ms = r.placement.epsilon_ms;
  r.search = search_placement(graph, r.candidates, cost, pins, sopts, observer);
  r.placement.pins = pins;
  take_search(r.placement, r.search, r.candidates, cost);
}

std::optional<Placement> library_placement(const Graph& graph, const TuneResult& r, const Placement& start,
                                           const std::string& backend) {
  std::vector<Cost> cost;
  bool any = false;
  for (size_t i = 0; i < r.costs.size(); ++i) {
    const std::string& b = r.candidates[i].backend;
    if (b == backend) any = any || r.costs[i].cost.valid();
    cost.push_back(b == backend || b == "native" ? r.costs[i].cost : Cost::invalid("not this library"));
  }
  if (!any) return std::nullopt;
  SearchOptions sopts;
  sopts.epsilon_ms = start.epsilon_ms;
  SearchResult found;
  try {
    found = search_placement(graph, r.candidates, cost, start.pins, sopts);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::InvalidInput) throw;
    return std::nullopt;
  }
  Placement p = start;
  take_search(p, found, r.candidates, cost);
  return p;
}

}  // namespace collage
