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

  // ReadWrite opens or creates the database and migrates older schemas; a file or
  // directory this process cannot write is refused up front (Error(Io) naming the file
  // and "read-only"), before anything is measured. ReadOnly only reads (listing,
  // explaining): it works on a 0444 file in a read-only directory. Throws
  // InvalidInput for a file that is not a Collage cost DB or was written by a newer version.
  enum class Access { ReadWrite, ReadOnly };
  explicit CostDb(const std::string& path, Access access = Access::ReadWrite);
  // For commands that only read: ReadOnly for an existing file this process cannot
  // write (or whose directory it cannot write), else ReadWrite (which also creates a
  // missing DB and takes part in another process's creating it).
  static Access access_for_reading(const std::string& path);
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
  bool read_only() const { return access_ == Access::ReadOnly; }
  // How long a write waits for another process's transaction before failing with
  // Error(Io) "locked"; after kBusyNoticeMs of waiting it says so on stderr, once.
  void set_busy_timeout_ms(int ms) { busy_timeout_ms_ = ms; }
  static constexpr int kBusyNoticeMs = 1000;

 private:
  void exec(const char* sql) const;
  void migrate();
  void check_schema();
  void check_writable() const;
  [[noreturn]] void fail() const;  // Error naming the file and SQLite's (and the OS's) reason
  static int on_busy(void* self, int attempt);
  std::string path_;
  Access access_;
  sqlite3* db_ = nullptr;
  int busy_timeout_ms_ = 30000;
  bool busy_noticed_ = false;
  double busy_started_ms_ = 0;
};

}  // namespace collage
