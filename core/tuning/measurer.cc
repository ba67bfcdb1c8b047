#include "core/tuning/measurer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <new>

#include "core/backend_api/kernel_signature.h"
#include "core/ir/statistics.h"
#include "core/tuning/host_lock.h"

namespace collage {

namespace {

using Clock = std::chrono::steady_clock;

// Pushes everything else out of the caches: one read per line of a buffer 1.5x the last-level
// cache (its victims are what L3 keeps; at most kSettings.cache_flush_cap_bytes), then one per
// line of `keep` (the kernel's runtime inputs, which a run has just produced and so finds in
// cache). Returns a sum so the reads stay.
float evict_all_but(const std::vector<const Tensor*>& keep) {
  static std::vector<float> buffer(
      std::min(last_level_cache_bytes() * 3 / 2, kSettings.cache_flush_cap_bytes) / sizeof(float), 1.0f);
  constexpr size_t kLine = 64 / sizeof(float);
  float sum = 0;
  for (size_t i = 0; i < buffer.size(); i += kLine) sum += buffer[i];
  for (const Tensor* t : keep) {
    if (!t) continue;
    const auto* bytes = static_cast<const unsigned char*>(t->raw());
    for (size_t i = 0; i < t->bytes(); i += 64) sum += static_cast<float>(bytes[i]);
  }
  return sum;
}
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Recycles buffers between repeats so timing measures the kernel, not malloc.
class RecyclingAllocator : public TensorAllocator {
 public:
  Tensor allocate(DType dtype, const Shape& shape) override {
    size_t bytes = static_cast<size_t>(shape_size(shape)) * dtype_size(dtype);
    for (auto& s : pool_)
      if (s.use_count() == 1 && s->capacity() >= bytes) return Tensor(dtype, shape, s);
    pool_.push_back(std::make_shared<Storage>(bytes));
    return Tensor(dtype, shape, pool_.back());
  }

 private:
  std::vector<std::shared_ptr<Storage>> pool_;
};

}  // namespace

std::string compare_outputs(const Graph& g, const SubGraph& sub, const std::vector<Tensor>& got,
                            const std::vector<Tensor>& values, const Tolerance& tolerance) {
  if (got.size() != sub.outputs.size()) return "kernel returned " + std::to_string(got.size()) + " outputs";
  for (size_t k = 0; k < got.size(); ++k) {
    const Tensor& want = values[static_cast<size_t>(sub.outputs[k])];
    const std::string& name = g.value(sub.outputs[k]).name;
    TensorComparison c = compare_tensors(got[k], want, tolerance);
    if (c.shape_mismatch || c.dtype_mismatch)
      return name + ": " + shape_to_string(got[k].shape()) + " instead of " + shape_to_string(want.shape());
    if (!c.ok())
      return name + "[" + std::to_string(c.first_mismatch) + "] = " + std::to_string(c.got_value) +
             ", reference " + std::to_string(c.want_value);
  }
  return "";
}

AccuracyMeasure kernel_accuracy(const Graph& graph, const SubGraph& sub, const std::vector<Tensor>& got,
                                const std::vector<Tensor>& values, const AccuracyBudget& budget) {
  AccuracyMeasure worst;
  if (got.size() != sub.outputs.size()) {
    worst.failure = "kernel returned " + std::to_string(got.size()) + " outputs";
    return worst;
  }
  for (size_t o = 0; o < got.size(); ++o) {
    AccuracyMeasure m = measure_accuracy(got[o], values[static_cast<size_t>(sub.outputs[o])], budget,
                                         graph.value(sub.outputs[o]).name, false);
    worst.max_rel = std::max(worst.max_rel, m.max_rel);
    worst.cosine = std::min(worst.cosine, m.cosine);
    if (worst.failure.empty()) worst.failure = m.failure;
  }
  return worst;
}

std::vector<Tensor> reference_values(const Graph& graph, const std::vector<Tensor>& inputs,
                                     const NodeEvaluator& evaluator, std::vector<double>* node_ms) {
  std::vector<Tensor> values(graph.values.size());
  for (size_t v = 0; v < graph.values.size(); ++v)
    if (graph.values[v].constant) values[v] = *graph.values[v].constant;
  for (size_t i = 0; i < graph.inputs.size() && i < inputs.size(); ++i)
    values[static_cast<size_t>(graph.inputs[i])] = inputs[i];
  HeapAllocator alloc;
  std::vector<const Tensor*> args;
  if (node_ms) node_ms->clear();
  for (const Node& n : graph.nodes) {
    args.clear();
    for (ValueId in : n.inputs) args.push_back(in == kNoValue ? nullptr : &values[static_cast<size_t>(in)]);
    auto t0 = Clock::now();
    auto outs = evaluator(n, args, alloc);
    if (node_ms) node_ms->push_back(ms_since(t0));
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
      if (n.outputs[k] != kNoValue) values[static_cast<size_t>(n.outputs[k])] = outs[k];
  }
  return values;
}

double measure_dispatch_overhead_ms() {
  struct EmptyKernel : Kernel {
    std::vector<Tensor> run(KernelInputs, TensorAllocator& alloc) override {
      std::vector<Tensor> out;
      out.push_back(alloc.allocate(DType::Float32, {1}));
      return out;
    }
  } kernel;
  RecyclingAllocator alloc;
  std::vector<double> samples;
  for (int rep = 0; rep < 31; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < 1000; ++i) kernel.run({}, alloc);
    samples.push_back(ms_since(t0) / 1000.0);
  }
  return median(std::move(samples));
}

Measurer::Measurer(const Graph& graph, std::vector<Tensor> reference_values, CostDb* db,
                   MeasureOptions options)
    : graph_(graph), values_(std::move(reference_values)), db_(db), options_(options) {}

Measurer::~Measurer() = default;

void Measurer::share_worker(MeasureWorker* worker, size_t bucket) {
  shared_worker_ = worker;
  shared_bucket_ = bucket;
  shared_selected_ = false;
  shared_started_before_ = worker ? worker->workers_started() : 0;
}

int Measurer::workers_started() const {
  if (shared_worker_) return shared_worker_->workers_started() - shared_started_before_;
  return worker_ ? worker_->workers_started() : 0;
}

MeasureWorker& Measurer::worker() {
  auto graph_inputs = [this] {
    std::vector<Tensor> inputs;
    for (ValueId v : graph_.inputs) inputs.push_back(values_[static_cast<size_t>(v)]);
    return inputs;
  };
  if (shared_worker_) {
    if (!shared_selected_) shared_worker_->select(shared_bucket_, graph_, graph_inputs(), options_.threads);
    shared_selected_ = true;
    return *shared_worker_;
  }
  if (!worker_) worker_ = std::make_unique<MeasureWorker>(graph_, graph_inputs(), options_);
  return *worker_;
}

Cost Measurer::time_kernel(Kernel& kernel, const SubGraph& sub) const {
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values_[static_cast<size_t>(v)]);
  RecyclingAllocator alloc;
  for (int i = 0; i < options_.warmup_runs; ++i) kernel.run(args, alloc);
  std::vector<double> samples;
  auto start = Clock::now();
  double timed = 0;  // min_time_ms counts the samples alone, not the evictions between them
  auto more = [&] {
    int n = static_cast<int>(samples.size());
    double spent = ms_since(start);
    if (n >= options_.max_samples || (n >= 3 && spent >= options_.max_time_ms)) return false;
    return n < options_.min_samples || timed < options_.min_time_ms;
  };
  const bool cold = measured_cold(graph_, sub);
  volatile float sink = 0;
  while (more()) {
    if (cold) sink = sink + evict_all_but(args);
    auto t0 = Clock::now();
    kernel.run(args, alloc);
    samples.push_back(ms_since(t0));
    timed += samples.back();
  }
  std::sort(samples.begin(), samples.end());  // for p90
  Cost cost;
  size_t n = samples.size();
  cost.samples = static_cast<int>(n);
  cost.median_ms = median(samples);
  cost.p90_ms = samples[std::min(n - 1, (n * 9) / 10)];
  double mean = 0;
  for (double s : samples) mean += s;
  mean /= static_cast<double>(n);
  double var = 0;
  for (double s : samples) var += (s - mean) * (s - mean);
  cost.stddev_ms = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
  return cost;
}

Cost Measurer::measure_in_process(const BackendSpec& backend, const SubGraph& sub) const {
  std::unique_ptr<Kernel> kernel;
  auto t0 = Clock::now();
  try {
    CompileOptions copts;
    copts.threads = options_.threads;
    kernel = backend.compile(graph_, sub, copts);
  } catch (const std::bad_alloc&) {  // under the worker's address-space limit: the worker's loss
    return Cost::lost("out of memory");
  } catch (const std::exception& e) {
    return Cost::invalid(std::string("build failed: ") + e.what());
  }
  double build_ms = ms_since(t0);
  try {
    std::vector<const Tensor*> args;
    for (ValueId v : sub.inputs) args.push_back(&values_[static_cast<size_t>(v)]);
    HeapAllocator alloc;
    std::vector<Tensor> got = kernel->run(args, alloc);
    std::string mismatch;
    if (backend.precision == Precision::Float32) {
      mismatch = compare_outputs(graph_, sub, got, values_, options_.tolerance);
    } else if (!options_.accuracy.enabled()) {
      mismatch =
          std::string(precision_name(backend.precision)) + " kernel measured without an accuracy budget";
    } else {
      mismatch = kernel_accuracy(graph_, sub, got, values_, options_.accuracy).failure;
    }
    if (!mismatch.empty()) {
      Cost invalid = Cost::invalid("disagrees with the native reference: " + mismatch);
      invalid.build_ms = build_ms;
      return invalid;
    }
    Cost cost = time_kernel(*kernel, sub);
    cost.build_ms = build_ms;
    return cost;
  } catch (const std::bad_alloc&) {
    Cost invalid = Cost::lost("out of memory");
    invalid.build_ms = build_ms;
    return invalid;
  } catch (const std::exception& e) {
    Cost invalid = Cost::invalid(std::string("run failed: ") + e.what());
    invalid.build_ms = build_ms;
    return invalid;
  }
}

Cost Measurer::measure_now(const Candidate& c, const BackendSpec& backend, ProgressObserver* observer) {
  if (!options_.worker.command.empty()) return worker().measure(backend.name, node_ids(c.nodes), observer);
  std::function<void()> waiting;
  if (observer && !lock_noticed_)
    waiting = [this, observer] {
      observer->on_notice(HostMeasureLock::waiting_notice());
      lock_noticed_ = true;
    };
  HostMeasureLock timing(options_.worker.host_exclusive, stop_function(observer), waiting);
  if (timing.stopped()) throw Error(ErrorKind::Cancelled, "measuring cancelled");
  return measure_in_process(backend, make_subgraph(graph_, c.nodes));
}

void Measurer::store(const Candidate& c, const BackendSpec& backend, const std::string& signature,
                     const Cost& cost) {
  if (!db_) return;
  CostRecord record;
  record.key = CostKey{signature, options_.threads, device_fingerprint()};
  record.backend = backend.name;
  record.backend_version = backend.version;
  record.label = c.label;
  record.cost = cost;
  db_->put(record);
}

std::vector<Cost> Measurer::measure_alternating(const std::vector<Candidate>& rivals,
                                                const std::vector<std::string>& signatures,
                                                const std::vector<const BackendSpec*>& backends, int rounds,
                                                ProgressObserver* observer) {
  std::vector<const BackendSpec*> backend_of;
  for (const Candidate& c : rivals) {
    auto it = std::find_if(backends.begin(), backends.end(),
                           [&](const BackendSpec* b) { return b->name == c.backend; });
    if (it == backends.end()) throw Error(ErrorKind::Internal, "candidate of unknown backend " + c.backend);
    backend_of.push_back(*it);
  }
  std::vector<std::vector<Cost>> taken(rivals.size());
  for (int round = 0; round < rounds; ++round)
    for (size_t step = 0; step < rivals.size(); ++step) {
      // Odd rounds run backwards, so a drift of the machine's speed over the rounds favours no rival.
      size_t i = round % 2 ? rivals.size() - 1 - step : step;
      if (observer && observer->cancel_requested()) throw Error(ErrorKind::Cancelled, "measuring cancelled");
      taken[i].push_back(measure_now(rivals[i], *backend_of[i], observer));
    }
  std::vector<Cost> out;
  for (size_t i = 0; i < rivals.size(); ++i) {
    std::vector<Cost>& costs = taken[i];
    auto failed = std::find_if(costs.begin(), costs.end(), [](const Cost& c) { return !c.valid(); });
    if (failed != costs.end()) {  // a kernel that failed once is not placed on the strength of the others
      out.push_back(*failed);
      continue;
    }
    std::sort(costs.begin(), costs.end(),
              [](const Cost& a, const Cost& b) { return a.median_ms < b.median_ms; });
    out.push_back(costs[(costs.size() - 1) / 2]);
  }
  for (size_t i = 0; i < rivals.size(); ++i) store(rivals[i], *backend_of[i], signatures[i], out[i]);
  return out;
}

std::vector<MeasuredCandidate> Measurer::measure(const std::vector<Candidate>& candidates,
                                                 const std::vector<const BackendSpec*>& backends,
                                                 ProgressObserver* observer) {
  std::map<std::string, const BackendSpec*> by_name;
  for (const BackendSpec* b : backends) by_name[b->name] = b;
  std::vector<MeasuredCandidate> out(candidates.size());
  std::map<std::string, size_t> measured_here;  // signature -> first candidate index
  const std::string device = device_fingerprint();
  auto start = Clock::now();
  if (observer) observer->on_candidates(candidates);
  auto landed = [&](size_t i) {
    if (observer) observer->on_measured(i, out[i]);
  };
  // Signatures first: the remote phase needs them all before it enqueues.
  std::vector<std::string> signatures(candidates.size());
  std::vector<const BackendSpec*> backend_of(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    auto it = by_name.find(c.backend);
    if (it == by_name.end()) throw Error(ErrorKind::Internal, "candidate of unknown backend " + c.backend);
    backend_of[i] = it->second;
    signatures[i] = kernel_signature(graph_, make_subgraph(graph_, c.nodes), c.backend, it->second->version);
  }
  std::vector<bool> settled(candidates.size(), false);
  if (!options_.remote_queue.empty() && !options_.cached_only && db_)
    measure_remotely(candidates, signatures, backend_of, out, settled, observer);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (settled[i]) continue;
    if (observer && observer->cancel_requested()) throw Error(ErrorKind::Cancelled, "measuring cancelled");
    const Candidate& c = candidates[i];
    const BackendSpec& backend = *backend_of[i];
    const std::string& sig = signatures[i];
    out[i].signature = sig;
    if (observer) {
      ProgressEvent e;
      e.stage = ProgressEvent::Stage::Measure;
      e.done = i;
      e.total = candidates.size();
      e.message = c.backend + " " + c.label;
      e.elapsed_ms = ms_since(start);
      observer->on_progress(e);
    }
    if (auto same = measured_here.find(sig); same != measured_here.end()) {
      out[i].cost = out[same->second].cost;
      out[i].from_cache = true;
      landed(i);
      continue;
    }
    CostKey key{sig, options_.threads, device};
    if (db_) {
      // A reduced-precision kernel found outside an earlier, tighter budget is measured again
      // under this one: whether it is valid depends on the budget, which the key does not hold.
      // (A valid one is reused: the end-to-end check and back-off still hold the placement.)
      auto record = db_->find(key);
      if (record && !record->cost.valid() && backend.precision != Precision::Float32 &&
          options_.accuracy.enabled() && !options_.cached_only)
        record.reset();
      if (record) {
        out[i].cost = record->cost;
        out[i].from_cache = true;
        measured_here[sig] = i;
        landed(i);
        continue;
      }
    }
    if (options_.cached_only) {
      out[i].cost = Cost::not_measured();
      landed(i);
      continue;
    }
    out[i].cost = measure_now(c, backend, observer);
    measured_here[sig] = i;
    store(c, backend, sig, out[i].cost);
    landed(i);
  }
  if (observer) {
    ProgressEvent e;
    e.done = e.total = candidates.size();
    e.message = "measured";
    e.elapsed_ms = ms_since(start);
    observer->on_progress(e);
  }
  return out;
}

}  // namespace collage
