// One conformance suite for both cost stores (core/tuning/cost_store.h): the same
// tests against an SQLite file and a throw-away PostgreSQL server started by the test
// (tests/pg_server.sh; as root it runs as the `postgres` user). Where no server can be
// had the PostgreSQL half is skipped with the reason -- never silently.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>

#include "core/ir/error.h"
#include "core/tuning/cost_db.h"
#include "core/tuning/cost_store.h"
#include "tests/unit/pg_server_fixture.h"
#include "tests/unit/temp_dir.h"

namespace collage {
namespace {

namespace fs = std::filesystem;
using testing::PgServer;
using testing::run_capture;
using testing::ScopedTempDir;

// Raw SQL on the store behind `location`, to play another version or another program.
void raw_sql(const std::string& location, const std::string& sql) {
  if (cost_store::is_postgres_location(location)) {
    PGconn* c = PQconnectdb(location.c_str());
    PQclear(PQexec(c, sql.c_str()));
    PQfinish(c);
    return;
  }
  sqlite3* db = nullptr;
  sqlite3_open(location.c_str(), &db);
  sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

CostRecord record(const std::string& sig, double median, int threads = 1) {
  CostRecord r;
  r.key = {sig, threads, "test-cpu | avx2"};
  r.backend = sig.rfind("x", 0) == 0 ? "xnnpack" : "native";
  r.backend_version = "1";
  r.label = "Relu";
  r.cost.median_ms = median;
  r.cost.p90_ms = median * 1.1;
  r.cost.stddev_ms = median / 7;
  r.cost.samples = 10;
  r.cost.build_ms = 0.25;
  return r;
}

class CostDbConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      PgServer& server = PgServer::get();
      if (!server.why_not().empty()) GTEST_SKIP() << server.why_not();
      location_ = server.create_database();
      meta_ = "collage_meta";
    } else {
      location_ = dir_.file("costs.sqlite");
      meta_ = "meta";
    }
  }
  std::string location_, meta_;
  ScopedTempDir dir_{"collage_costconf"};  // the SQLite file (both stores: the CLI's placements)
};

TEST_P(CostDbConformance, StoresFindsListsAndUpsertsByKey) {
  {
    CostDb db(location_);
    db.put(record("sig-a", 1.5));
    CostRecord bad = record("sig-b", 0);
    bad.cost = Cost::lost("crashed: SIGSEGV");
    db.put(bad);
    db.put(record("x-sig", 0.125, 2));
  }
  CostDb db(location_);  // reopened: persisted
  EXPECT_EQ(db.size(), 3u);
  auto a = db.find({"sig-a", 1, "test-cpu | avx2"});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->cost.median_ms, 1.5);
  EXPECT_EQ(a->cost.p90_ms, 1.5 * 1.1);  // doubles round-trip exactly
  EXPECT_EQ(a->cost.stddev_ms, 1.5 / 7);
  EXPECT_EQ(a->cost.samples, 10);
  EXPECT_EQ(a->backend, "native");
  EXPECT_FALSE(a->measured_at.empty());
  EXPECT_FALSE(db.find({"sig-a", 2, "test-cpu | avx2"}).has_value());  // threads are part of the key
  EXPECT_FALSE(db.find({"sig-a", 1, "other-cpu"}).has_value());        // and the device
  auto b = db.find({"sig-b", 1, "test-cpu | avx2"});
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->cost.invalid_reason, "crashed: SIGSEGV");
  EXPECT_EQ(db.list("xnnpack").size(), 1u);
  db.put(record("sig-a", 2.5));  // same key: replaced, not added
  EXPECT_EQ(db.size(), 3u);
  EXPECT_EQ(db.find({"sig-a", 1, "test-cpu | avx2"})->cost.median_ms, 2.5);
}

TEST_P(CostDbConformance, ExportImportRoundTrips) {
  std::string exported;
  {
    CostDb db(location_);
    db.put_all({record("sig-a", 1.5), record("sig-b", 0.5), record("x-c", 3.0, 4)});
    exported = db.export_json();
  }
  raw_sql(location_, GetParam() == "postgresql" ? "DELETE FROM collage_costs" : "DELETE FROM costs");
  CostDb db(location_);
  EXPECT_EQ(db.size(), 0u);
  EXPECT_EQ(db.import_json(exported), 3u);
  EXPECT_EQ(db.export_json(), exported);
  EXPECT_THROW(db.import_json("{\"format\": \"other\"}"), Error);
}

TEST_P(CostDbConformance, RefusesANewerSchemaAndAForeignDatabase) {
  { CostDb db(location_); }
  raw_sql(location_, "UPDATE " + meta_ + " SET value = '99' WHERE key = 'schema_version'");
  try {
    CostDb db(location_);
    FAIL() << "a newer schema must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("newer version"), std::string::npos) << e.what();
  }
  raw_sql(location_, "UPDATE " + meta_ + " SET value = '1' WHERE key = 'schema_version'");
  raw_sql(location_, "UPDATE " + meta_ + " SET value = 'someone-else' WHERE key = 'app'");
  try {
    CostDb db(location_);
    FAIL() << "a foreign database must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("not a Collage cost database"), std::string::npos) << e.what();
  }
}

// Many writers at once (tuners and workers): every cost lands once, none is lost.
TEST_P(CostDbConformance, ConcurrentWritersLoseNothing) {
  { CostDb db(location_); }  // create the schema once
  constexpr int kWriters = 4, kEach = 60;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.emplace_back([&, w] {
      CostDb db(location_);
      for (int i = 0; i < kEach; ++i) {
        // Half the keys are shared by all writers, half are this writer's own.
        std::string sig =
            i % 2 ? "own-" + std::to_string(w) + "-" + std::to_string(i) : "shared-" + std::to_string(i);
        db.put(record(sig, 1.0 + i));
      }
    });
  for (auto& t : writers) t.join();
  CostDb db(location_);
  std::set<std::string> want;
  for (int w = 0; w < kWriters; ++w)
    for (int i = 0; i < kEach; ++i)
      want.insert(i % 2 ? "own-" + std::to_string(w) + "-" + std::to_string(i)
                        : "shared-" + std::to_string(i));
  EXPECT_EQ(db.size(), want.size());
  for (const std::string& sig : want) EXPECT_TRUE(db.find({sig, 1, "test-cpu | avx2"}).has_value()) << sig;
}

TEST_P(CostDbConformance, AnUnreachableLocationIsAClearError) {
  std::string bad = GetParam() == "postgresql"
                        ? "postgresql://nobody:secret@/nodb?host=/nonexistent/socket&port=1"
                        : "/etc/passwd/costs.sqlite";  // a file where the directory should be
  try {
    CostDb db(bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io) << e.what();
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << "passwords stay out of messages";
  }
}

// The CLI on a shared database: the second tune of a model measures nothing, and
// `collage costs` lists what the first one stored.
TEST_P(CostDbConformance, TheCliTunesIntoItAndReusesItsCosts) {
  const fs::path& work = dir_.path();
  std::string model = std::string(COLLAGE_SAMPLE_MODEL);
  auto tune = [&] {
    int status = 0;
    std::string out = run_capture(std::string(COLLAGE_CLI_PATH) + " tune " + model +
                                      " --backends native,xnnpack --cost-db '" + location_ +
                                      "' --repeat 2 -o " + (work / "p.json").string() + " 2>&1",
                                  &status);
    EXPECT_EQ(status, 0) << out;
    return out;
  };
  std::string first = tune();
  EXPECT_EQ(first.find(" 0 measured now"), std::string::npos) << first;
  std::string second = tune();
  EXPECT_NE(second.find(": 0 measured now"), std::string::npos) << second;
  int status = 0;
  std::string listed =
      run_capture(std::string(COLLAGE_CLI_PATH) + " costs --cost-db '" + location_ + "' 2>&1", &status);
  EXPECT_EQ(status, 0) << listed;
  EXPECT_NE(listed.find(" records"), std::string::npos) << listed;
  EXPECT_EQ(CostDb(location_).list("xnnpack").empty(), false);
}

TEST(CostStore, MessagesNeverCarryAPassword) {
  using cost_store::redacted;
  EXPECT_EQ(redacted("postgresql://collage:s3cr:et@db.example:5432/costs"),
            "postgresql://collage:***@db.example:5432/costs");
  EXPECT_EQ(redacted("postgres://u:p@/db?host=/tmp/sock"), "postgres://u:***@/db?host=/tmp/sock");
  EXPECT_EQ(redacted("postgresql://collage@db:5432/costs"), "postgresql://collage@db:5432/costs");
  EXPECT_EQ(redacted("postgresql://db:5432/costs"), "postgresql://db:5432/costs");
  EXPECT_EQ(redacted("/home/me/costs.sqlite"), "/home/me/costs.sqlite");
}

INSTANTIATE_TEST_SUITE_P(Stores, CostDbConformance, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace collage

namespace collage {
namespace {

// A first run on a fresh machine: ~/.local/share/collage-explorer does not exist yet.
TEST(SqliteCostDb, CreatesTheDirectoriesOfANewDatabase) {
  ScopedTempDir root("collage_new_dirs");
  std::string path = (root.path() / "share" / "collage-explorer" / "costs.sqlite").string();
  {
    CostDb db(path);
    db.put(record("s1", 1.5));
  }
  EXPECT_EQ(CostDb(path).size(), 1u);
}

}  // namespace
}  // namespace collage
