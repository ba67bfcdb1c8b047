// Cost JSON import into an in-memory cost DB.
#include <memory>

#include "core/tuning/cost_db.h"
#include "tests/fuzz/fuzz_harness.h"

namespace collage::fuzz {

int fuzz_cost_json(const uint8_t* data, size_t size) {
  // Opening (and migrating) a DB costs more than most imports: one is reused, and
  // replaced once it has grown (an import's outcome does not depend on what is stored).
  static std::unique_ptr<CostDb> db;
  return guarded("cost_json", [&] {
    if (!db || db->size() > 256) db = std::make_unique<CostDb>(":memory:");
    db->import_json(std::string(reinterpret_cast<const char*>(data), size));
  });
}

}  // namespace collage::fuzz

COLLAGE_FUZZ_TARGET(fuzz_cost_json)
