// The measurement queue end to end (core/tuning/measure_queue.h): real `collage worker`
// and `collage tune --remote` processes on a throw-away PostgreSQL server
// (pg_server_fixture.h), plus the job payload in-process.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <regex>

#include "app/workflow/workflow.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/ir/random_inputs.h"
#include "core/tuning/candidates.h"
#include "core/tuning/host_lock.h"
#include "core/tuning/measure_queue.h"
#include "core/tuning/measurer.h"
#include "core/tuning/pg_connection.h"
#include "tests/unit/child_process.h"
#include "tests/unit/cli_fixture.h"
#include "tests/unit/pg_server_fixture.h"

#ifndef COLLAGE_FAULTY_CLI
#error "COLLAGE_FAULTY_CLI must point at collage_faulty_cli"
#endif

namespace collage::testing {
namespace {

using Clock = std::chrono::steady_clock;

size_t alive_workers(const std::string& url) {
  size_t n = 0;
  for (const WorkerStatus& w : MeasureQueue(url).workers(30)) n += w.alive;
  return n;
}

int64_t scalar(const pg::Connection& db, const std::string& sql) {
  pg::Result r = db.query(sql);
  return r.is_null(0, 0) ? 0 : std::stoll(r.text(0, 0));
}

// "tune: 444 candidates (268 measured, 176 from the cost DB, ..." -> 268.
int measured_count(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"(candidates \((\d+) measured)"))) return -1;
  return std::stoi(m[1]);
}

class RemoteMeasure : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    PgServer& server = PgServer::get();
    if (!server.why_not().empty()) GTEST_SKIP() << server.why_not();
    url_ = server.create_database();
    // Every change to the workers' or the jobs' table NOTIFYs `watch_`, so eventually() wakes
    // on each change of the state it waits for instead of polling (the queue's schema first).
    MeasureQueue schema(url_);
    watch_ = std::make_unique<pg::Connection>(url_, "test DB");
    watch_->exec(
        "CREATE FUNCTION collage_test_changed() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_notify('collage_test', TG_TABLE_NAME); RETURN NULL; END $$;"
        "CREATE TRIGGER workers_changed AFTER INSERT OR UPDATE OR DELETE ON collage_workers "
        "FOR EACH STATEMENT EXECUTE FUNCTION collage_test_changed();"
        "CREATE TRIGGER jobs_changed AFTER INSERT OR UPDATE OR DELETE ON collage_jobs "
        "FOR EACH STATEMENT EXECUTE FUNCTION collage_test_changed();"
        "LISTEN collage_test");
  }
  // Until `condition` (a state of the DB) holds, woken by each change, or `limit` passes.
  bool eventually(const std::function<bool()>& condition,
                  std::chrono::seconds limit = std::chrono::seconds(60)) const {
    const auto deadline = Clock::now() + limit;
    while (!condition())
      if (!watch_->wait_for_notification(deadline)) return condition();
    return true;
  }
  std::vector<std::string> worker_args(const char* binary, const std::string& name,
                                       const std::string& lease) {
    return {binary, "worker", "--cost-db", url_, "--name", name, "--threads", "1", "--lease", lease};
  }
  // A remote tune over native and the faulty backend (its Relu one job), in the background.
  Process faulty_tune(const std::string& model) const {
    return Process({COLLAGE_FAULTY_CLI, "tune", model, "--cost-db", url_, "--remote", "--backends",
                    "native,faulty", "-o", (dir_ / "p.json").string()},
                   {}, (dir_ / "tune.log").string());
  }
  // Until the faulty backend's job is being measured by `worker`.
  bool faulty_job_taken_by(const pg::Connection& db, const std::string& worker) const {
    return eventually([&] {
      return scalar(db,
                    "SELECT count(*) FROM collage_jobs WHERE backend = 'faulty' AND state = 'running' "
                    "AND worker = '" +
                        worker + "'") == 1;
    });
  }
  std::string url_;
  std::unique_ptr<pg::Connection> watch_;
};

// x [1,64] -> Relu -> Neg: one Relu candidate on the faulty backend, its kernel slow
// when COLLAGE_FAULTY_RELU_MS is set.
std::string relu_model() {
  OnnxTestModel m(17);
  m.input("x", {1, 64});
  m.node("Relu", {"x"}, {"r"});
  m.node("Neg", {"r"}, {"y"});
  m.output("y");
  return m.bytes();
}

TEST_F(RemoteMeasure, TwoWorkersAndTwoTunersMeasureEveryCandidateOnce) {
  Process w1(worker_args(COLLAGE_CLI_PATH, "w1", "10"), {}, (dir_ / "w1.log").string());
  Process w2(worker_args(COLLAGE_CLI_PATH, "w2", "10"), {}, (dir_ / "w2.log").string());
  ASSERT_TRUE(eventually([&] { return alive_workers(url_) == 2; })) << w1.log() << w2.log();

  const std::string tune = std::string("tune ") + COLLAGE_SAMPLE_MODEL + " --cost-db '" + url_ +
                           "' --remote -o " + (dir_ / "p.json").string();
  // Two tuners of the same model at once: they share the jobs.
  Process other_tuner({COLLAGE_CLI_PATH, "tune", COLLAGE_SAMPLE_MODEL, "--cost-db", url_, "--remote", "-o",
                       (dir_ / "other.json").string()},
                      {}, (dir_ / "other_tuner.log").string());
  CliResult first = cli(tune);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(other_tuner.wait(), 0) << other_tuner.log();

  pg::Connection db(url_, "test DB");
  // One job per distinct kernel, each claimed once and done, each cost stored once, whichever
  // tuner asked first.
  const int64_t measured = scalar(db, "SELECT count(*) FROM collage_jobs");
  ASSERT_GT(measured, 0);
  EXPECT_LE(measured_count(first.out), measured) << first.out;
  EXPECT_GT(measured_count(first.out), 0) << first.out;
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_jobs WHERE state = 'done'"), measured);
  EXPECT_EQ(scalar(db, "SELECT sum(attempts) FROM collage_jobs"), measured);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_costs"), measured);
  EXPECT_EQ(scalar(db, "SELECT sum(jobs_done) FROM collage_workers"), measured);
  for (const char* name : {"w1", "w2"})
    EXPECT_GT(scalar(db, std::string("SELECT jobs_done FROM collage_workers WHERE name = '") + name + "'"), 0)
        << name << " took no job";
  EXPECT_EQ(first.err.find("locally"), std::string::npos) << first.err;

  // Everything is in the DB now: the second tune measures nothing and queues nothing.
  CliResult second = cli(tune);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(measured_count(second.out), 0) << second.out;
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_jobs"), measured);

  // A cost deleted from the DB (by hand, or imported over): its done job (whose payload
  // was dropped) is queued again with the payload and measured once more.
  const std::string one_signature = db.query("SELECT signature FROM collage_costs LIMIT 1").text(0, 0);
  db.query("DELETE FROM collage_costs WHERE signature = $1", {one_signature});
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_jobs WHERE octet_length(payload) > 0"), 0);
  CliResult third = cli(tune);
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(measured_count(third.out), 1) << third.out;
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_costs"), measured);
  EXPECT_EQ(scalar(db, "SELECT sum(attempts) FROM collage_jobs"), measured + 1);

  CliResult listing = cli("workers --cost-db '" + url_ + "'");
  EXPECT_EQ(listing.exit_code, 0) << listing.err;
  EXPECT_NE(listing.out.find("2 workers; jobs: 0 pending, 0 running, " + std::to_string(measured) + " done"),
            std::string::npos)
      << listing.out;

  w1.signal(SIGTERM);
  w2.signal(SIGTERM);
  EXPECT_EQ(w1.wait(), 0) << w1.log();
  EXPECT_EQ(w2.wait(), 0) << w2.log();
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_workers WHERE state = 'stopped'"), 2);
}

TEST_F(RemoteMeasure, AKilledWorkersJobIsFinishedByAnother) {
  const std::string model = write("relu.onnx", relu_model());
  // Worker a measures the faulty Relu slowly enough to be killed in the middle of it.
  auto a = std::make_unique<Process>(worker_args(COLLAGE_FAULTY_CLI, "a", "2"),
                                     std::vector<std::string>{"COLLAGE_FAULTY_RELU_MS=600000"},
                                     (dir_ / "a.log").string());
  ASSERT_TRUE(eventually([&] { return alive_workers(url_) == 1; })) << a->log();
  Process tuner = faulty_tune(model);
  pg::Connection db(url_, "test DB");
  const std::string faulty_job = "FROM collage_jobs WHERE backend = 'faulty'";
  ASSERT_TRUE(faulty_job_taken_by(db, "a")) << a->log() << tuner.log();
  a->signal(SIGKILL);
  EXPECT_EQ(a->wait(), 128 + SIGKILL);

  Process b(worker_args(COLLAGE_FAULTY_CLI, "b", "2"), {}, (dir_ / "b.log").string());
  ASSERT_EQ(tuner.wait(), 0) << tuner.log() << b.log();
  pg::Result job = db.query("SELECT attempts, worker, state " + faulty_job);
  ASSERT_EQ(job.rows(), 1);
  EXPECT_EQ(job.text(0, 0), "2");  // claimed by a, then again by b once a's lease ran out
  EXPECT_EQ(job.text(0, 1), "b");
  EXPECT_EQ(job.text(0, 2), "done");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_costs WHERE backend = 'faulty' AND valid"), 1);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_jobs WHERE state <> 'done'"), 0);
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait(), 0) << b.log();
}

TEST_F(RemoteMeasure, AStoppedWorkerGivesBackTheJobItIsMeasuring) {
  const std::string model = write("relu.onnx", relu_model());
  // Worker a is stopped (SIGTERM, as Ctrl+C) in the middle of a kernel that would take 10 minutes.
  Process a(worker_args(COLLAGE_FAULTY_CLI, "a", "30"), {"COLLAGE_FAULTY_RELU_MS=600000"},
            (dir_ / "a.log").string());
  ASSERT_TRUE(eventually([&] { return alive_workers(url_) == 1; })) << a.log();
  Process tuner = faulty_tune(model);
  pg::Connection db(url_, "test DB");
  const std::string faulty_job = "FROM collage_jobs WHERE backend = 'faulty'";
  ASSERT_TRUE(faulty_job_taken_by(db, "a")) << a.log() << tuner.log();
  a.signal(SIGTERM);
  ASSERT_EQ(a.wait(std::chrono::seconds(30)), 0) << a.log();
  EXPECT_NE(a.log().find("stopped while measuring, given back to the queue"), std::string::npos) << a.log();
  // Nothing stored for it; the job is unclaimed again, as if a had never taken it.
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_costs WHERE backend = 'faulty'"), 0);
  pg::Result given_back = db.query("SELECT state, worker IS NULL, attempts " + faulty_job);
  ASSERT_EQ(given_back.rows(), 1);
  EXPECT_EQ(given_back.text(0, 0), "pending");
  EXPECT_EQ(given_back.text(0, 1), "t");
  EXPECT_EQ(given_back.text(0, 2), "0");

  Process b(worker_args(COLLAGE_FAULTY_CLI, "b", "30"), {}, (dir_ / "b.log").string());
  ASSERT_EQ(tuner.wait(), 0) << tuner.log() << b.log();
  pg::Result done = db.query("SELECT attempts, worker, state " + faulty_job);
  ASSERT_EQ(done.rows(), 1);
  EXPECT_EQ(done.text(0, 0), "1");
  EXPECT_EQ(done.text(0, 1), "b");
  EXPECT_EQ(done.text(0, 2), "done");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_costs WHERE backend = 'faulty' AND valid"), 1);
  b.signal(SIGTERM);
  EXPECT_EQ(b.wait(), 0) << b.log();
}

TEST_F(RemoteMeasure, AWorkerOfAnotherKindTakesNothing) {
  const std::string model = write("relu.onnx", relu_model());
  Process other(worker_args(COLLAGE_CLI_PATH, "elsewhere", "10"), {"COLLAGE_DEVICE_TAG=another-rack"},
                (dir_ / "other.log").string());
  ASSERT_TRUE(eventually([&] { return alive_workers(url_) == 1; })) << other.log();
  CliResult r = cli("tune " + model + " --cost-db '" + url_ + "' --remote --backends native -o " +
                    (dir_ / "p.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no measurement worker is registered for this machine kind"), std::string::npos)
      << r.err;
  EXPECT_GT(measured_count(r.out), 0) << r.out;  // measured here instead
  pg::Connection db(url_, "test DB");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_jobs"), 0);
  EXPECT_EQ(scalar(db, "SELECT jobs_done FROM collage_workers WHERE name = 'elsewhere'"), 0);
  other.signal(SIGTERM);
  EXPECT_EQ(other.wait(), 0) << other.log();
}

TEST_F(RemoteMeasure, RefinementGenomesAreTimedByAWorker) {
  Process w(worker_args(COLLAGE_CLI_PATH, "w", "10"), {}, (dir_ / "w.log").string());
  ASSERT_TRUE(eventually([&] { return alive_workers(url_) == 1; })) << w.log();
  CliResult r = cli(std::string("tune ") + COLLAGE_SAMPLE_MODEL + " --cost-db '" + url_ +
                    "' --remote --refine --budget 4s --population 4 -o " + (dir_ / "p.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"((\d+) evaluations)"))) << r.out;
  pg::Connection db(url_, "test DB");
  // Every genome measured was a fitness job the worker finished (the cache may answer repeats).
  const int64_t genomes =
      scalar(db, "SELECT count(*) FROM collage_jobs WHERE kind = 'fitness' AND state = 'done'");
  EXPECT_GT(genomes, 0);
  EXPECT_LE(genomes, std::stoll(m[1]));
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_costs WHERE backend = 'placement'"), genomes);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM collage_models"), 1);
  EXPECT_EQ(r.err.find("locally"), std::string::npos) << r.err;
  w.signal(SIGTERM);
  EXPECT_EQ(w.wait(), 0) << w.log();
}

TEST_F(RemoteMeasure, AWorkerRidesOutADatabaseRestart) {
  const std::string model = write("relu.onnx", relu_model());
  Process w(worker_args(COLLAGE_CLI_PATH, "w", "10"), {}, (dir_ / "w.log").string());
  ASSERT_TRUE(eventually([&] { return alive_workers(url_) == 1; })) << w.log();
  ASSERT_TRUE(PgServer::get().restart());  // every connection of the worker is cut
  CliResult r = cli("tune " + model + " --cost-db '" + url_ + "' --remote --backends native -o " +
                    (dir_ / "p.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err << w.log();
  EXPECT_GT(measured_count(r.out), 0) << r.out;
  EXPECT_EQ(r.err.find("locally"), std::string::npos) << r.err;
  pg::Connection db(url_, "test DB");
  EXPECT_EQ(scalar(db, "SELECT jobs_done FROM collage_workers WHERE name = 'w'"), measured_count(r.out));
  w.signal(SIGTERM);
  EXPECT_EQ(w.wait(), 0) << w.log();
  EXPECT_NE(w.log().find("reconnected to the cost DB"), std::string::npos) << w.log();
}

TEST_F(CliTest, RemoteMeasuringNeedsASharedCostDb) {
  const std::string model = write("relu.onnx", relu_model());
  const std::string sqlite = (dir_ / "costs.sqlite").string();
  expect_bad_input("tune " + model + " --cost-db " + sqlite + " --remote -o " + (dir_ / "p.json").string(),
                   "remote measuring needs a shared cost DB");
  expect_bad_input("worker --cost-db " + sqlite, "collage worker needs a shared cost DB");
  expect_bad_input("workers --cost-db " + sqlite, "collage workers needs a shared cost DB");
}

// A job's payload is the candidate alone: run natively, it computes what the same
// nodes compute inside the whole model.
TEST(JobPayload, TheSubModelComputesWhatTheCandidateComputesInTheModel) {
  Graph graph = workflow::load_model(COLLAGE_SAMPLE_MODEL, {});
  std::vector<Tensor> values = reference_values(graph, random_inputs(graph, 7), native::node_evaluator());
  std::vector<Candidate> candidates = enumerate_candidates(graph, all_backends());
  size_t checked = 0;
  for (const Candidate& c : candidates) {
    SubGraph sub = make_subgraph(graph, c.nodes);
    if (sub.node_list.size() < 2 || sub.constants.empty() || checked >= 5) continue;
    std::vector<Tensor> inputs;
    for (ValueId v : sub.inputs) inputs.push_back(values[static_cast<size_t>(v)]);
    // The tuner's reference travels with it; the worker trusts it only for this graph.
    KnownReference known, read_known;
    for (ValueId v : sub.outputs) known.outputs.push_back(values[static_cast<size_t>(v)]);
    known.node_ms.assign(sub.node_list.size(), 0.25);
    Graph model;
    std::vector<Tensor> read_inputs;
    read_job_payload(job_payload(extract_submodel(graph, sub), inputs, &known), "test job", model,
                     read_inputs, &read_known);
    EXPECT_EQ(read_known.node_ms, known.node_ms);
    ASSERT_EQ(read_known.outputs.size(), known.outputs.size());
    for (size_t o = 0; o < known.outputs.size(); ++o)
      EXPECT_TRUE(compare_tensors(read_known.outputs[o], known.outputs[o], Tolerance{0, 0, 0}).ok());
    ASSERT_EQ(model.num_nodes(), static_cast<int32_t>(sub.node_list.size()));
    for (size_t k = 0; k < sub.node_list.size(); ++k)
      EXPECT_EQ(model.node(static_cast<NodeId>(k)).op_type, graph.node(sub.node_list[k]).op_type);
    std::vector<Tensor> sub_values = reference_values(model, read_inputs, native::node_evaluator());
    ASSERT_EQ(model.outputs.size(), sub.outputs.size());
    for (size_t o = 0; o < sub.outputs.size(); ++o) {
      const Tensor& got = sub_values[static_cast<size_t>(model.outputs[o])];
      const Tensor& want = values[static_cast<size_t>(sub.outputs[o])];
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_TRUE(compare_tensors(got, want, Tolerance{0, 0, 0}).ok()) << c.label;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 5u);
}

TEST(JobPayload, ATruncatedPayloadIsRefusedNamingTheJob) {
  Graph graph = workflow::load_model(COLLAGE_SAMPLE_MODEL, {});
  std::vector<Tensor> inputs = random_inputs(graph, 1);
  std::string payload = job_payload(graph, inputs);
  for (size_t cut : {size_t{3}, size_t{20}, payload.size() / 2, payload.size() - 1}) {
    Graph model;
    std::vector<Tensor> read;
    try {
      read_job_payload(payload.substr(0, cut), "job 42", model, read);
      ADD_FAILURE() << "a payload cut at " << cut << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
      EXPECT_NE(std::string(e.what()).find("job 42"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace collage::testing

namespace collage::testing {
namespace {

// Timing sections of every tune and worker on the machine meet at one flock.
TEST(HostMeasureLock, ExcludesOtherProcessesWhileHeld) {
  // Another process: -n gives up at once; -w waits (for tests measuring in parallel).
  auto other_locks = [](const char* how) {
    return std::system((std::string("flock ") + how + " " + HostMeasureLock::path() + " true").c_str()) == 0;
  };
  {
    HostMeasureLock timing(true);
    EXPECT_FALSE(other_locks("-n"));
  }
  EXPECT_TRUE(other_locks("-w 120"));
  HostMeasureLock off(false);  // --share-host: nothing is held
  EXPECT_TRUE(other_locks("-w 120"));
}

}  // namespace
}  // namespace collage::testing
