#include "core/backend_api/kernel_signature.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/backend_api/cpu_isa.h"
#include "core/ir/settings.h"

namespace collage {

namespace {

std::string type_text(const Value& v) {
  if (v.kind != ValueKind::Tensor)
    return std::string(value_kind_name(v.kind)) + "<" + dtype_name(v.dtype) + ">";
  return std::string(dtype_name(v.dtype)) + (v.shape_known ? shape_to_string(v.shape) : "[dynamic]");
}

std::string body_text(const Graph& body);

std::string attr_text(const Attribute& a) {
  std::ostringstream s;
  auto list = [&](const auto& xs) {
    s << '[';
    for (size_t i = 0; i < xs.size(); ++i) s << (i ? "," : "") << xs[i];
    s << ']';
  };
  switch (a.kind) {
    case AttrKind::Int:
      s << a.i;
      break;
    case AttrKind::Float:
      s << a.f;
      break;
    case AttrKind::String:
      s << '"' << a.s << '"';
      break;
    case AttrKind::Ints:
      list(a.ints);
      break;
    case AttrKind::Floats:
      list(a.floats);
      break;
    case AttrKind::Strings:
      list(a.strings);
      break;
    case AttrKind::Tensor:
      s << dtype_name(a.t.dtype()) << shape_to_string(a.t.shape());
      break;
    case AttrKind::Graph:
      s << "graph(" << (a.g ? body_text(*a.g) : std::string()) << ')';
      break;
  }
  return s.str();
}

// The sub-graph's structure: ops, attributes, small constants' values, every type and shape.
std::string structure_text(const Graph& graph, const SubGraph& sub, const std::string& backend,
                           const std::string& backend_version) {
  std::ostringstream s;
  s << backend << '@' << backend_version << '|';
  std::map<ValueId, std::string> names;  // canonical names independent of value names
  for (size_t i = 0; i < sub.inputs.size(); ++i) names[sub.inputs[i]] = "in" + std::to_string(i);
  for (size_t k = 0; k < sub.node_list.size(); ++k) {
    const Node& n = graph.node(sub.node_list[k]);
    if (k) s << ';';
    s << n.op_type << '{';
    bool first = true;
    for (const auto& [key, a] : n.attrs) {  // std::map: sorted keys
      s << (first ? "" : ";") << key << '=' << attr_text(a);
      first = false;
    }
    s << "}(";
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (i) s << ',';
      ValueId v = n.inputs[i];
      if (v == kNoValue) {
        s << '-';
        continue;
      }
      const Value& val = graph.value(v);
      if (val.constant) {
        s << 'c' << ':' << type_text(val);
        // Small constants (pads, shapes, axes, clip bounds) change what the kernel does.
        if (val.constant->size() <= 16) {
          s << '=';
          for (double x : val.constant->to_double_vector()) s << x << ' ';
        }
      } else if (names.count(v)) {
        s << names[v] << ':' << type_text(val);
      } else {
        s << "ext:" << type_text(val);
      }
    }
    s << ")->";
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      ValueId v = n.outputs[o];
      if (v == kNoValue) continue;
      names[v] = "n" + std::to_string(k) + "." + std::to_string(o);
      s << (o ? "," : "") << type_text(graph.value(v));
    }
  }
  s << "|out:";
  for (ValueId v : sub.outputs) s << names[v] << ' ';
  return s.str();
}

}  // namespace

std::string kernel_signature(const Graph& graph, const SubGraph& sub, const std::string& backend,
                             const std::string& backend_version) {
  std::string text = structure_text(graph, sub, backend, backend_version);
  return measured_cold(graph, sub) ? text + "|cold weights" : text;
}

size_t last_level_cache_bytes() {
  static const size_t bytes = [] {
    for (int index = 3; index >= 2; --index) {
      std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
      std::string text;
      if (!(in >> text) || text.empty()) continue;
      size_t scale = 1;
      if (text.back() == 'K') scale = size_t{1} << 10;
      if (text.back() == 'M') scale = size_t{1} << 20;
      size_t value = std::strtoull(text.c_str(), nullptr, 10);
      if (value > 0) return value * scale;
    }
    return size_t{32} << 20;
  }();
  return bytes;
}

size_t cache_kept_between_runs_bytes() {
  return std::min(last_level_cache_bytes(), kSettings.cache_kept_cap_bytes);
}

bool measured_cold(const Graph& graph, const SubGraph& sub) {
  size_t kernel_bytes = 0;
  std::set<ValueId> seen;
  for (NodeId id : sub.node_list)
    for (ValueId v : graph.node(id).inputs)
      if (v != kNoValue && graph.value(v).constant && seen.insert(v).second)
        kernel_bytes += graph.value(v).constant->bytes();
  if (kernel_bytes < kSettings.cold_weight_min_bytes) return false;
  size_t model_bytes = 0;
  for (const Value& v : graph.values)
    if (v.constant) model_bytes += v.constant->bytes();
  return model_bytes > cache_kept_between_runs_bytes();
}

uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string device_fingerprint() {
  static const std::string fingerprint = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model = "unknown-cpu", flags_line, family, model_number;
    while (std::getline(in, line)) {
      auto value = [&] {
        auto c = line.find(':');
        return c == std::string::npos ? std::string() : line.substr(c + 2);
      };
      if (line.rfind("model name", 0) == 0 && model == "unknown-cpu") model = value();
      if (line.rfind("flags", 0) == 0 && flags_line.empty()) flags_line = value();
      if (line.rfind("cpu family", 0) == 0 && family.empty()) family = value();
      if (line.rfind("model\t", 0) == 0 && model_number.empty()) model_number = value();
    }
    // A virtual machine may name every generation alike ("AMD EPYC"): the family and model
    // numbers tell them apart (Zen 4 and Zen 5 run the same AVX-512 code at different speeds).
    if (!family.empty())
      model += " (family " + family + (model_number.empty() ? "" : " model " + model_number) + ")";
    static const std::set<std::string> relevant = {"sse4_2",      "avx",         "avx2",     "fma",
                                                   "f16c",        "avx512f",     "avx512bw", "avx512vl",
                                                   "avx512_vnni", "avx512_bf16", "amx_tile", "neon"};
    std::istringstream fs(flags_line);
    std::vector<std::string> flags;
    for (std::string f; fs >> f;)
      if (relevant.count(f)) flags.push_back(f);
    std::sort(flags.begin(), flags.end());
    std::string out = model + " |";
    for (const auto& f : flags) out += " " + f;
    out += isa_cap_note();
    // A team can tell apart machines the CPU alone does not (BIOS power settings, a
    // noisy neighbour): their costs and measurement jobs are kept apart.
    if (const char* tag = std::getenv("COLLAGE_DEVICE_TAG"); tag && *tag) out += std::string(" | tag ") + tag;
    return out;
  }();
  return fingerprint;
}

namespace {
// A body's whole structure, as a model's (bodies nest).
std::string body_text(const Graph& body) {
  return structure_text(body, make_subgraph(body, all_nodes(body)), "body", "");
}
}  // namespace

std::string model_fingerprint(const Graph& graph) {
  return hex64(fnv1a64(structure_text(graph, make_subgraph(graph, all_nodes(graph)), "model", "")));
}

}  // namespace collage
