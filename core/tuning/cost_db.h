// Persistent kernel costs, keyed by canonical kernel signature, thread count and
// device fingerprint, so later runs, other models and (with PostgreSQL) other
// machines of a team reuse them. The location picks the store (cost_store.h):
// a file path is SQLite (WAL mode, the embedded default), a postgresql:// URL a
// shared PostgreSQL database. Same schema version, semantics and JSON exchange.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tuning/cost.h"

namespace collage {

namespace cost_store {
class CostStore;
}

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

  // Opens the database at `location` (a path, or postgresql://user@host:port/db).
  // ReadWrite opens or creates it and migrates older schemas; an SQLite file or directory
  // this process cannot write is refused up front (Error(Io) naming the file and
  // "read-only"), before anything is measured. ReadOnly only reads (listing, explaining):
  // it works on a 0444 file in a read-only directory. Throws InvalidInput for a database
  // that is not a Collage cost DB or was written by a newer version, Io when it cannot be
  // opened or reached.
  enum class Access { ReadWrite, ReadOnly };
  explicit CostDb(const std::string& location, Access access = Access::ReadWrite);
  // For commands that only read: ReadOnly for an existing SQLite file this process cannot
  // write (or whose directory it cannot write), else ReadWrite (which also creates a
  // missing DB and takes part in another process's creating it).
  static Access access_for_reading(const std::string& location);
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

  // The location, with any password replaced (for messages).
  const std::string& path() const { return path_; }
  // As given, password included: only for opening further connections (the queue).
  const std::string& location() const { return location_; }
  bool is_shared() const;  // PostgreSQL (a team's server), not an SQLite file
  bool read_only() const { return access_ == Access::ReadOnly; }
  // How long an SQLite write waits for another process's transaction before failing with
  // Error(Io) "locked"; after kBusyNoticeMs of waiting it says so on stderr, once.
  void set_busy_timeout_ms(int ms);
  static constexpr int kBusyNoticeMs = 1000;

 private:
  std::string path_;
  std::string location_;
  Access access_;
  std::unique_ptr<cost_store::CostStore> store_;
};

}  // namespace collage
