// The cost DB under faults, through the real `collage` binary (COLLAGE_CLI_PATH):
// SIGKILL at random moments, two tunes writing at once, a read-only file and
// directory, a full disk (RLIMIT_FSIZE), a writer holding the lock too long.
// Costs a tune stored are matched by `tune --log-costs` lines ("cost stored: ...;
// signature <FNV-1a 64 of the kernel signature>") against the DB's rows.
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <thread>

#include "cli_fixture.h"
#include "core/backend_api/kernel_signature.h"
#include "core/ir/error.h"
#include "core/tuning/cost_db.h"
#include "resources/samples/zoo.h"
#include "tests/faulty/faulty_model.h"

namespace collage::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct SpawnOptions {
  rlim_t file_size_limit = RLIM_INFINITY;  // bytes; SIGXFSZ ignored so write() fails with EFBIG
  bool drop_dac_override = false;          // root obeys file permissions (tests run as root in CI)
  std::string stderr_file;                 // else a pipe, read by the caller
  std::string tmpdir;                      // TMPDIR: where the measure worker's session goes
};

constexpr int kCannotDropCaps = 99;

// Starts collage in its own process group (the tune and its measure worker).
pid_t spawn_cli(const std::vector<std::string>& args, const SpawnOptions& o, int* stderr_pipe) {
  int fds[2] = {-1, -1};
  if (o.stderr_file.empty() && ::pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int err =
        o.stderr_file.empty() ? fds[1] : ::open(o.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, STDERR_FILENO);
    ::dup2(::open("/dev/null", O_WRONLY), STDOUT_FILENO);
    if (!o.tmpdir.empty()) ::setenv("TMPDIR", o.tmpdir.c_str(), 1);
    if (o.file_size_limit != RLIM_INFINITY) {
      ::signal(SIGXFSZ, SIG_IGN);
      rlimit limit{o.file_size_limit, o.file_size_limit};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    if (o.drop_dac_override) {
      if (::prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE) != 0 ||
          ::prctl(PR_CAPBSET_DROP, CAP_DAC_READ_SEARCH) != 0)
        ::_exit(kCannotDropCaps);
      ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
      __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
      __user_cap_data_struct data[2] = {};
      ::syscall(SYS_capget, &header, data);
      for (auto& d : data) d.inheritable = 0;
      ::syscall(SYS_capset, &header, data);
    }
    std::vector<char*> argv{const_cast<char*>(COLLAGE_CLI_PATH)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(COLLAGE_CLI_PATH, argv.data());
    ::_exit(127);
  }
  if (pid > 0) ::setpgid(pid, pid);  // no race with the kill below
  if (o.stderr_file.empty()) {
    ::close(fds[1]);
    *stderr_pipe = fds[0];
  }
  return pid;
}

// Lines from a pipe, each read bounded by a deadline.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  ~LineReader() { ::close(fd_); }
  // false on EOF (every writer gone) or when the deadline passes (`timed_out`).
  bool next(std::string& line, Clock::time_point deadline, bool* timed_out = nullptr) {
    for (;;) {
      if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return true;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        if (timed_out) *timed_out = true;
        return false;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char chunk[4096];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buffer_;
};

// The signature hash of a "cost stored:" line, or nullopt.
// (No std::regex: GCC 12's -Wmaybe-uninitialized misfires on it under the ASan preset.)
std::optional<uint64_t> stored_hash(const std::string& line) {
  const std::string prefix = "cost stored: ", marker = "; signature ";
  size_t at = line.rfind(marker);
  if (line.rfind(prefix, 0) != 0 || at == std::string::npos) return std::nullopt;
  std::string hex = line.substr(at + marker.size());
  if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return std::nullopt;
  return std::stoull(hex, nullptr, 16);
}

std::vector<uint64_t> stored_hashes(const std::string& text) {
  std::vector<uint64_t> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (auto h = stored_hash(line)) out.push_back(*h);
  return out;
}

// "N candidates: X measured now, Y from the cost DB, ..." -> X (-1 if absent).
long measured_now(const std::string& text) {
  const std::string marker = " measured now, ", head = " candidates: ";
  size_t at = text.find(marker);
  if (at == std::string::npos) return -1;
  size_t begin = text.rfind(head, at);
  if (begin == std::string::npos) return -1;
  std::string number = text.substr(begin + head.size(), at - begin - head.size());
  if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stol(number);
}

// The DB read with SQLite directly: integrity_check's verdict and the rows' signature hashes.
struct DbState {
  std::string integrity;
  std::multiset<uint64_t> hashes;
};

DbState read_db(const std::string& path) {
  DbState state;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    state.integrity = std::string("cannot open: ") + sqlite3_errmsg(db);
    sqlite3_close(db);
    return state;
  }
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA integrity_check;", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW)
    state.integrity += reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_prepare_v2(db, "SELECT signature FROM costs;", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW)
    state.hashes.insert(fnv1a64(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return state;
}

class CostDbFaultTest : public CliTest {
 protected:
  std::string model(const std::string& name = "resnet_small") {
    fs::path p = dir_ / (name + ".onnx");
    if (!fs::exists(p)) samples::build_sample(name).save(p.string());
    return p.string();
  }
  std::vector<std::string> tune_args(const std::string& model_path, const std::string& db) {
    return {"tune",
            model_path,
            "--cost-db",
            db,
            "--min-time-ms",
            "1",
            "--repeat",
            "1",
            "--log-costs",
            "-o",
            (dir_ / ("p" + std::to_string(++outputs_) + ".json")).string()};
  }
  // Runs to the end with stderr in a file; returns the exit code.
  int run(const std::vector<std::string>& args, SpawnOptions o, std::string* err) {
    o.stderr_file = (dir_ / ("err" + std::to_string(++outputs_) + ".txt")).string();
    pid_t pid = spawn_cli(args, o, nullptr);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::ifstream in(o.stderr_file);
    *err = std::string(std::istreambuf_iterator<char>(in), {});
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  int outputs_ = 0;
};

TEST_F(CostDbFaultTest, SigkillAtRandomMomentsKeepsEveryReportedCost) {
  // Orphaned measure workers become our children, so the test can tell they exited.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  unsigned seed = std::random_device{}();
  if (const char* s = std::getenv("COLLAGE_KILL_SEED")) seed = static_cast<unsigned>(std::stoul(s));
  std::printf("kill test seed %u (rerun with COLLAGE_KILL_SEED=%u)\n", seed, seed);
  std::mt19937 rng(seed);
  const std::string db = (dir_ / "costs.sqlite").string(), onnx = model();
  SpawnOptions o;
  o.tmpdir = (dir_ / "tmp").string();  // the killed tunes' session directories land here
  fs::create_directories(o.tmpdir);
  std::set<uint64_t> reported;
  for (int round = 0; round < 6; ++round) {
    size_t after_lines = std::uniform_int_distribution<size_t>(1, 25)(rng);
    int delay_us = std::uniform_int_distribution<int>(0, 20000)(rng);
    bool whole_group = round % 2 == 0;  // else only the tune: its worker must notice and exit
    SCOPED_TRACE("round " + std::to_string(round) + ": kill " + (whole_group ? "the group" : "the tune") +
                 " " + std::to_string(delay_us) + " us after stored cost " + std::to_string(after_lines));
    int fd = -1;
    pid_t pid = spawn_cli(tune_args(onnx, db), o, &fd);
    ASSERT_GT(pid, 0);
    LineReader err(fd);
    auto deadline = Clock::now() + std::chrono::seconds(60);
    std::string line, text;
    size_t stored = 0;
    while (stored < after_lines && err.next(line, deadline)) {
      text += line + "\n";
      if (stored_hash(line)) ++stored;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));  // the random moment
    ::kill(whole_group ? -pid : pid, SIGKILL);
    // EOF once every process holding stderr (the tune, its worker) is gone.
    bool timed_out = false;
    while (err.next(line, Clock::now() + std::chrono::seconds(10), &timed_out)) text += line + "\n";
    EXPECT_FALSE(timed_out) << "a process of the tune is still running after the kill";
    if (timed_out) ::kill(-pid, SIGKILL);
    int status = 0;
    while (::waitpid(-pid, &status, 0) > 0 || errno == EINTR) {  // the tune and any adopted worker
    }
    EXPECT_EQ(errno, ECHILD);
    EXPECT_TRUE(::kill(-pid, 0) != 0 && errno == ESRCH) << "orphan left in process group " << pid;

    DbState state = read_db(db);
    EXPECT_EQ(state.integrity, "ok");
    for (uint64_t h : stored_hashes(text)) {
      reported.insert(h);
      EXPECT_EQ(state.hashes.count(h), 1u) << "reported as stored but not in the DB: " << std::hex << h;
    }
  }
  size_t before = read_db(db).hashes.size();
  EXPECT_GE(before, reported.size());
  std::string err;
  EXPECT_FALSE(fs::is_empty(o.tmpdir));  // a SIGKILLed tune cannot clean up...
  ASSERT_EQ(run(tune_args(onnx, db), o, &err), 0) << err;
  EXPECT_TRUE(fs::is_empty(o.tmpdir)) << "...the next one removes its leftovers";
  DbState after = read_db(db);
  EXPECT_EQ(after.integrity, "ok");
  std::vector<uint64_t> now = stored_hashes(err);
  // Only what was missing is measured: N == distinct total - distinct already stored.
  EXPECT_EQ(measured_now(err), static_cast<long>(after.hashes.size() - before)) << err;
  EXPECT_EQ(now.size(), after.hashes.size() - before);
  for (uint64_t h : now) EXPECT_EQ(reported.count(h), 0u) << "measured again: " << std::hex << h;
  EXPECT_EQ(std::set<uint64_t>(after.hashes.begin(), after.hashes.end()).size(), after.hashes.size());
}

// A worker stuck in a kernel that never returns never reads its socket again: when
// its tune is SIGKILLed, only PR_SET_PDEATHSIG ends it.
TEST_F(CostDbFaultTest, AWorkerInAHangingKernelDiesWithItsTune) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  std::string onnx = write("faulty.onnx", testing::faulty_model(false).bytes());
  SpawnOptions o;
  o.stderr_file = (dir_ / "hang.txt").string();
  std::vector<std::string> args = {
      "tune",          onnx, "--backends", "native,faulty",           "--no-cost-db",
      "--min-time-ms", "1",  "-o",         (dir_ / "p.json").string()};
  // The hang kernel writes its process's pid on this pipe as it starts to hang.
  int hang[2];
  ASSERT_EQ(::pipe(hang), 0);
  // spawn_cli runs COLLAGE_CLI_PATH; the faulty backend lives in COLLAGE_FAULTY_CLI.
  pid_t tune = ::fork();
  ASSERT_GE(tune, 0);
  if (tune == 0) {
    ::setpgid(0, 0);
    ::close(hang[0]);
    int high = ::fcntl(hang[1], F_DUPFD, 100);  // clear of fd 3, the worker's channel
    ::setenv("COLLAGE_FAULTY_HANG_FD", std::to_string(high).c_str(), 1);  // the worker inherits it
    ::dup2(::open(o.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDERR_FILENO);
    ::dup2(::open("/dev/null", O_WRONLY), STDOUT_FILENO);
    std::vector<char*> argv{const_cast<char*>(COLLAGE_FAULTY_CLI)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(COLLAGE_FAULTY_CLI, argv.data());
    ::_exit(127);
  }
  ::close(hang[1]);
  pid_t worker = 0;
  pollfd ready{hang[0], POLLIN, 0};
  if (::poll(&ready, 1, 30000) == 1 && ::read(hang[0], &worker, sizeof worker) != sizeof worker) worker = 0;
  ::close(hang[0]);
  ASSERT_NE(worker, 0) << "no worker reached the hanging kernel";
  // Watch the worker through a pidfd: readable once it has exited.
  int watch = static_cast<int>(::syscall(SYS_pidfd_open, worker, 0));
  ASSERT_GE(watch, 0) << "pidfd_open: " << std::strerror(errno);
  ::kill(tune, SIGKILL);  // the tune only: its worker is ours to watch now
  int status = 0;
  ASSERT_EQ(::waitpid(tune, &status, 0), tune);
  pollfd exited{watch, POLLIN, 0};
  bool gone = ::poll(&exited, 1, 5000) == 1;
  ::close(watch);
  if (!gone) ::kill(worker, SIGKILL);
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  ASSERT_TRUE(gone) << "the worker outlived its tune";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST_F(CostDbFaultTest, TwoTunesOfDifferentModelsIntoOneDbLoseNothing) {
  const std::string db = (dir_ / "shared.sqlite").string();  // fresh: both create it at once
  std::vector<std::string> models = {model("resnet_small"), model("mobilenet_small")};
  std::vector<pid_t> pids;
  std::vector<std::string> files;
  for (const std::string& m : models) {
    SpawnOptions o;
    o.stderr_file = (dir_ / ("concurrent" + std::to_string(pids.size()) + ".txt")).string();
    files.push_back(o.stderr_file);
    pids.push_back(spawn_cli(tune_args(m, db), o, nullptr));
  }
  std::set<uint64_t> all;
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    while (::waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {
    }
    std::ifstream in(files[i]);
    std::string err(std::istreambuf_iterator<char>(in), {});
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << models[i] << ":\n" << err;
    std::vector<uint64_t> stored = stored_hashes(err);
    EXPECT_GT(stored.size(), 0u);
    EXPECT_EQ(measured_now(err), static_cast<long>(stored.size())) << err;  // each tune's own report
    all.insert(stored.begin(), stored.end());
  }
  DbState state = read_db(db);
  EXPECT_EQ(state.integrity, "ok");
  EXPECT_EQ(state.hashes.size(), all.size());
  for (uint64_t h : all) EXPECT_EQ(state.hashes.count(h), 1u) << std::hex << h;
}

CostRecord record(const std::string& sig, double median) {
  CostRecord r;
  r.key = {sig, 1, "test-cpu"};
  r.backend = "native";
  r.backend_version = "1";
  r.label = "Relu";
  r.cost.median_ms = median;
  r.cost.samples = 10;
  return r;
}

// Switching a new file to WAL could fail at once with "database is locked" (no busy
// handler) when another process was creating the same DB: ~1 in 7 pairs did.
TEST_F(CostDbFaultTest, ProcessesCreatingTheDbAtOnceAllOpenIt) {
  const int rounds = 40, processes = 4;
  for (int round = 0; round < rounds; ++round) {
    const std::string path = (dir_ / ("fresh" + std::to_string(round) + ".sqlite")).string();
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
      pid_t child = ::fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        try {
          CostDb(path).put(record("p" + std::to_string(p), p));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "%s\n", e.what());
          ::_exit(1);
        }
        ::_exit(0);
      }
      children.push_back(child);
    }
    for (pid_t child : children) {
      int status = 0;
      ::waitpid(child, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
    }
    EXPECT_EQ(read_db(path).hashes.size(), static_cast<size_t>(processes)) << "round " << round;
  }
}

TEST_F(CostDbFaultTest, ReadOnlyDbIsListedAndRefusedForTuning) {
  fs::path ro = dir_ / "ro";
  fs::create_directories(ro);
  const std::string db = (ro / "costs.sqlite").string();
  { CostDb(db).put_all({record("a", 1), record("b", 2), record("c", 3)}); }
  ::chmod(db.c_str(), 0444);
  ::chmod(ro.c_str(), 0555);  // no -wal/-shm can be created
  SpawnOptions o;
  o.drop_dac_override = ::geteuid() == 0;
  std::string err;
  int rc = run(tune_args(model(), db), o, &err);
  if (rc == kCannotDropCaps) {
    ::chmod(ro.c_str(), 0755);
    GTEST_SKIP() << "root without CAP_SETPCAP: cannot make a file read-only for a child";
  }
  EXPECT_EQ(rc, 2) << err;
  EXPECT_NE(err.find("cost DB '" + db + "' is read-only"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;  // refused before measuring
  EXPECT_EQ(run({"costs", "--cost-db", db, "--import", db}, o, &err), 2) << err;
  EXPECT_NE(err.find("read-only"), std::string::npos) << err;

  ASSERT_EQ(run({"costs", "--cost-db", db}, o, &err), 0) << err;  // listing only reads
  std::string listing = err;
  EXPECT_EQ(run({"costs", "--cost-db", db, "--export", (dir_ / "out.json").string()}, o, &err), 0) << err;
  std::ifstream in(dir_ / "out.json");
  std::string json(std::istreambuf_iterator<char>(in), {});
  for (const char* sig : {"\"a\"", "\"b\"", "\"c\""}) EXPECT_NE(json.find(sig), std::string::npos) << json;
  // Its directory writable again, the read-only file alone is refused the same way.
  ::chmod(ro.c_str(), 0755);
  EXPECT_EQ(run(tune_args(model(), db), o, &err), 2) << err;
  EXPECT_NE(err.find("read-only"), std::string::npos) << err;
  ::chmod(db.c_str(), 0644);
  EXPECT_EQ(read_db(db).hashes.size(), 3u);
}

TEST_F(CostDbFaultTest, FullDiskIsAnErrorNamingTheDbAndKeepsEarlierRows) {
  const std::string db = (dir_ / "full.sqlite").string();
  { CostDb(db).put_all({record("earlier-1", 1), record("earlier-2", 2)}); }
  SpawnOptions o;
  o.file_size_limit = 1 << 20;  // the worker's session (the model, ~0.7 MB) fits; the WAL soon does not
  std::string err;
  EXPECT_EQ(run(tune_args(model(), db), o, &err), 2) << err;
  std::string last = err.substr(err.rfind('\n', err.size() - 2) + 1);
  EXPECT_NE(last.find("collage: i/o error: cost DB '" + db + "': "), std::string::npos) << last;
  EXPECT_NE(last.find("file size limit"), std::string::npos) << last;
  std::vector<uint64_t> stored = stored_hashes(err);
  EXPECT_GT(stored.size(), 0u) << "the limit should be reached mid-tune";
  DbState state = read_db(db);
  EXPECT_EQ(state.integrity, "ok");
  EXPECT_EQ(state.hashes.count(fnv1a64("earlier-1")), 1u);
  EXPECT_EQ(state.hashes.count(fnv1a64("earlier-2")), 1u);
  for (uint64_t h : stored) EXPECT_EQ(state.hashes.count(h), 1u) << std::hex << h;
  EXPECT_EQ(state.hashes.size(), stored.size() + 2);
}

TEST_F(CostDbFaultTest, WriterHoldingTheLockTooLongFailsWithAClearError) {
  const std::string path = (dir_ / "locked.sqlite").string();
  CostDb db(path);
  db.put(record("before", 1));
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr), SQLITE_OK);
  db.set_busy_timeout_ms(CostDb::kBusyNoticeMs + 300);
  ::testing::internal::CaptureStderr();
  try {
    db.put(record("blocked", 2));
    ADD_FAILURE() << "put succeeded while another connection held the write lock";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("cost DB '" + path + "': locked by another process"),
              std::string::npos)
        << e.what();
  }
  std::string notice = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(notice, "collage: waiting for the cost DB '" + path + "': another process is writing to it\n");
  sqlite3_exec(other, "COMMIT;", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_EQ(db.size(), 1u);  // nothing half-written
  EXPECT_FALSE(db.find({"blocked", 1, "test-cpu"}).has_value());
  db.put(record("after", 3));  // the lock released, writing works again
  EXPECT_EQ(db.size(), 2u);
}

}  // namespace
}  // namespace collage::testing
