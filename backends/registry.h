// The backends compiled into this build, found by name.
#pragma once

#include <string>
#include <vector>

#include "core/backend_api/backend.h"

namespace collage {

// Every backend compiled in, whether or not this CPU can run it (placements and artifacts
// name backends from this list).
const std::vector<const BackendSpec*>& all_backends();
// Those this CPU can run (unavailable_reason() empty): what "every backend" means for a search.
std::vector<const BackendSpec*> available_backends();
// The available fp32 ones: every search's default. Reduced-precision backends (onednn-int8)
// take part only when asked for under an accuracy budget (core/ir/accuracy.h).
std::vector<const BackendSpec*> default_backends();
// Test binaries add test-only backends (e.g. one whose kernels crash) before anything
// reads the list; the product never calls this.
void add_backend_for_tests(const BackendSpec* backend);
const BackendSpec* find_backend(const std::string& name);  // nullptr if unknown
// "onednn,xnnpack,native" -> specs; empty = default_backends(). Unknown names throw InvalidInput
// listing the known ones; a backend this CPU cannot run throws InvalidInput with the reason.
std::vector<const BackendSpec*> select_backends(const std::string& comma_list);
// Applies one thread count to every backend's thread pool.
void set_backend_threads(int threads);

}  // namespace collage
