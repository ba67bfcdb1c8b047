// Cost JSON import into an in-memory cost DB.
#include "core/tuning/cost_db.h"
#include "tests/fuzz/fuzz_harness.h"

namespace collage::fuzz {

int fuzz_cost_json(const uint8_t* data, size_t size) {
  return guarded("cost_json", [&] {
    CostDb db(":memory:");
    db.import_json(std::string(reinterpret_cast<const char*>(data), size));
  });
}

}  // namespace collage::fuzz

COLLAGE_FUZZ_TARGET(fuzz_cost_json)
