// The measure worker's side of core/tuning/measure_worker.h: a front end's own
// executable, re-entered with kMeasureWorkerFlag, serves measure and fitness
// requests over every backend of all_backends() (test binaries add theirs first).
#pragma once

namespace collage::workflow {

// First thing in a front end's main(): if argv[1] is kMeasureWorkerFlag, serves as a
// worker and returns its exit code. Otherwise makes this executable the default worker
// command (default_worker_command()) and returns -1.
int enable_measure_workers(int argc, char** argv);

}  // namespace collage::workflow
