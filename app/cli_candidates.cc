#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "app/model_loading.h"
#include "backends/registry.h"
#include "core/tuning/candidates.h"

namespace collage::cli {

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

int command_candidates(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, with_model_options({"--backends"}), {"--json"});
  if (args.positional.size() != 1)
    throw Error(ErrorKind::InvalidInput, "usage: collage candidates MODEL [--backends B1,B2] [--json]");
  const std::string& path = args.positional[0];
  std::vector<const BackendSpec*> backends = select_backends(args.get("--backends", ""));
  Graph graph = workflow::load_model(path, parse_load_options(args));
  std::vector<Candidate> candidates = enumerate_candidates(graph, backends);

  if (args.has("--json")) {
    std::cout << "{\n  \"model\": \"" << json_escape(path) << "\",\n  \"nodes\": " << graph.num_nodes()
              << ",\n  \"candidates\": [\n";
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      std::cout << "    {\"backend\": \"" << json_escape(c.backend) << "\", \"label\": \""
                << json_escape(c.label) << "\", \"nodes\": [";
      auto ids = c.nodes.indices();
      for (size_t k = 0; k < ids.size(); ++k) std::cout << (k ? ", " : "") << ids[k];
      std::cout << "], \"node_names\": [";
      for (size_t k = 0; k < ids.size(); ++k)
        std::cout << (k ? ", " : "") << "\"" << json_escape(graph.node(static_cast<NodeId>(ids[k])).name)
                  << "\"";
      std::cout << "]}" << (i + 1 < candidates.size() ? "," : "") << "\n";
    }
    std::cout << "  ],\n  \"unavailable\": [";
    bool first = true;
    for (const BackendSpec* b : all_backends())
      if (const std::string why = unavailable_reason(*b); !why.empty()) {
        std::cout << (first ? "\n" : ",\n") << "    {\"backend\": \"" << json_escape(b->name)
                  << "\", \"reason\": \"" << json_escape(why) << "\"}";
        first = false;
      }
    std::cout << (first ? "]\n}\n" : "\n  ]\n}\n");
    return 0;
  }
  std::printf("model: %s (%d nodes)\n", path.c_str(), graph.num_nodes());
  std::printf("%-18s %10s %8s %8s  %s\n", "backend", "candidates", "fused", "covers", "largest group");
  for (const BackendSpec* b : backends) {
    size_t count = 0, fused = 0, largest = 0;
    std::string largest_label = "-";
    IndexSet covered(graph.nodes.size());
    for (const Candidate& c : candidates) {
      if (c.backend != b->name) continue;
      ++count;
      size_t size = c.nodes.popcount();
      fused += size > 1;
      covered = covered | c.nodes;
      if (size > largest) {
        largest = size;
        largest_label = c.label;
      }
    }
    const std::string when =
        b->min_threads > 1 ? "  (searched at " + std::to_string(b->min_threads) + "+ threads)" : "";
    std::printf("%-18s %10zu %8zu %7zu%%  %s%s\n", b->name.c_str(), count, fused,
                graph.num_nodes() ? 100 * covered.popcount() / static_cast<size_t>(graph.num_nodes()) : 0,
                largest_label.c_str(), when.c_str());
  }
  // Not offered here, and why: the user sees a backend the CPU lacks, not a silent gap.
  if (!args.has("--backends"))
    for (const BackendSpec* b : all_backends())
      if (const std::string why = unavailable_reason(*b); !why.empty())
        std::printf("%-18s unavailable: %s\n", b->name.c_str(), why.c_str());
  return 0;
}

}  // namespace collage::cli
