#include "core/tuning/cost_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/ir/error.h"
#include "tests/unit/temp_dir.h"

namespace collage {
namespace {

namespace fs = std::filesystem;

class CostDbTest : public ::testing::Test {
 protected:
  std::string path(const std::string& name = "costs.sqlite") const { return dir_.file(name); }
  testing::ScopedTempDir dir_{"collage_costdb"};
};

CostRecord record(const std::string& sig, double median, int threads = 1) {
  CostRecord r;
  r.key = {sig, threads, "test-cpu | avx2"};
  r.backend = "native";
  r.backend_version = "1";
  r.label = "Relu";
  r.cost.median_ms = median;
  r.cost.p90_ms = median * 1.1;
  r.cost.samples = 10;
  return r;
}

TEST_F(CostDbTest, PersistsAcrossOpens) {
  {
    CostDb db(path());
    db.put(record("sig-a", 1.5));
    CostRecord bad = record("sig-b", 0);
    bad.cost = Cost::invalid("build failed: nope");
    db.put(bad);
  }
  CostDb db(path());
  EXPECT_EQ(db.size(), 2u);
  auto a = db.find({"sig-a", 1, "test-cpu | avx2"});
  ASSERT_TRUE(a.has_value());
  EXPECT_DOUBLE_EQ(a->cost.median_ms, 1.5);
  EXPECT_FALSE(db.find({"sig-a", 2, "test-cpu | avx2"}).has_value());  // thread count is part of the key
  EXPECT_FALSE(db.find({"sig-a", 1, "other-cpu"}).has_value());        // and the device
  auto b = db.find({"sig-b", 1, "test-cpu | avx2"});
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->cost.valid());
  EXPECT_EQ(b->cost.invalid_reason, "build failed: nope");
}

TEST_F(CostDbTest, RefusesNewerSchemaForeignAndCorruptFiles) {
  { CostDb db(path()); }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "UPDATE meta SET value='99' WHERE key='schema_version';", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  try {
    CostDb db(path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }

  ASSERT_EQ(sqlite3_open(path("foreign.sqlite").c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE customers(id INTEGER); INSERT INTO customers VALUES (1);", nullptr, nullptr,
               nullptr);
  sqlite3_close(raw);
  EXPECT_THROW(CostDb db(path("foreign.sqlite")), Error);
  ASSERT_EQ(sqlite3_open(path("foreign.sqlite").c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "SELECT count(*) FROM customers;", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);  // untouched
  sqlite3_finalize(st);
  sqlite3_close(raw);

  std::ofstream(path("garbage.sqlite"), std::ios::binary) << std::string(4096, '\x5a');
  EXPECT_THROW(CostDb db(path("garbage.sqlite")), Error);
}

TEST_F(CostDbTest, TwoProcessesWritingAtOnceLoseNothing) {
  { CostDb db(path()); }
  const int per_process = 150;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      CostDb db(path());
      for (int i = 0; i < per_process; ++i) db.put(record("child-" + std::to_string(i), i));
    } catch (...) {
      _exit(1);
    }
    _exit(0);
  }
  {
    CostDb db(path());
    for (int i = 0; i < per_process; ++i) db.put(record("parent-" + std::to_string(i), i));
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  CostDb db(path());
  EXPECT_EQ(db.size(), static_cast<size_t>(2 * per_process));
}

TEST_F(CostDbTest, ExportImportRoundTripAndMalformedJson) {
  std::string json;
  {
    CostDb db(path());
    db.put_all({record("x", 1.0), record("y", 2.0, 4)});
    json = db.export_json();
  }
  CostDb other(path("other.sqlite"));
  EXPECT_EQ(other.import_json(json), 2u);
  auto y = other.find({"y", 4, "test-cpu | avx2"});
  ASSERT_TRUE(y.has_value());
  EXPECT_DOUBLE_EQ(y->cost.median_ms, 2.0);
  EXPECT_THROW(other.import_json("{not json"), Error);
  EXPECT_THROW(other.import_json(R"({"format": "something-else", "version": 1, "records": []})"), Error);
  EXPECT_THROW(other.import_json(R"({"format": "collage-costs", "version": 999, "records": []})"), Error);
  EXPECT_THROW(
      other.import_json(R"({"format": "collage-costs", "version": 1, "records": [{"signature": "s"}]})"),
      Error);
  EXPECT_EQ(other.size(), 2u);  // failed imports wrote nothing
}

}  // namespace
}  // namespace collage
