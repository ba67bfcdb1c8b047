// A throw-away PostgreSQL server for the tests that need one (tests/pg_server.sh; as
// root it runs as the `postgres` user): one per test process, started on first use in a
// ScopedTempDir, stopped and removed at exit. Where none can be had, why_not() says why
// and the tests skip with that reason -- never silently.
#pragma once

#include <libpq-fe.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "tests/unit/temp_dir.h"

#ifndef COLLAGE_PG_SERVER_SCRIPT
#error "COLLAGE_PG_SERVER_SCRIPT must name tests/pg_server.sh"
#endif

namespace collage::testing {

inline std::string run_capture(const std::string& cmd, int* status) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  *status = ::pclose(p);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// One server for the whole test binary, started on first use, stopped at exit.
class PgServer {
 public:
  static PgServer& get() {
    static PgServer server;
    return server;
  }
  const std::string& why_not() const { return why_not_; }
  // Stops and starts the server (same data): every client connection is cut.
  bool restart() {
    int status = 0;
    run_capture(std::string("sh ") + COLLAGE_PG_SERVER_SCRIPT + " restart " + dir_.path().string(), &status);
    return status == 0;
  }
  // A fresh database on the server; its URL.
  std::string create_database() {
    std::string name = "t" + std::to_string(++databases_);
    PGconn* c = PQconnectdb(admin_url_.c_str());
    PGresult* r = PQexec(c, ("CREATE DATABASE " + name).c_str());
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    std::string err = PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
    if (!ok) throw std::runtime_error("CREATE DATABASE failed: " + err);
    std::string url = admin_url_;
    return url.replace(url.find("/postgres?"), 10, "/" + name + "?");
  }

 private:
  PgServer() {
    int status = 0;
    admin_url_ = run_capture(std::string("sh ") + COLLAGE_PG_SERVER_SCRIPT + " start " + dir_.path().string(),
                             &status);
    if (status != 0 || admin_url_.rfind("postgresql://", 0) != 0)
      why_not_ = "no throw-away PostgreSQL server could be started (tests/pg_server.sh, exit " +
                 std::to_string(WEXITSTATUS(status)) + "; see its stderr above)";
  }
  ~PgServer() {
    int status = 0;
    run_capture(std::string("sh ") + COLLAGE_PG_SERVER_SCRIPT + " stop " + dir_.path().string(), &status);
  }
  ScopedTempDir dir_{"collage_pg"};  // the server's data and socket; what `stop` leaves goes with it
  std::string admin_url_, why_not_;
  int databases_ = 0;
};

}  // namespace collage::testing
