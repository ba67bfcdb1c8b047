#include "core/tuning/pg_connection.h"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/ir/error.h"
#include "core/tuning/cost_store.h"

namespace collage::pg {
namespace {

constexpr int64_t kMigrationLock = 0x636f6c6c616765;  // "collage"

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result::~Result() { PQclear(r_); }
int Result::rows() const { return PQntuples(r_); }
std::string Result::text(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}
bool Result::is_null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }

Connection::Connection(const std::string& url, const std::string& what)
    : where_(what + " '" + cost_store::redacted(url) + "'") {
  conn_ = PQconnectdb(url.c_str());
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = conn_ ? PQerrorMessage(conn_) : "out of memory";
    PQfinish(conn_);
    conn_ = nullptr;
    throw Error(ErrorKind::Io, "cannot connect to " + where_ + ": " + trim(msg));
  }
  try {
    exec("SET client_min_messages TO WARNING");  // IF NOT EXISTS notices are not news
  } catch (...) {
    PQfinish(conn_);  // the destructor does not run for a constructor that throws
    conn_ = nullptr;
    throw;
  }
}

Connection::~Connection() { PQfinish(conn_); }

Result Connection::run(const std::string& sql, const std::vector<Param>& params, int result_format) const {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (const Param& p : params) {
    values.push_back(p.value.data());
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  Result r(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(),
                        lengths.data(), formats.data(), result_format));
  ExecStatusType st = PQresultStatus(r.r_);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
    throw Error(ErrorKind::Io, where_ + ": " + trim(PQerrorMessage(conn_)));
  return r;
}

Result Connection::query(const std::string& sql, const std::vector<Param>& params) const {
  return run(sql, params, 0);
}

Result Connection::query_binary(const std::string& sql, const std::vector<Param>& params) const {
  return run(sql, params, 1);
}

void Connection::exec(const char* sql) const {
  Result r(PQexec(conn_, sql));
  ExecStatusType st = PQresultStatus(r.r_);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK)
    throw Error(ErrorKind::Io, where_ + ": " + trim(PQerrorMessage(conn_)));
}

bool Connection::wait_for_notification(std::chrono::steady_clock::time_point deadline) const {
  for (;;) {
    if (!PQconsumeInput(conn_)) throw Error(ErrorKind::Io, where_ + ": " + trim(PQerrorMessage(conn_)));
    bool any = false;
    while (PGnotify* n = PQnotifies(conn_)) {
      PQfreemem(n);
      any = true;
    }
    if (any) return true;
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd fd{PQsocket(conn_), POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(std::min<int64_t>(left.count(), 60'000))) < 0 && errno != EINTR)
      throw Error(ErrorKind::Io, where_ + ": waiting for a notification failed");
  }
}

void Connection::rollback() const noexcept { PQclear(PQexec(conn_, "ROLLBACK")); }

void migrate(const Connection& db, const std::string& version_key,
             const std::vector<const char*>& migrations) {
  db.transaction([&] {
    db.query("SELECT pg_advisory_xact_lock($1)", {std::to_string(kMigrationLock)});
    db.exec("CREATE TABLE IF NOT EXISTS collage_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    std::string app;
    int version = 0;
    {
      Result r = db.query("SELECT key, value FROM collage_meta", {});
      for (int i = 0; i < r.rows(); ++i) {
        if (r.text(i, 0) == "app") app = r.text(i, 1);
        if (r.text(i, 0) == version_key) version = std::atoi(r.text(i, 1).c_str());
      }
    }
    const int latest = static_cast<int>(migrations.size());
    if (!app.empty() && app != cost_store::kAppId)
      throw Error(ErrorKind::InvalidInput, db.where() + ": not a Collage cost database (app '" + app + "')");
    if (version > latest)
      throw Error(ErrorKind::InvalidInput, db.where() + ": written by a newer version (" + version_key + " " +
                                               std::to_string(version) + ", this build reads up to " +
                                               std::to_string(latest) + ")");
    for (int v = version; v < latest; ++v) db.exec(migrations[static_cast<size_t>(v)]);
    db.query(
        "INSERT INTO collage_meta(key, value) VALUES ('app', $1) ON CONFLICT (key) DO UPDATE SET value = $1",
        {cost_store::kAppId});
    db.query(
        "INSERT INTO collage_meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = $2",
        {version_key, std::to_string(latest)});
  });
}

}  // namespace collage::pg
