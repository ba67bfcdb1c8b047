#include "core/tuning/cost_db.h"

#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/ir/error.h"
#include "core/tuning/cost_store.h"

namespace collage {

namespace {

using cost_store::kAppId;

// Migrations: entry i upgrades schema version i to i + 1.
const char* const kMigrations[] = {
    // 0 -> 1
    "CREATE TABLE IF NOT EXISTS costs ("
    "  signature TEXT NOT NULL, threads INTEGER NOT NULL, device TEXT NOT NULL,"
    "  backend TEXT NOT NULL, backend_version TEXT NOT NULL, label TEXT NOT NULL,"
    "  valid INTEGER NOT NULL, reason TEXT NOT NULL, median_ms REAL NOT NULL, p90_ms REAL NOT NULL,"
    "  stddev_ms REAL NOT NULL, samples INTEGER NOT NULL, build_ms REAL NOT NULL, measured_at TEXT NOT NULL,"
    "  PRIMARY KEY (signature, threads, device));"
    "CREATE INDEX IF NOT EXISTS costs_backend ON costs(backend);",
};

class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw Error(ErrorKind::Io, std::string("cost DB: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  void bind(int i, const std::string& s) { sqlite3_bind_text(stmt_, i, s.c_str(), -1, SQLITE_TRANSIENT); }
  void bind(int i, double d) { sqlite3_bind_double(stmt_, i, d); }
  void bind(int i, int v) { sqlite3_bind_int(stmt_, i, v); }
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw Error(ErrorKind::Io, std::string("cost DB: ") + sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string text(int col) const {
    auto p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  int integer(int col) const { return sqlite3_column_int(stmt_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

const char* kColumns =
    "signature, threads, device, backend, backend_version, label, valid, reason, median_ms, p90_ms, "
    "stddev_ms,"
    " samples, build_ms, measured_at";

CostRecord read_row(const Statement& s) {
  CostRecord r;
  r.key.signature = s.text(0);
  r.key.threads = s.integer(1);
  r.key.device = s.text(2);
  r.backend = s.text(3);
  r.backend_version = s.text(4);
  r.label = s.text(5);
  r.cost.invalid_reason = s.text(7);
  if (s.integer(6) == 0 && r.cost.invalid_reason.empty()) r.cost.invalid_reason = "invalid";
  r.cost.median_ms = s.real(8);
  r.cost.p90_ms = s.real(9);
  r.cost.stddev_ms = s.real(10);
  r.cost.samples = s.integer(11);
  r.cost.build_ms = s.real(12);
  r.measured_at = s.text(13);
  return r;
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

std::string CostDb::default_path() {
  if (const char* p = std::getenv("COLLAGE_COST_DB"); p && *p) return p;
  std::filesystem::path base;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::filesystem::path(h) / ".local" / "share";
  else
    base = std::filesystem::temp_directory_path();
  return (base / "collage-explorer" / "costs.sqlite").string();
}

namespace {

class SqliteStore : public cost_store::CostStore {
 public:
  explicit SqliteStore(const std::string& path) : path_(path) {
    std::error_code ec;
    auto parent = std::filesystem::path(path).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw Error(ErrorKind::Io, "cannot open cost DB '" + path + "': " + msg);
    }
    sqlite3_busy_timeout(db_, 30000);  // another process measuring into the same file
    try {
      exec("PRAGMA journal_mode=WAL;");
      migrate();
    } catch (const Error& e) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw Error(ErrorKind::InvalidInput, "cost DB '" + path + "': " + e.what());
    }
  }

  ~SqliteStore() override { sqlite3_close(db_); }

  void exec(const char* sql) const {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      throw Error(ErrorKind::Io, msg);
    }
  }

  void migrate() {
    exec("BEGIN IMMEDIATE;");
    try {
      exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);");
      std::string app;
      int version = 0;
      {
        Statement s(db_, "SELECT key, value FROM meta;");
        while (s.step()) {
          if (s.text(0) == "app") app = s.text(1);
          if (s.text(0) == "schema_version") version = std::atoi(s.text(1).c_str());
        }
      }
      if (!app.empty() && app != kAppId)
        throw Error(ErrorKind::InvalidInput, "not a Collage cost database (app '" + app + "')");
      if (app.empty()) {
        Statement count(db_, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name != 'meta';");
        count.step();
        if (count.integer(0) > 0)
          throw Error(ErrorKind::InvalidInput, "not a Collage cost database (foreign tables)");
      }
      if (version > CostDb::kSchemaVersion)
        throw Error(ErrorKind::InvalidInput, "written by a newer version (schema " + std::to_string(version) +
                                                 ", this build reads up to " +
                                                 std::to_string(CostDb::kSchemaVersion) + ")");
      for (int v = version; v < CostDb::kSchemaVersion; ++v) exec(kMigrations[v]);
      Statement put(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2);");
      put.bind(1, std::string("app"));
      put.bind(2, std::string(kAppId));
      put.step();
      Statement ver(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?1);");
      ver.bind(1, std::to_string(CostDb::kSchemaVersion));
      ver.step();
      exec("COMMIT;");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
      throw;
    }
  }

  std::optional<CostRecord> find(const CostKey& key) const override {
    Statement s(db_, (std::string("SELECT ") + kColumns +
                      " FROM costs WHERE signature = ?1 AND threads = ?2 AND device = ?3;")
                         .c_str());
    s.bind(1, key.signature);
    s.bind(2, key.threads);
    s.bind(3, key.device);
    if (!s.step()) return std::nullopt;
    return read_row(s);
  }

  void put_all(const std::vector<CostRecord>& records) override {
    exec("BEGIN IMMEDIATE;");
    try {
      Statement s(db_, (std::string("INSERT OR REPLACE INTO costs (") + kColumns +
                        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14);")
                           .c_str());
      for (const CostRecord& r : records) {
        s.bind(1, r.key.signature);
        s.bind(2, r.key.threads);
        s.bind(3, r.key.device);
        s.bind(4, r.backend);
        s.bind(5, r.backend_version);
        s.bind(6, r.label);
        s.bind(7, r.cost.valid() ? 1 : 0);
        s.bind(8, r.cost.invalid_reason);
        s.bind(9, r.cost.median_ms);
        s.bind(10, r.cost.p90_ms);
        s.bind(11, r.cost.stddev_ms);
        s.bind(12, r.cost.samples);
        s.bind(13, r.cost.build_ms);
        s.bind(14, r.measured_at.empty() ? now_iso8601() : r.measured_at);
        s.step();
        s.reset();
      }
      exec("COMMIT;");
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
      throw;
    }
  }

  std::vector<CostRecord> list(const std::string& backend_filter) const override {
    std::string sql = std::string("SELECT ") + kColumns + " FROM costs" +
                      (backend_filter.empty() ? "" : " WHERE backend = ?1") +
                      " ORDER BY backend, label, signature;";
    Statement s(db_, sql.c_str());
    if (!backend_filter.empty()) s.bind(1, backend_filter);
    std::vector<CostRecord> out;
    while (s.step()) out.push_back(read_row(s));
    return out;
  }

  size_t size() const override {
    Statement s(db_, "SELECT count(*) FROM costs;");
    s.step();
    return static_cast<size_t>(s.integer(0));
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace

namespace cost_store {
std::unique_ptr<CostStore> open_sqlite(const std::string& path) {
  return std::make_unique<SqliteStore>(path);
}
}  // namespace cost_store

CostDb::CostDb(const std::string& location)
    : path_(cost_store::redacted(location)),
      store_(cost_store::is_postgres_location(location) ? cost_store::open_postgres(location)
                                                        : cost_store::open_sqlite(location)) {}

CostDb::~CostDb() = default;

std::optional<CostRecord> CostDb::find(const CostKey& key) const { return store_->find(key); }
void CostDb::put(const CostRecord& record) { store_->put_all({record}); }
void CostDb::put_all(const std::vector<CostRecord>& records) { store_->put_all(records); }
std::vector<CostRecord> CostDb::list(const std::string& backend_filter) const {
  return store_->list(backend_filter);
}
size_t CostDb::size() const { return store_->size(); }

std::string CostDb::export_json(const std::string& backend_filter) const {
  nlohmann::json records = nlohmann::json::array();
  for (const CostRecord& r : list(backend_filter)) {
    records.push_back({{"signature", r.key.signature},
                       {"threads", r.key.threads},
                       {"device", r.key.device},
                       {"backend", r.backend},
                       {"backend_version", r.backend_version},
                       {"label", r.label},
                       {"valid", r.cost.valid()},
                       {"reason", r.cost.invalid_reason},
                       {"median_ms", r.cost.median_ms},
                       {"p90_ms", r.cost.p90_ms},
                       {"stddev_ms", r.cost.stddev_ms},
                       {"samples", r.cost.samples},
                       {"build_ms", r.cost.build_ms},
                       {"measured_at", r.measured_at}});
  }
  nlohmann::json doc = {{"format", "collage-costs"}, {"version", kSchemaVersion}, {"records", records}};
  return doc.dump(1);
}

size_t CostDb::import_json(const std::string& text) {
  std::vector<CostRecord> records;
  try {
    nlohmann::json doc = nlohmann::json::parse(text);
    if (doc.value("format", "") != "collage-costs")
      throw Error(ErrorKind::InvalidInput,
                  "not a collage cost export (missing \"format\": \"collage-costs\")");
    int version = doc.at("version").get<int>();
    if (version > kSchemaVersion)
      throw Error(ErrorKind::InvalidInput, "cost export version " + std::to_string(version) +
                                               " is newer than " + std::to_string(kSchemaVersion));
    for (const auto& j : doc.at("records")) {
      CostRecord r;
      r.key.signature = j.at("signature").get<std::string>();
      r.key.threads = j.at("threads").get<int>();
      r.key.device = j.at("device").get<std::string>();
      r.backend = j.at("backend").get<std::string>();
      r.backend_version = j.at("backend_version").get<std::string>();
      r.label = j.at("label").get<std::string>();
      r.cost.invalid_reason = j.at("reason").get<std::string>();
      if (!j.at("valid").get<bool>() && r.cost.invalid_reason.empty()) r.cost.invalid_reason = "invalid";
      r.cost.median_ms = j.at("median_ms").get<double>();
      r.cost.p90_ms = j.at("p90_ms").get<double>();
      r.cost.stddev_ms = j.at("stddev_ms").get<double>();
      r.cost.samples = j.at("samples").get<int>();
      r.cost.build_ms = j.at("build_ms").get<double>();
      r.measured_at = j.at("measured_at").get<std::string>();
      if (r.key.signature.empty() || r.key.threads < 1)
        throw Error(ErrorKind::InvalidInput, "cost export has a record without signature or thread count");
      records.push_back(std::move(r));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::InvalidInput, std::string("malformed cost export: ") + e.what());
  }
  put_all(records);
  return records.size();
}

}  // namespace collage
