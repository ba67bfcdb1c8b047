// One libpq connection, shared by the PostgreSQL cost store and the measurement
// queue: parameterised statements ($1...) that throw Error(Io) naming the database
// (password redacted) and the server's message, and transactions that roll back
// on any exception. Not thread-safe: one connection per thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

struct pg_conn;
struct pg_result;

namespace collage::pg {

// A statement's parameter: text, or raw bytes for a bytea column.
struct Param {
  std::string value;
  bool binary = false;
  Param(std::string v) : value(std::move(v)) {}  // NOLINT: text is the common case
  Param(const char* v) : value(v) {}             // NOLINT
  static Param bytes(std::string v) {
    Param p(std::move(v));
    p.binary = true;
    return p;
  }
};

class Result {
 public:
  explicit Result(pg_result* r) : r_(r) {}
  ~Result();
  Result(Result&& other) noexcept : r_(other.r_) { other.r_ = nullptr; }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;
  int rows() const;
  std::string text(int row, int col) const;  // a binary result's column: its raw bytes
  bool is_null(int row, int col) const;

 private:
  friend class Connection;
  pg_result* r_;
};

class Connection {
 public:
  // Throws Error(Io) "cannot connect to <what> '<url, redacted>': <libpq's reason>".
  Connection(const std::string& url, const std::string& what);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Result query(const std::string& sql, const std::vector<Param>& params = {}) const;
  // As query, with every result column in binary form (bytea as raw bytes).
  Result query_binary(const std::string& sql, const std::vector<Param>& params = {}) const;
  // Parameterless, possibly several statements (a migration).
  void exec(const char* sql) const;

  // Runs `body` between BEGIN and COMMIT; ROLLBACK and rethrow on an exception.
  template <typename F>
  void transaction(F&& body) const {
    exec("BEGIN");
    try {
      body();
      exec("COMMIT");
    } catch (...) {
      rollback();
      throw;
    }
  }

  // Waits on the database's state without polling it: wait_for_notification blocks until a
  // NOTIFY arrives on a channel this connection LISTENs to (exec("LISTEN c")), consuming every
  // pending one, or until `deadline` (false). Throws Error(Io) if the connection breaks.
  bool wait_for_notification(std::chrono::steady_clock::time_point deadline) const;

  // "<what> '<url>'", the prefix of this connection's errors.
  const std::string& where() const { return where_; }

 private:
  Result run(const std::string& sql, const std::vector<Param>& params, int result_format) const;
  void rollback() const noexcept;

  std::string where_;
  pg_conn* conn_ = nullptr;
};

// A schema in collage_meta: `version_key` holds the version, migrations[i] upgrades
// version i to i + 1. Runs under a transaction advisory lock (concurrent first opens do
// not race); refuses a database of another application or a newer version (InvalidInput).
void migrate(const Connection& db, const std::string& version_key,
             const std::vector<const char*>& migrations);

}  // namespace collage::pg
