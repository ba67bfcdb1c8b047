// The storage behind CostDb (cost_db.h): one interface, two implementations --
// SQLite (a file, the embedded default) and PostgreSQL (a team's shared server).
// Both hold the same rows under the same key (signature, threads, device), keep a
// versioned schema (app id + schema_version in a meta table, migrations in order,
// refusal of a foreign or newer schema) and write every batch in one transaction,
// upserting by key, so concurrent writers lose nothing and duplicate nothing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tuning/cost_db.h"

namespace collage::pg {
class Connection;
}

namespace collage::cost_store {

class CostStore {
 public:
  virtual ~CostStore() = default;
  virtual std::optional<CostRecord> find(const CostKey& key) const = 0;
  virtual void put_all(const std::vector<CostRecord>& records) = 0;  // one transaction
  virtual std::vector<CostRecord> list(const std::string& backend_filter) const = 0;
  virtual size_t size() const = 0;
  virtual void set_busy_timeout_ms(int /*ms*/) {}  // SQLite: how long a write waits for a lock
};

inline constexpr const char* kAppId = "collage-explorer-costs";

// "postgresql://..." or "postgres://..." (libpq's URI form).
bool is_postgres_location(const std::string& location);
// The location with any password replaced by "***", for messages.
std::string redacted(const std::string& location);

// Throw Error(Io) when the store cannot be reached, Error(InvalidInput) for a
// foreign or newer schema.
std::unique_ptr<CostStore> open_sqlite(const std::string& path, bool read_only);
std::unique_ptr<CostStore> open_postgres(const std::string& url);

// One cost upserted through an open PostgreSQL connection (inside the caller's
// transaction): how a measurement worker stores a cost and finishes its job atomically.
void upsert_cost(const pg::Connection& db, const CostRecord& record);

}  // namespace collage::cost_store
