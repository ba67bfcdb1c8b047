// Refinement's measured fitness through the measurement queue (tune --refine --remote):
// the model goes to the shared DB once, each genome becomes a fitness job keyed like
// cached_fitness's entry (refine.h placement_fitness_key), and its time is what a
// `collage worker` of this machine kind measured. Genomes are evaluated one at a time,
// as in-process: the gain is measuring on the target kind of machine, not parallelism.
#pragma once

#include <string>
#include <vector>

#include "core/search/refine.h"
#include "core/tuning/cost_db.h"
#include "core/tuning/progress.h"

namespace collage::workflow {

// Empty (after a notice) when no live worker of this kind with this build's libraries
// is registered: the caller measures locally. A genome whose workers all stop answering
// for `lease_s` is measured with `local` instead (another notice).
FitnessFn remote_fitness(const Graph& graph, const std::vector<Tensor>& inputs, int runs, int threads,
                         CostDb& db, double lease_s, FitnessFn local, ProgressObserver* observer);

}  // namespace collage::workflow
