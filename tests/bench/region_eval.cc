// A graph-level backend's potential on a whole model: every node the
// backend supports goes into regions as large as convexity allows (in practice one
// region for a CNN), the rest runs natively. Prints the median latency over REPEAT
// runs at THREADS threads, the largest difference from the native reference, and
// writes the placement (for `collage export` / collage-run) when -o is given.
// Not part of the suite.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/ir/random_inputs.h"
#include "core/search/placement.h"

using namespace collage;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: collage_region_eval MODEL.onnx BACKEND [REPEAT] [THREADS] [-o placement.json]\n");
    return 2;
  }
  try {
    int repeat = argc > 3 ? std::atoi(argv[3]) : 20, threads = argc > 4 ? std::atoi(argv[4]) : 1;
    std::string out_path = argc > 6 && std::string(argv[5]) == "-o" ? argv[6] : "";
    const BackendSpec* spec = find_backend(argv[2]);
    if (!spec || spec->kind != BackendKind::GraphLevel)
      throw Error(ErrorKind::InvalidInput, "not a graph-level backend");
    ImportOptions options;
    options.evaluator = native::node_evaluator();
    Graph graph = import_onnx_file(argv[1], options);
    set_backend_threads(threads);
    // Maximal runs of consecutive supported nodes (post-DFS order keeps each run convex
    // only if checked): grow a run while it stays convex.
    ConvexityChecker convex(graph);
    Placement p;
    p.model_fingerprint = model_fingerprint(graph);
    p.threads = threads;
    for (const BackendSpec* b : all_backends()) p.backend_versions[b->name] = b->version;
    IndexSet run(graph.nodes.size());
    std::vector<NodeId> run_nodes;
    auto flush = [&] {
      if (!run_nodes.empty())
        p.kernels.push_back({{run_nodes, spec->name, "region"}});  // no cost: timed below
      run_nodes.clear();
      run = IndexSet(graph.nodes.size());
    };
    for (NodeId id = 0; id < graph.num_nodes(); ++id) {
      if (!spec->supports_node(graph, graph.node(id))) {
        flush();
        p.kernels.push_back({{{id}, "native", graph.node(id).op_type}});
        continue;
      }
      IndexSet grown = run;
      grown.add(static_cast<size_t>(id));
      if (!convex.is_convex(grown))
        flush(), grown = IndexSet(graph.nodes.size()), grown.add(static_cast<size_t>(id));
      run = grown;
      run_nodes.push_back(id);
    }
    flush();
    if (!out_path.empty()) std::ofstream(out_path) << placement_to_json(p, graph);
    std::vector<Tensor> inputs = random_inputs(graph, 7);
    Executor reference(graph, native::native_steps(graph));
    std::vector<Tensor> expected = reference.run(inputs);
    CompileOptions co;
    co.threads = threads;
    Executor ex(graph, placement_steps(graph, p, all_backends(), co));
    double max_err = 0;
    std::vector<Tensor> got = ex.run(inputs);
    for (size_t o = 0; o < got.size(); ++o) {
      auto a = got[o].to_double_vector(), b = expected[o].to_double_vector();
      for (size_t i = 0; i < a.size(); ++i) max_err = std::max(max_err, std::fabs(a[i] - b[i]));
    }
    std::vector<double> ms;
    for (int r = 0; r < repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      ex.run(inputs);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    size_t regions = 0, native_nodes = 0;
    for (const PlacedKernel& k : p.kernels) (k.backend == spec->name ? regions : native_nodes) += 1;
    std::printf(
        "%s: median %.3f ms, min %.3f ms over %d runs, %d threads; %zu region(s), %zu native node(s); "
        "max abs error vs native %.3g\n",
        spec->name.c_str(), ms[ms.size() / 2], ms[0], repeat, threads, regions, native_nodes, max_err);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "collage_region_eval: %s\n", e.what());
    return 2;
  }
}
