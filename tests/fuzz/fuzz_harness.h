// The fuzz harness bodies, shared by the libFuzzer executables (tests/fuzz/*_fuzz.cc
// built with COLLAGE_FUZZ) and the regression replay in the unit tests.
// Each returns 0 when the input was handled (accepted, or refused with a collage::Error
// that is not Internal) and 1 on a finding, after printing what went wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "core/ir/error.h"

namespace collage::fuzz {

int fuzz_onnx_import(const uint8_t* data, size_t size);
int fuzz_placement_json(const uint8_t* data, size_t size);
int fuzz_cost_json(const uint8_t* data, size_t size);
int fuzz_artifact(const uint8_t* data, size_t size);
int fuzz_tensor_proto(const uint8_t* data, size_t size);
int fuzz_run_path(const uint8_t* data, size_t size);

// Runs `body`, classifying how it ended.
template <typename F>
int guarded(const char* harness, F&& body) {
  try {
    body();
    return 0;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Internal) return 0;
    std::fprintf(stderr, "[%s] FINDING internal error: %s\n", harness, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[%s] FINDING non-collage exception: %s\n", harness, e.what());
  } catch (...) {
    std::fprintf(stderr, "[%s] FINDING unknown exception\n", harness);
  }
  return 1;
}

}  // namespace collage::fuzz

// libFuzzer's entry point, only in the fuzz executables: a finding aborts so libFuzzer saves the input.
#ifdef COLLAGE_FUZZ_ENTRY
#include <cstdlib>
#define COLLAGE_FUZZ_TARGET(fn)                                             \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    if (collage::fuzz::fn(data, size) != 0) std::abort();                   \
    return 0;                                                               \
  }
#else
#define COLLAGE_FUZZ_TARGET(fn)
#endif
