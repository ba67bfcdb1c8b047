#include "app/workflow/measure_worker_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/runtime/artifact.h"
#include "core/search/placement_timing.h"
#include "core/tensor_io/tensor_proto.h"
#include "core/tuning/host_lock.h"
#include "core/tuning/measurer.h"

namespace collage::workflow {
namespace {

namespace fs = std::filesystem;
using worker_channel::kFd;

struct WorkerArgs {
  std::string session;
  pid_t parent = 0;
  size_t bucket = 0;  // which graph of a bucketed session
  MeasureOptions options;
};

WorkerArgs parse_worker_args(int argc, char** argv) {
  WorkerArgs w;
  MeasureOptions& o = w.options;
  for (int a = 2; a + 1 < argc; a += 2) {
    std::string key = argv[a], value = argv[a + 1];
    if (key == "--session")
      w.session = value;
    else if (key == "--bucket")
      w.bucket = std::stoull(value);
    else if (key == "--parent")
      w.parent = static_cast<pid_t>(std::stol(value));
    else if (key == "--threads")
      o.threads = std::stoi(value);
    else if (key == "--warmup")
      o.warmup_runs = std::stoi(value);
    else if (key == "--min-samples")
      o.min_samples = std::stoi(value);
    else if (key == "--max-samples")
      o.max_samples = std::stoi(value);
    else if (key == "--min-time-ms")
      o.min_time_ms = std::stod(value);
    else if (key == "--max-time-ms")
      o.max_time_ms = std::stod(value);
    else if (key == "--atol")
      o.tolerance.atol = std::stod(value);
    else if (key == "--rtol")
      o.tolerance.rtol = std::stod(value);
    else if (key == "--peak-rtol")
      o.tolerance.peak_rtol = std::stod(value);
    else if (key == "--accuracy")
      o.accuracy = parse_accuracy(value);
    else if (key == "--memory-mb")
      o.worker.memory_budget_mb = std::stoll(value);
    else if (key == "--host-lock")
      o.worker.host_exclusive = value != "0";
    else
      throw Error(ErrorKind::InvalidInput, "measure worker: unknown option " + key);
  }
  if (w.session.empty()) throw Error(ErrorKind::InvalidInput, "measure worker: --session is required");
  return w;
}

// MemAvailable (what can be had without swapping others out), else physical memory.
int64_t available_memory_mb() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  while (meminfo >> key >> kb) {
    if (key == "MemAvailable:") return kb / 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page / (1 << 20) : 0;
}

void limit_memory(int64_t budget_mb) {
#if defined(__SANITIZE_ADDRESS__)
  (void)budget_mb;  // ASan reserves terabytes of shadow address space
#else
  if (budget_mb <= 0) budget_mb = available_memory_mb() * 3 / 4;
  if (budget_mb <= 0) return;
  rlimit limit{};
  limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(budget_mb) << 20;
  ::setrlimit(RLIMIT_AS, &limit);
#endif
}

const BackendSpec* backend_named(const std::string& name) {
  for (const BackendSpec* b : all_backends())
    if (b->name == name) return b;
  return nullptr;
}

// "<count> <ids...>" from the stream, as ascending valid node ids; empty on nonsense.
std::vector<NodeId> read_nodes(std::istream& in, const Graph& graph) {
  size_t count = 0;
  in >> count;
  IndexSet set(static_cast<size_t>(graph.num_nodes()));
  for (size_t k = 0; k < count && in; ++k) {
    NodeId n = kNoNode;
    in >> n;
    if (n < 0 || n >= graph.num_nodes()) return {};
    set.add(static_cast<size_t>(n));
  }
  return in ? node_ids(set) : std::vector<NodeId>{};
}

Cost measure(const Measurer& measurer, const Graph& graph, std::istream& request) {
  std::string backend_name;
  request >> backend_name;
  const BackendSpec* backend = backend_named(backend_name);
  std::vector<NodeId> nodes = read_nodes(request, graph);
  if (!backend || nodes.empty()) return Cost::invalid("measure worker: malformed measure request");
  IndexSet set(static_cast<size_t>(graph.num_nodes()), std::vector<size_t>(nodes.begin(), nodes.end()));
  return measurer.measure_in_process(*backend, make_subgraph(graph, set));
}

// What refinement's measured_fitness computes in-process, here in the worker.
Cost fitness(const Graph& graph, const std::vector<Tensor>& inputs, int threads, std::istream& request) {
  int runs = 0;
  size_t count = 0;
  request >> runs >> count;
  Placement placement;
  placement.threads = threads;
  for (size_t k = 0; k < count && request; ++k) {
    PlacedKernel kernel;
    request >> kernel.backend;
    kernel.nodes = read_nodes(request, graph);
    if (kernel.nodes.empty() || !backend_named(kernel.backend))
      return Cost::invalid("measure worker: malformed fitness request");
    placement.kernels.push_back(std::move(kernel));
  }
  if (!request || runs < 1) return Cost::invalid("measure worker: malformed fitness request");
  CompileOptions options;
  options.threads = threads;
  return measured_fitness(graph, all_backends(), options, inputs, runs)(placement);
}

// One graph's state: the measurer refers to a graph of the session file, so a Session is
// built in place and replaced whole. A bucketed session's file holds a graph per shape bucket
// sharing their weights; switching bucket keeps the file.
struct Session {
  std::shared_ptr<const std::vector<ArtifactBucket>> file;
  size_t bucket = 0;
  std::vector<Tensor> inputs;
  std::unique_ptr<Measurer> measurer;
  std::string ready;  // "ready <native ms per node>...\n"
  const Graph& graph() const { return (*file)[bucket].artifact.graph; }
};

// `file` null: read the session's graph file.
std::unique_ptr<Session> load_session(const std::string& dir, const MeasureOptions& options, size_t bucket,
                                      std::shared_ptr<const std::vector<ArtifactBucket>> file) {
  apply_threads(all_backends(), options.threads);
  auto s = std::make_unique<Session>();
  s->file = file ? std::move(file)
                 : std::make_shared<const std::vector<ArtifactBucket>>(
                       load_artifact_buckets((fs::path(dir) / "graph.collage").string()));
  if (bucket >= s->file->size())
    throw Error(ErrorKind::InvalidInput, "measure worker: the session has " +
                                             std::to_string(s->file->size()) + " graph(s), not bucket " +
                                             std::to_string(bucket));
  s->bucket = bucket;
  const Graph& graph = s->graph();
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    s->inputs.push_back(read_tensor_file((fs::path(dir) / ("input_" + std::to_string(i) + ".pb")).string()));
  std::vector<double> node_ms;
  std::vector<Tensor> values;
  std::ifstream known(fs::path(dir) / worker_channel::kKnownNodeMsFile);
  if (known) {  // the parent's reference (a queue job from the tuner): no native run here
    for (double ms; known >> ms;) node_ms.push_back(ms);
    values.resize(graph.values.size());
    for (size_t i = 0; i < graph.inputs.size(); ++i)
      values[static_cast<size_t>(graph.inputs[i])] = s->inputs[i];
    for (size_t o = 0; o < graph.outputs.size(); ++o)
      values[static_cast<size_t>(graph.outputs[o])] =
          read_tensor_file((fs::path(dir) / ("output_" + std::to_string(o) + ".pb")).string());
  } else {
    values = reference_values(graph, s->inputs, native::node_evaluator(), &node_ms);
  }
  s->measurer = std::make_unique<Measurer>(graph, std::move(values), nullptr, options);
  s->ready = "ready";
  for (double ms : node_ms) s->ready += " " + worker_channel::format_double(ms);
  s->ready += "\n";
  return s;
}

int serve(int argc, char** argv) {
  WorkerArgs w = parse_worker_args(argc, argv);
  // A parent that dies (SIGKILL) closes the socket, and a waiting worker sees EOF; one
  // busy in a hanging kernel would never look, so the kernel kills it. (The signal
  // follows the spawning thread: a MeasureWorker is used and destroyed on one thread.)
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (w.parent != 0 && ::getppid() != w.parent) return 1;  // the parent died before prctl
  limit_memory(w.options.worker.memory_budget_mb);
  std::unique_ptr<Session> session = load_session(w.session, w.options, w.bucket, nullptr);
  if (!worker_channel::write_all(kFd, session->ready)) return 1;

  std::string buffer, line;
  while (
      worker_channel::read_line(kFd, buffer, line, std::chrono::steady_clock::time_point::max(), nullptr)) {
    std::istringstream request(line);
    std::string verb;
    request >> verb;
    if (verb == "session") {  // the parent rewrote the session files: a new graph
      request >> w.options.threads;
      size_t bucket = 0;
      std::shared_ptr<const std::vector<ArtifactBucket>> file;
      if (request >> bucket) file = session->file;  // another bucket of the same file
      session.reset();
      session = load_session(w.session, w.options, bucket, std::move(file));
      if (!worker_channel::write_all(kFd, session->ready)) return 1;
      continue;
    }
    const Graph& graph = session->graph();
    // Waits here while another process on the machine times; the parent's limit starts at "timing".
    HostMeasureLock timing(w.options.worker.host_exclusive);
    if (!worker_channel::write_all(kFd, "timing\n")) return 1;
    Cost cost;
    try {
      if (verb == "measure")
        cost = measure(*session->measurer, graph, request);
      else if (verb == "fitness")
        cost = fitness(graph, session->inputs, w.options.threads, request);
      else
        cost = Cost::invalid("measure worker: unknown request '" + verb + "'");
    } catch (const std::bad_alloc&) {
      cost = Cost::lost("out of memory");
    } catch (const std::exception& e) {
      cost = Cost::invalid(std::string("run failed: ") + e.what());
    }
    if (!worker_channel::write_all(kFd, worker_channel::cost_reply(cost))) return 1;
  }
  return 0;  // EOF: the parent is done (or gone)
}

}  // namespace

int enable_measure_workers(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], kMeasureWorkerFlag) != 0) {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) set_default_worker_command({self.string(), kMeasureWorkerFlag});
    return -1;
  }
  // stdout belongs to the parent's output: library chatter goes to stderr.
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  try {
    return serve(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collage measure worker: %s\n", e.what());
    return 2;
  }
}

}  // namespace collage::workflow
