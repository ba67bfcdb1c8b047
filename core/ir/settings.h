// Every default of the workflow, in one place for the CLI (`collage tune`, `--refine`),
// the explorer (Tune, Refine) and the options structs of core/ (MeasureOptions,
// RefineOptions, the workflow's step options): they all initialise from kSettings and
// hold no literal of their own, so the same model, costs and seed give the same
// placement whichever front end or layer starts the work. It sits in core/ir, the
// bottom layer, so every stage can read it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/ir/tensor_compare.h"

namespace collage {

struct Settings {
  // Import: nodes evaluated to fold constants and learn shapes (ONNX inference missed) may
  // take this many seconds in all; past it, import refuses the model (InvalidModel naming the
  // node it reached). Sizes are bounded separately, by the tensor memory budget.
  double import_evaluation_budget_s = 60;
  // End to end: timed runs of a placement after one verified warm-up run (`--repeat`).
  int repeat = 20;
  // `tune --dim` with several shape buckets: a bucket skips the candidates that were more than
  // this many times slower than the best kernel of exactly the same nodes in the bucket before
  // it (`--prune-ratio`; 0 measures everything).
  double bucket_prune_ratio = 4;
  // Each candidate kernel: warm-up runs, then samples until `measure_min_time_ms` was spent
  // timing and at least `measure_min_samples` were taken (docs/cli.md, "collage tune").
  int measure_warmup_runs = 2;
  int measure_min_samples = 10;
  int measure_max_samples = 2000;
  double measure_min_time_ms = 30;
  double measure_max_time_ms = 300;  // slow kernels stop here once they have 3 samples
  // Close contests (core/search/close_contests.h): a placed kernel whose best alternative
  // costs the placement at most `contest_margin` of that kernel's own time is measured again
  // with its rivals, `contest_rounds` times alternated; only kernels holding at least
  // `contest_min_share` of the predicted time, at most `contest_max` of them per pass
  // (`tune --contest-rounds`; 0 keeps the first measurements).
  double contest_margin = 0.15;
  int contest_rounds = 3;
  double contest_min_share = 0.005;
  size_t contest_max = 24;
  // A kernel reading at least this many bytes of constants, in a model whose constants exceed
  // the cache a run keeps (the last-level cache, at most `cache_kept_cap_bytes`), is timed with the caches
  // flushed before each sample and its runtime inputs read back in (core/backend_api/kernel_signature.h:
  // measured_cold).
  size_t cold_weight_min_bytes = size_t{1} << 20;
  // A virtual machine's sysfs gives the host socket's whole L3, shared with cores it does not
  // see (504 MiB on an Intel Xeon host of 2 cores). Measured there: a 5 MB operand still read at
  // cache speed after a 32 MiB sweep, at DRAM speed after 64 MiB and beyond, and ViT-B/16's
  // 9.4 MiB MLP weights ran 1.15x their hot time in a run. So a run counts on at most
  // `cache_kept_cap_bytes` of it, and the flush before a cold sample reads 1.5x the last-level
  // cache but at most `cache_flush_cap_bytes`.
  size_t cache_kept_cap_bytes = size_t{32} << 20;
  size_t cache_flush_cap_bytes = size_t{128} << 20;
  // Graph-level search (docs/cli.md, "collage tune"): fitness is the median of `fitness_runs`
  // timed runs after a warm-up; an elitist GA of `refine_population` genomes stops after
  // `refine_generations`, `refine_patience` generations without improvement or
  // `refine_budget_s` seconds.
  int fitness_runs = 7;
  int refine_population = 12;
  int refine_generations = 30;
  int refine_patience = 8;
  double refine_budget_s = 120;
  uint64_t refine_seed = 1;
  int refine_tournament = 3;
  // After the seed contests, segment contests: the kernels in execution order cut into this many
  // runs (where one node's output alone crosses, when it can), each run moved whole to each
  // graph-level backend whose seed is within segment_library_margin of the best, timed side by side
  // against the best and kept when at least `segment_min_gain` faster. Random genomes almost never
  // move a whole stage, and a stage on another library is where mixing whole libraries pays.
  int refine_segments = 6;
  double segment_min_gain = 0.01;
  // The final check: both placements alternated, max(repeat, this) runs each.
  int side_by_side_min_rounds = 10;
  // A refine's contests (seed, segment, library) stop timing a rival that was slower in each of
  // its first this many rounds: it has lost (time_side_by_side's give_up_after).
  int contest_give_up_rounds = 5;
  // A rival that wins one of those contests is timed against the best again, this many times, and
  // replaces it only if it wins each: a burst of host noise during one contest otherwise moves the
  // placement (EfficientNet-B0 at 1 thread: a segment move won 16.43 against 17.29 ms while the best
  // measured 15.6-15.9 ms in the contests just before and after it). A rival that loses is timed once.
  int contest_confirmations = 1;
  // Each side-by-side turn, and each fitness measurement, first runs its placement untimed for at
  // least this long (and once).
  double side_by_side_settle_ms = 10;
  // Each timed sample of a turn or a fitness runs its placement repeatedly for at least this long
  // (and once) and counts the mean run: one run of a 0.1 ms model is within its own noise (thread
  // wake-ups at 2 threads), so single-run samples let a slower placement win a contest.
  double timed_sample_ms = 2;
  // Before it, every whole-library seed is timed against the search's best the same way and
  // replaces it when faster: a fitness is one median of a few runs at one moment, and a 2-thread
  // virtual machine's speed changes between moments by more than the gap between whole-graph runs.
  // The segment contests try the libraries whose seed's fitness is within this factor of the best.
  double segment_library_margin = 1.25;
  // After it: each library alone (the op-level search over its kernels, native for the rest) whose
  // predicted time is within this factor of the op-level placement's, or of its measured time where
  // that is longer, is timed against the kept placement the same way, and replaces it when faster:
  // the additive model misjudges boundaries (at 2 threads a mix ran up to twice its prediction), so
  // a mix it predicts faster can run slower than one library's own kernels.
  double library_contest_margin = 1.10;
  // A whole placement against the native reference: errors accumulate over the model,
  // so the absolute part is looser than the per-kernel check (kKernelTolerance).
  Tolerance verify_tolerance{1e-3, 1e-3, 0};
  // Each candidate kernel against the native reference (the tuner's rule).
  Tolerance kernel_tolerance = kKernelTolerance;
  // Under an accuracy budget a tuned placement must hold it with this margin (each bound's allowed
  // error scaled by it) on its own inputs and on a second draw, seeded with held_out_seed, which
  // the search never measured: a back-off that stops where the tune's own inputs just pass misses
  // on other inputs (an int8 ViT-B/16 did, by 1e-4 of cosine, and with both draws checked, by 1e-3
  // of max-rel). The placement keeps the user's budget; later checks hold it to that.
  double accuracy_margin = 0.9;
  uint64_t held_out_seed = 7919;
  // A back-off step forbids the worst kernel's backend on its nodes, and every other backend of
  // its precision whose own error there is at least this share of the worst's: the int8 ones
  // share the weights' quantization, but not the activations' (8 bits per tensor against the AVX2
  // tiles' 7 per row), so one may err clearly less and stay a choice before fp32.
  double backoff_kept_error_ratio = 0.8;
  // Candidates are measured in worker processes (core/tuning/measure_worker.h).
  bool isolate_measurement = true;
  // The measurement queue (tune --remote, collage worker): a worker renews its job's lease
  // every third of this; a worker silent this long is gone and its job is claimed again.
  double worker_lease_s = 30;
};

inline constexpr Settings kSettings{};

}  // namespace collage
