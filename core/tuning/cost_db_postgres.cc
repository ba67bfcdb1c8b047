// The PostgreSQL cost store (cost_store.h), through libpq. Same rows and key as
// the SQLite file; tables collage_meta and collage_costs, so a team's database can
// hold other things too. Every statement is parameterised ($1...); writes are one
// transaction of upserts; the schema check and migrations run under a transaction
// advisory lock, so tuners opening a fresh database at once do not race.
#include <cstdlib>
#include <ctime>

#include "core/ir/error.h"
#include "core/tuning/cost_store.h"
#include "core/tuning/pg_connection.h"

namespace collage::cost_store {
namespace {

// Migrations: entry i upgrades schema version i to i + 1.
const std::vector<const char*> kMigrations = {
    // 0 -> 1
    "CREATE TABLE IF NOT EXISTS collage_costs ("
    "  signature TEXT NOT NULL, threads INTEGER NOT NULL, device TEXT NOT NULL,"
    "  backend TEXT NOT NULL, backend_version TEXT NOT NULL, label TEXT NOT NULL,"
    "  valid BOOLEAN NOT NULL, reason TEXT NOT NULL, median_ms DOUBLE PRECISION NOT NULL,"
    "  p90_ms DOUBLE PRECISION NOT NULL, stddev_ms DOUBLE PRECISION NOT NULL, samples INTEGER NOT NULL,"
    "  build_ms DOUBLE PRECISION NOT NULL, measured_at TEXT NOT NULL,"
    "  PRIMARY KEY (signature, threads, device));"
    "CREATE INDEX IF NOT EXISTS collage_costs_backend ON collage_costs(backend);",
};
constexpr int kSchemaVersion = 1;
static_assert(kSchemaVersion == CostDb::kSchemaVersion, "both stores carry the same schema version");

constexpr const char* kColumns =
    "signature, threads, device, backend, backend_version, label, valid, reason, median_ms, p90_ms, "
    "stddev_ms, samples, build_ms, measured_at";

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

CostRecord read_row(const pg::Result& r, int i) {
  CostRecord rec;
  rec.key.signature = r.text(i, 0);
  rec.key.threads = std::atoi(r.text(i, 1).c_str());
  rec.key.device = r.text(i, 2);
  rec.backend = r.text(i, 3);
  rec.backend_version = r.text(i, 4);
  rec.label = r.text(i, 5);
  // The table keeps valid and reason; an invalid cost reads back as Failed (the status of
  // a lost worker is news only when it happens, not from the DB).
  if (r.text(i, 6) != "t" || !r.text(i, 7).empty()) rec.cost = Cost::invalid(r.text(i, 7));
  rec.cost.median_ms = std::strtod(r.text(i, 8).c_str(), nullptr);
  rec.cost.p90_ms = std::strtod(r.text(i, 9).c_str(), nullptr);
  rec.cost.stddev_ms = std::strtod(r.text(i, 10).c_str(), nullptr);
  rec.cost.samples = std::atoi(r.text(i, 11).c_str());
  rec.cost.build_ms = std::strtod(r.text(i, 12).c_str(), nullptr);
  rec.measured_at = r.text(i, 13);
  return rec;
}

class PostgresStore : public CostStore {
 public:
  explicit PostgresStore(const std::string& url) : db_(url, "cost DB") {
    // Costs are a cache: a server crash may lose the last commits (never half a row or a
    // corrupt table), which are re-measured; waiting for the WAL flush on every stored
    // cost would cost ~4 ms each on a 2-core cloud machine (tests/bench/cost_db_bench.sh).
    db_.exec("SET synchronous_commit TO off");
    pg::migrate(db_, "schema_version", kMigrations);
  }

  std::optional<CostRecord> find(const CostKey& key) const override {
    pg::Result r = db_.query(std::string("SELECT ") + kColumns +
                                 " FROM collage_costs WHERE signature = $1 AND threads = $2 AND device = $3",
                             {key.signature, std::to_string(key.threads), key.device});
    if (r.rows() == 0) return std::nullopt;
    return read_row(r, 0);
  }

  void put_all(const std::vector<CostRecord>& records) override {
    db_.transaction([&] {
      for (const CostRecord& rec : records) upsert_cost(db_, rec);
    });
  }

  std::vector<CostRecord> list(const std::string& backend_filter) const override {
    std::string sql = std::string("SELECT ") + kColumns + " FROM collage_costs" +
                      (backend_filter.empty() ? "" : " WHERE backend = $1") +
                      " ORDER BY backend, label, signature";
    pg::Result r = backend_filter.empty() ? db_.query(sql) : db_.query(sql, {backend_filter});
    std::vector<CostRecord> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(read_row(r, i));
    return out;
  }

  size_t size() const override {
    pg::Result r = db_.query("SELECT count(*) FROM collage_costs");
    return static_cast<size_t>(std::stoull(r.text(0, 0)));
  }

 private:
  pg::Connection db_;
};

}  // namespace

void upsert_cost(const pg::Connection& db, const CostRecord& rec) {
  db.query(std::string("INSERT INTO collage_costs (") + kColumns +
               ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) "
               "ON CONFLICT (signature, threads, device) DO UPDATE SET backend = EXCLUDED.backend, "
               "backend_version = EXCLUDED.backend_version, label = EXCLUDED.label, valid = EXCLUDED.valid, "
               "reason = EXCLUDED.reason, median_ms = EXCLUDED.median_ms, p90_ms = EXCLUDED.p90_ms, "
               "stddev_ms = EXCLUDED.stddev_ms, samples = EXCLUDED.samples, build_ms = EXCLUDED.build_ms, "
               "measured_at = EXCLUDED.measured_at",
           {rec.key.signature, std::to_string(rec.key.threads), rec.key.device, rec.backend,
            rec.backend_version, rec.label, rec.cost.valid() ? "true" : "false", rec.cost.invalid_reason,
            format_double(rec.cost.median_ms), format_double(rec.cost.p90_ms),
            format_double(rec.cost.stddev_ms), std::to_string(rec.cost.samples),
            format_double(rec.cost.build_ms), rec.measured_at.empty() ? now_iso8601() : rec.measured_at});
}

bool is_postgres_location(const std::string& location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

std::string redacted(const std::string& location) {
  // postgresql://user:password@host...: the password sits between the first ':' after the
  // scheme and the '@' of the authority.
  if (!is_postgres_location(location)) return location;
  size_t start = location.find("://") + 3;
  size_t end = location.find_first_of("/?", start);
  size_t at = location.rfind('@', end == std::string::npos ? std::string::npos : end);
  if (at == std::string::npos || at < start) return location;
  size_t colon = location.find(':', start);
  if (colon == std::string::npos || colon > at) return location;
  return location.substr(0, colon + 1) + "***" + location.substr(at);
}

std::unique_ptr<CostStore> open_postgres(const std::string& url) {
  return std::make_unique<PostgresStore>(url);
}

}  // namespace collage::cost_store
