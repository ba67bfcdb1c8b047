// Persistent kernel costs in one SQLite file (WAL mode, versioned schema,
// every write in a transaction). Keyed by canonical kernel signature, thread
// count and device fingerprint, so later runs and other models reuse them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/tuning/cost.h"

struct sqlite3;

namespace collage {

struct CostKey {
  std::string signature;  // kernel_signature(...)
  int threads = 1;
  std::string device;  // device_fingerprint()
};

struct CostRecord {
  CostKey key;
  std::string backend;
  std::string backend_version;
  std::string label;
  Cost cost;
  std::string measured_at;  // ISO-8601 UTC
};

class CostDb {
 public:
  static constexpr int kSchemaVersion = 1;
  // $COLLAGE_COST_DB, else $XDG_DATA_HOME/collage-explorer/costs.sqlite, else ~/.local/share/...
  static std::string default_path();

  // Opens or creates the database; migrates older schemas. Throws InvalidInput for
  // a file that is not a Collage cost DB or was written by a newer version.
  explicit CostDb(const std::string& path);
  ~CostDb();
  CostDb(const CostDb&) = delete;
  CostDb& operator=(const CostDb&) = delete;

  std::optional<CostRecord> find(const CostKey& key) const;
  void put(const CostRecord& record);
  void put_all(const std::vector<CostRecord>& records);  // one transaction
  std::vector<CostRecord> list(const std::string& backend_filter = "") const;
  size_t size() const;

  // JSON: {"format": "collage-costs", "version": 1, "records": [...]}.
  std::string export_json(const std::string& backend_filter = "") const;
  size_t import_json(const std::string& text);  // returns records imported; throws InvalidInput

  const std::string& path() const { return path_; }

 private:
  void exec(const char* sql) const;
  void migrate();
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace collage
