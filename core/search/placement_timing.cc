#include "core/search/placement_timing.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "core/ir/error.h"
#include "core/ir/statistics.h"

namespace collage {

namespace {

double steady_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

FitnessFn measured_fitness(const Graph& graph, std::vector<const BackendSpec*> backends,
                           CompileOptions options, std::vector<Tensor> inputs, int repeats) {
  options.beside_others = true;  // genome after genome in one process
  return [&graph, backends = std::move(backends), options, inputs = std::move(inputs),
          repeats](const Placement& p) {
    std::unique_ptr<Executor> ex;
    try {
      ex = std::make_unique<Executor>(graph, placement_steps(graph, p, backends, options));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::Unsupported) throw;
      return Cost::invalid(std::string("a region cannot be built: ") + e.what());  // ranks last
    }
    // Warm up, and let what the previous genome left behind (OpenMP's workers spin for
    // milliseconds after their last kernel) settle before the first timed run.
    const double start = steady_ms();
    do ex->run(inputs);
    while (steady_ms() - start < kSettings.side_by_side_settle_ms);
    std::vector<double> ms;
    for (int i = 0; i < repeats; ++i) ms.push_back(timed_sample([&] { ex->run(inputs); }, steady_ms));
    Cost cost = Cost::of_ms(median(std::move(ms)));
    cost.samples = repeats;
    return cost;
  };
}

double timed_sample(const std::function<void()>& run, const std::function<double()>& clock_ms,
                    double sample_ms) {
  const double t0 = clock_ms();
  int runs = 0;
  double elapsed = 0;
  do {
    run();
    ++runs;
    elapsed = clock_ms() - t0;
  } while (elapsed < sample_ms);
  return elapsed / runs;
}

SideBySide time_side_by_side(const std::function<void()>& a, const std::function<void()>& b, int rounds,
                             const std::function<double()>& clock_ms, double settle_ms, double sample_ms,
                             int give_up_after) {
  std::function<double()> now = clock_ms ? clock_ms : std::function<double()>(steady_ms);
  std::vector<double> a_ms, b_ms;
  auto turn = [&](const std::function<void()>& f, std::vector<double>& out) {
    const double start = now();
    do f();  // untimed: what the other side left behind (spinning threads, its cache) settles
    while (now() - start < settle_ms);
    out.push_back(timed_sample(f, now, sample_ms));
  };
  int done = 0;
  int b_lost = 0;  // rounds in which b was slower
  while (done < rounds) {
    if (done % 2 == 0) {
      turn(a, a_ms);
      turn(b, b_ms);
    } else {
      turn(b, b_ms);
      turn(a, a_ms);
    }
    b_lost += b_ms.back() > a_ms.back();
    ++done;
    if (give_up_after > 0 && done >= give_up_after && b_lost == done) break;
  }
  return {median(std::move(a_ms)), median(std::move(b_ms)), done};
}

SideBySide compare_placements(const Graph& graph, const Placement& a, const Placement& b,
                              const std::vector<const BackendSpec*>& backends, const CompileOptions& options,
                              const std::vector<Tensor>& inputs, int rounds) {
  CompileOptions turns = options;
  turns.beside_others = true;
  Executor ea(graph, placement_steps(graph, a, backends, turns));
  Executor eb(graph, placement_steps(graph, b, backends, turns));
  ea.run(inputs);
  eb.run(inputs);
  return compare_executors(ea, eb, inputs, rounds);
}

SideBySide compare_executors(Executor& a, Executor& b, const std::vector<Tensor>& inputs, int rounds,
                             int give_up_after) {
  return time_side_by_side([&] { a.run(inputs); }, [&] { b.run(inputs); }, rounds, {},
                           kSettings.side_by_side_settle_ms, kSettings.timed_sample_ms, give_up_after);
}

}  // namespace collage
