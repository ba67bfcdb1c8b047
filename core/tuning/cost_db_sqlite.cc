#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "core/ir/error.h"
#include "core/tuning/cost_store.h"

namespace collage::cost_store {

namespace {

constexpr int kSchemaVersion = CostDb::kSchemaVersion;
constexpr const char* kLocked = "locked by another process";

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

// Why a write failed, when SQLite's errno was overwritten by its recovery: the
// file system is (nearly) full, or the file size limit (ulimit -f) is reached.
std::string write_failure(const std::string& path) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  auto space = std::filesystem::space(parent.empty() ? "." : parent, ec);
  if (!ec && space.available < (1u << 20)) return "no space left on the file system";
  rlimit limit{};
  if (::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    uintmax_t largest = 0;
    for (const char* suffix : {"", "-wal"}) {
      uintmax_t size = std::filesystem::file_size(path + suffix, ec);
      if (!ec) largest = std::max(largest, size);
    }
    if (largest + (64u << 10) >= limit.rlim_cur)
      return "the file size limit (ulimit -f) of " + std::to_string(limit.rlim_cur >> 10) + " KB is reached";
  }
  return "";
}

// What went wrong, for a message that names the file: SQLite's text plus the OS's
// reason for I/O failures ("disk I/O error (File too large)").
std::string sqlite_reason(sqlite3* db, const std::string& path, int busy_timeout_ms) {
  int code = sqlite3_errcode(db);
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    return std::string(kLocked) + " for more than " + std::to_string(busy_timeout_ms / 1000.0).substr(0, 4) +
           " s (nothing was written)";
  std::string reason = sqlite3_errmsg(db);
  if (code == SQLITE_READONLY) reason += " (the file is read-only)";
  int sys = sqlite3_system_errno(db);
  if (code == SQLITE_IOERR || code == SQLITE_FULL) {
    std::string why = write_failure(path);
    if (why.empty() && sys != 0) why = std::strerror(sys);
    if (!why.empty()) reason += " (" + why + "); the DB keeps every earlier cost";
  } else if (sys != 0 && code == SQLITE_CANTOPEN) {
    reason += std::string(" (") + std::strerror(sys) + ")";
  }
  return reason;
}

Error db_error(sqlite3* db, const std::string& path, int busy_timeout_ms) {
  int code = sqlite3_errcode(db);
  return Error(code == SQLITE_NOTADB || code == SQLITE_CORRUPT ? ErrorKind::InvalidInput : ErrorKind::Io,
               "cost DB '" + path + "': " + sqlite_reason(db, path, busy_timeout_ms));
}

class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, int busy_timeout_ms, const char* sql)
      : db_(db), path_(path), busy_timeout_ms_(busy_timeout_ms) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw db_error(db_, path_, busy_timeout_ms_);
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
    throw db_error(db_, path_, busy_timeout_ms_);
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
  const std::string& path_;
  int busy_timeout_ms_;
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
  // The table keeps valid and reason; an invalid cost reads back as Failed (the status of
  // a lost worker is news only when it happens, not from the DB).
  if (s.integer(6) == 0 || !s.text(7).empty()) r.cost = Cost::invalid(s.text(7));
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

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// A URI that opens `path` immutable (no -wal/-shm needed: a read-only directory).
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (char c : std::filesystem::absolute(path).string()) {
    if (c == '%' || c == '?' || c == '#') {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      uri += hex;
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

}  // namespace

// The SQLite store: one file in WAL mode (cost_store.h). Errors name the file and
// the reason (read-only, full disk, ulimit -f, locked for too long).
class SqliteStore : public CostStore {
 public:
  SqliteStore(const std::string& path, bool read_only);
  ~SqliteStore() override;
  std::optional<CostRecord> find(const CostKey& key) const override;
  void put_all(const std::vector<CostRecord>& records) override;
  std::vector<CostRecord> list(const std::string& backend_filter) const override;
  size_t size() const override;
  void set_busy_timeout_ms(int ms) override { busy_timeout_ms_ = ms; }

 private:
  void exec(const char* sql) const;
  void migrate();
  void check_schema();
  std::pair<std::string, int> read_meta() const;  // the meta table's app id and schema version
  void check_writable() const;
  [[noreturn]] void fail() const;  // Error naming the file and SQLite's (and the OS's) reason
  static int on_busy(void* self, int attempt);
  std::string path_;
  sqlite3* db_ = nullptr;
  int busy_timeout_ms_ = 30000;
  bool busy_noticed_ = false;
  double busy_started_ms_ = 0;
};

// Refuse up front what SQLite would only refuse at the first write, after the tune
// measured for minutes: a read-only file, or a read-only directory where the WAL's
// -wal/-shm files cannot be created.
void SqliteStore::check_writable() const {
  auto parent = std::filesystem::path(path_).parent_path();
  std::string dir = parent.empty() ? "." : parent.string();
  bool file = exists(path_);
  if (file && ::access(path_.c_str(), W_OK) != 0)
    throw Error(ErrorKind::Io, "cost DB '" + path_ + "' is read-only (" + std::strerror(errno) +
                                   "); `collage costs` can still list it");
  if (::access(dir.c_str(), W_OK) != 0) {
    std::string why = std::strerror(errno);
    if (!file || !exists(path_ + "-wal") || !exists(path_ + "-shm"))
      throw Error(ErrorKind::Io, "cost DB '" + path_ + "': its directory '" + dir + "' is read-only (" + why +
                                     ") and SQLite must create " +
                                     (file ? "its -wal and -shm files" : "the database") + " there");
  }
}

SqliteStore::SqliteStore(const std::string& path, bool read_only) : path_(path) {
  auto close = [&] {
    sqlite3_close(db_);
    db_ = nullptr;
  };
  auto open = [&](const std::string& name, int flags) {
    if (sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite_reason(db_, path, busy_timeout_ms_) : "out of memory";
      close();
      throw Error(ErrorKind::Io, "cannot open cost DB '" + path + "': " + msg);
    }
    sqlite3_busy_handler(db_, &SqliteStore::on_busy, this);  // another process measuring into the same file
  };
  if (read_only) {
    if (!exists(path)) throw Error(ErrorKind::Io, "cost DB '" + path + "' does not exist");
    open(path, SQLITE_OPEN_READONLY);
    try {
      check_schema();
    } catch (const Error& e) {
      // A WAL database in a read-only directory without its -wal/-shm files (closed
      // cleanly): nothing can be pending in a WAL, so read the file as immutable.
      close();
      if (e.kind() != ErrorKind::Io || exists(path + "-wal")) throw;
      open(immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
      try {
        check_schema();
      } catch (...) {
        close();
        throw;
      }
    }
    return;
  }
  std::error_code ec;  // a first run: ~/.local/share/collage-explorer does not exist yet
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  check_writable();
  open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_db_readonly(db_, "main") == 1) {  // e.g. a read-only file system
    close();
    throw Error(ErrorKind::Io, "cost DB '" + path + "' is read-only; `collage costs` can still list it");
  }
  // Two processes creating the DB at once: switching a new file to WAL can report
  // SQLITE_BUSY without consulting the busy handler, so the setup retries itself.
  double deadline = now_ms() + busy_timeout_ms_;
  for (;;) {
    try {
      exec("PRAGMA journal_mode=WAL;");
      migrate();
      return;
    } catch (const Error& e) {
      if (std::string(e.what()).find(kLocked) == std::string::npos || now_ms() >= deadline) {
        close();
        throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

SqliteStore::~SqliteStore() { sqlite3_close(db_); }

// Waits for another process's write transaction (they last milliseconds), says so
// once if that takes long, and gives up after busy_timeout_ms_.
int SqliteStore::on_busy(void* self, int attempt) {
  auto* db = static_cast<SqliteStore*>(self);
  double now = now_ms();
  if (attempt == 0) db->busy_started_ms_ = now;
  double waited = now - db->busy_started_ms_;
  if (waited >= db->busy_timeout_ms_) return 0;
  if (waited >= CostDb::kBusyNoticeMs && !db->busy_noticed_) {
    db->busy_noticed_ = true;
    std::fprintf(stderr, "collage: waiting for the cost DB '%s': another process is writing to it\n",
                 db->path_.c_str());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 + attempt, 20)));
  return 1;
}

void SqliteStore::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    sqlite3_free(err);
    fail();
  }
}

void SqliteStore::fail() const { throw db_error(db_, path_, busy_timeout_ms_); }

std::pair<std::string, int> SqliteStore::read_meta() const {
  std::pair<std::string, int> meta{"", 0};
  Statement s(db_, path_, busy_timeout_ms_, "SELECT key, value FROM meta;");
  while (s.step()) {
    if (s.text(0) == "app") meta.first = s.text(1);
    if (s.text(0) == "schema_version") meta.second = std::atoi(s.text(1).c_str());
  }
  return meta;
}

// The read-only open's check: what migrate() checks, without writing.
void SqliteStore::check_schema() {
  auto [app, version] = read_meta();
  if (app != kAppId)
    throw Error(ErrorKind::InvalidInput, "cost DB '" + path_ + "': not a Collage cost database");
  if (version != kSchemaVersion)
    throw Error(ErrorKind::InvalidInput,
                "cost DB '" + path_ + "': schema " + std::to_string(version) + ", this build reads " +
                    std::to_string(kSchemaVersion) +
                    (version > kSchemaVersion ? " (written by a newer version)"
                                              : " (open it writable once to upgrade it)"));
}

void SqliteStore::migrate() {
  exec("BEGIN IMMEDIATE;");
  try {
    exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);");
    auto [app, version] = read_meta();
    if (!app.empty() && app != kAppId)
      throw Error(ErrorKind::InvalidInput,
                  "cost DB '" + path_ + "': not a Collage cost database (app '" + app + "')");
    if (app.empty()) {
      Statement count(db_, path_, busy_timeout_ms_,
                      "SELECT count(*) FROM sqlite_master WHERE type='table' AND name != 'meta';");
      count.step();
      if (count.integer(0) > 0)
        throw Error(ErrorKind::InvalidInput,
                    "cost DB '" + path_ + "': not a Collage cost database (foreign tables)");
    }
    if (version > kSchemaVersion)
      throw Error(ErrorKind::InvalidInput, "cost DB '" + path_ + "': written by a newer version (schema " +
                                               std::to_string(version) + ", this build reads up to " +
                                               std::to_string(kSchemaVersion) + ")");
    for (int v = version; v < kSchemaVersion; ++v) exec(kMigrations[v]);
    Statement put(db_, path_, busy_timeout_ms_, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2);");
    put.bind(1, std::string("app"));
    put.bind(2, std::string(kAppId));
    put.step();
    Statement ver(db_, path_, busy_timeout_ms_,
                  "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?1);");
    ver.bind(1, std::to_string(kSchemaVersion));
    ver.step();
    exec("COMMIT;");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK;", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<CostRecord> SqliteStore::find(const CostKey& key) const {
  Statement s(db_, path_, busy_timeout_ms_,
              (std::string("SELECT ") + kColumns +
               " FROM costs WHERE signature = ?1 AND threads = ?2 AND device = ?3;")
                  .c_str());
  s.bind(1, key.signature);
  s.bind(2, key.threads);
  s.bind(3, key.device);
  if (!s.step()) return std::nullopt;
  return read_row(s);
}

void SqliteStore::put_all(const std::vector<CostRecord>& records) {
  exec("BEGIN IMMEDIATE;");
  try {
    Statement s(db_, path_, busy_timeout_ms_,
                (std::string("INSERT OR REPLACE INTO costs (") + kColumns +
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

std::vector<CostRecord> SqliteStore::list(const std::string& backend_filter) const {
  std::string sql = std::string("SELECT ") + kColumns + " FROM costs" +
                    (backend_filter.empty() ? "" : " WHERE backend = ?1") +
                    " ORDER BY backend, label, signature;";
  Statement s(db_, path_, busy_timeout_ms_, sql.c_str());
  if (!backend_filter.empty()) s.bind(1, backend_filter);
  std::vector<CostRecord> out;
  while (s.step()) out.push_back(read_row(s));
  return out;
}

size_t SqliteStore::size() const {
  Statement s(db_, path_, busy_timeout_ms_, "SELECT count(*) FROM costs;");
  s.step();
  return static_cast<size_t>(s.integer(0));
}

std::unique_ptr<CostStore> open_sqlite(const std::string& path, bool read_only) {
  return std::make_unique<SqliteStore>(path, read_only);
}

}  // namespace collage::cost_store
