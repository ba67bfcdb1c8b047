// The artifact loader on arbitrary bytes (one plan, or a plan per shape bucket).
#include "core/runtime/artifact.h"
#include "tests/fuzz/fuzz_harness.h"

namespace collage::fuzz {

int fuzz_artifact(const uint8_t* data, size_t size) {
  return guarded("artifact", [&] {
    parse_artifact_buckets(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  });
}

}  // namespace collage::fuzz

COLLAGE_FUZZ_TARGET(fuzz_artifact)
