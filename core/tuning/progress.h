// The one observer interface through which long work (measuring, searching)
// reports progress; the CLI prints it, the GUI forwards it through queued signals.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace collage {

struct Candidate;
struct MeasuredCandidate;
struct Placement;

struct ProgressEvent {
  enum class Stage { Measure, Search, Refine, RefineEvaluation };  // Refine: one event per generation
  Stage stage = Stage::Measure;
  size_t done = 0;
  size_t total = 0;     // 0 when unknown (search)
  std::string message;  // current kernel, or a summary line
  // Best predicted latency so far (search) / best measured fitness (refine): none before
  // the search has a complete placement or while no genome has been measured.
  std::optional<double> best_ms;
  std::optional<double> mean_ms;  // mean measured fitness of the generation (refine); none if none measured
  double elapsed_ms = 0;
  size_t evaluations = 0;  // refine: genomes measured so far
};

class ProgressObserver {
 public:
  virtual ~ProgressObserver() = default;
  virtual void on_progress(const ProgressEvent& event) = 0;
  // Measuring, per candidate kernel: the whole list before the first measurement,
  // then each result as it lands (cost DB hits included): in candidate order when
  // measured here, as workers finish when measured remotely.
  virtual void on_candidates(const std::vector<Candidate>& /*candidates*/) {}
  virtual void on_measured(size_t /*index*/, const MeasuredCandidate& /*result*/) {}
  // A line the user should read, e.g. that remote measuring fell back to this machine.
  virtual void on_notice(const std::string& /*message*/) {}
  // Refinement: the best placement found so far, each time it improves.
  virtual void on_best_placement(const Placement& /*best*/, double /*fitness_ms*/) {}
  // Polled between units of work; true stops it with Error(Cancelled); results
  // already stored (e.g. measured costs in the DB) are kept.
  virtual bool cancel_requested() const { return false; }
};

// A wait inside one unit of work (a measurement in a worker process, the machine's
// measurement lock) asks its stop function this often, so a stop lands within it.
inline constexpr int kStopPollMs = 50;
// The stop function of such a wait: `observer`'s cancel_requested (never, without one).
inline std::function<bool()> stop_function(const ProgressObserver* observer) {
  return [observer] { return observer && observer->cancel_requested(); };
}

}  // namespace collage
