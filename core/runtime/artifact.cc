#include "core/runtime/artifact.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/ir/byte_hash.h"
#include "core/ir/subgraph.h"

namespace collage {

using nlohmann::json;

namespace {

constexpr char kMagic[8] = {'C', 'O', 'L', 'L', 'A', 'G', 'E', '\x1a'};
constexpr size_t kAlign = 64;
constexpr int kMaxBodyDepth = 32;                       // nesting of control-flow bodies an artifact may hold
constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 34;  // 16 GiB: refuse plans no real model needs

// Header layout (little-endian): magic[8], u32 major, u32 minor, u64 manifest offset,
// u64 manifest bytes, u64 weights offset, u64 weights bytes, u64 checksum, u64 reserved.
struct Header {
  uint32_t major = 0, minor = 0;
  uint64_t manifest_offset = 0, manifest_bytes = 0, weights_offset = 0, weights_bytes = 0, checksum = 0;
};
constexpr size_t kChecksumAt = 48;

void put_u32(std::string& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(std::string& out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_u64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint32_t get_u32(const std::byte* p) { return static_cast<uint32_t>(get_u64(p) & 0xffffffffu); }

// FNV-1a over 64-bit little-endian words (the tail zero-padded), with the
// checksum field read as zero: one multiply per 8 bytes keeps a 100 MB load fast.
uint64_t checksum(const std::byte* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t at = 0; at < size; at += 8) {
    uint64_t word = 0;
    if (at != kChecksumAt) {
      size_t n = std::min<size_t>(8, size - at);
      std::memcpy(&word, data + at, n);  // little-endian hosts only (x86-64, arm64)
    }
    h = (h ^ word) * 1099511628211ull;
    h ^= h >> 29;
  }
  return h ^ size;
}

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

json float_json(float f) {
  if (std::isfinite(f)) return f;
  return std::isnan(f) ? "nan" : (f > 0 ? "inf" : "-inf");
}

// Lays out the weights section. Equal bytes are stored once: the buckets of one model share
// their weights, as the same storage (share_equal_constants) or as separately imported tensors
// with the same contents. The bytes stay in the tensors until copy_to.
class WeightsWriter {
 public:
  json add(const Tensor& t) {
    if (t.dtype() == DType::String || dtype_size(t.dtype()) == 0)
      throw Error(ErrorKind::Unsupported,
                  "artifacts cannot hold tensors of type " + std::string(dtype_name(t.dtype())));
    const std::byte* data = static_cast<const std::byte*>(t.raw());
    const size_t bytes = t.bytes();
    size_t at = SIZE_MAX;
    // The same storage again (buckets whose graphs share their weights): no need to hash it.
    if (auto same = at_address_.find({data, bytes}); same != at_address_.end()) at = same->second;
    if (at == SIZE_MAX) {
      uint64_t key = hash_bytes(data, bytes);
      for (size_t earlier : stored_[key])
        if (pieces_[earlier].bytes == bytes &&
            (bytes == 0 || std::memcmp(pieces_[earlier].data, data, bytes) == 0)) {
          at = pieces_[earlier].at;
          break;
        }
      if (at == SIZE_MAX) {
        at = align_up(size_);
        size_ = at + bytes;
        stored_[key].push_back(pieces_.size());
        pieces_.push_back({at, data, bytes});
      }
      at_address_[{data, bytes}] = at;
    }
    return {{"dtype", static_cast<int>(t.dtype())}, {"shape", t.shape()}, {"offset", at}, {"bytes", bytes}};
  }
  size_t size() const { return size_; }
  // The weights section into `out` (size() bytes, zeroed). The tensors added must still be alive.
  void copy_to(char* out) const {
    for (const Piece& p : pieces_)
      if (p.bytes) std::memcpy(out + p.at, p.data, p.bytes);
  }

 private:
  struct Piece {
    size_t at;
    const std::byte* data;
    size_t bytes;
  };
  struct AddressHash {
    size_t operator()(const std::pair<const std::byte*, size_t>& k) const {
      return std::hash<const void*>()(k.first) ^ (k.second * 0x9e3779b97f4a7c15ull);
    }
  };
  std::vector<Piece> pieces_;  // in offset order; the bytes stay in the tensors until copy_to
  size_t size_ = 0;
  std::unordered_map<uint64_t, std::vector<size_t>> stored_;  // content hash -> pieces
  std::unordered_map<std::pair<const std::byte*, size_t>, size_t, AddressHash> at_address_;  // -> offset
};

json graph_json(const Graph& g, WeightsWriter& weights);

json attribute_json(const Attribute& a, WeightsWriter& weights) {
  switch (a.kind) {
    case AttrKind::Int:
      return {{"i", a.i}};
    case AttrKind::Float:
      return {{"f", float_json(a.f)}};
    case AttrKind::String:
      return {{"s", a.s}};
    case AttrKind::Ints:
      return {{"ints", a.ints}};
    case AttrKind::Floats: {
      json list = json::array();
      for (float f : a.floats) list.push_back(float_json(f));
      return {{"floats", list}};
    }
    case AttrKind::Strings:
      return {{"strings", a.strings}};
    case AttrKind::Tensor:
      return {{"tensor", weights.add(a.t)}};
    case AttrKind::Graph:
      return {{"graph", graph_json(*a.g, weights)}};
  }
  return {};
}

// A graph: the plan's own or a body (bodies nest as attributes of their nodes).
json graph_json(const Graph& g, WeightsWriter& weights) {
  json values = json::array();
  for (const Value& v : g.values) {
    json jv = {{"name", v.name},
               {"dtype", static_cast<int>(v.dtype)},
               {"shape", v.shape},
               {"shape_known", v.shape_known}};
    if (v.kind != ValueKind::Tensor) jv["kind"] = static_cast<int>(v.kind);
    if (v.constant) jv["weight"] = weights.add(*v.constant);
    values.push_back(std::move(jv));
  }
  json nodes = json::array();
  for (const Node& n : g.nodes) {
    json attrs = json::object();
    for (const auto& [key, a] : n.attrs) attrs[key] = attribute_json(a, weights);
    json jn = {{"name", n.name},     {"op", n.op_type},      {"domain", n.domain}, {"opset", n.opset},
               {"inputs", n.inputs}, {"outputs", n.outputs}, {"attrs", attrs}};
    if (n.captured) jn["captured"] = n.captured;
    nodes.push_back(std::move(jn));
  }
  return {{"name", g.name},       {"opsets", g.opsets}, {"inputs", g.inputs},
          {"outputs", g.outputs}, {"values", values},   {"nodes", nodes}};
}

json tensor_info_json(const std::vector<ArtifactTensorInfo>& list) {
  json out = json::array();
  for (const ArtifactTensorInfo& t : list)
    out.push_back({{"name", t.name}, {"dtype", static_cast<int>(t.dtype)}, {"shape", t.shape}});
  return out;
}

}  // namespace

Artifact native_artifact(const Graph& graph) {
  Artifact a;
  a.graph = graph;
  for (NodeId n = 0; n < graph.num_nodes(); ++n) a.kernels.push_back({{n}, "native", graph.node(n).op_type});
  for (ValueId v : graph.inputs)
    a.info.inputs.push_back({graph.value(v).name, graph.value(v).dtype, graph.value(v).shape});
  for (ValueId v : graph.outputs)
    a.info.outputs.push_back({graph.value(v).name, graph.value(v).dtype, graph.value(v).shape});
  return a;
}

namespace {

json kernels_json(const std::vector<KernelGroup>& kernels) {
  json plan = json::array();
  for (const KernelGroup& k : kernels)
    plan.push_back({{"backend", k.backend}, {"label", k.label}, {"nodes", k.nodes}});
  return plan;
}

json bodies_json(const std::vector<ArtifactBodyPlan>& bodies) {
  json out = json::array();
  for (const ArtifactBodyPlan& b : bodies)
    out.push_back({{"node", b.node},
                   {"body", b.body},
                   {"plan", kernels_json(b.kernels)},
                   {"bodies", bodies_json(b.bodies)}});
  return out;
}

// One plan's part of the manifest: its tensors, placement, graph, kernels and memory plan.
json plan_json(const Artifact& artifact, WeightsWriter& weights) {
  const ArtifactInfo& info = artifact.info;
  json plan = kernels_json(artifact.kernels);
  json buffers = json::array();
  for (const MemoryPlan::Buffer& b : artifact.memory_plan.buffers) buffers.push_back({b.bytes, b.offset});
  json out = {
      {"inputs", tensor_info_json(info.inputs)},
      {"outputs", tensor_info_json(info.outputs)},
      {"placement", json::parse(info.placement_json.empty() ? "null" : info.placement_json)},
      {"graph", graph_json(artifact.graph, weights)},
      {"plan", plan},
      {"memory_plan",
       {{"arena_bytes", artifact.memory_plan.arena_bytes},
        {"unplanned_bytes", info.unplanned_bytes},
        {"buffers", buffers}}},
  };
  if (!artifact.bodies.empty()) out["bodies"] = bodies_json(artifact.bodies);
  return out;
}

}  // namespace

std::string serialize_artifact(const Artifact& artifact) {
  return serialize_artifact({{DimValues{}, artifact}});
}

std::string serialize_artifact(const std::vector<ArtifactBucket>& buckets) {
  if (buckets.empty()) throw Error(ErrorKind::InvalidInput, "an artifact needs at least one plan");
  const ArtifactInfo& info = buckets.front().artifact.info;
  const bool bucketed = buckets.size() > 1;
  const int major = bucketed ? kArtifactMajor : 1;
  std::map<std::string, std::string> backend_versions;
  for (const ArtifactBucket& b : buckets)
    backend_versions.insert(b.artifact.info.backend_versions.begin(), b.artifact.info.backend_versions.end());
  WeightsWriter weights;
  json manifest = {
      {"format", "collage-artifact"},
      {"version", std::to_string(major) + "." + std::to_string(kArtifactMinor)},
      {"device", info.device},
      {"threads", info.threads},
      {"backends", backend_versions},
  };
  if (!bucketed) {
    manifest["model"] = {{"name", info.model_name}, {"fingerprint", info.model_fingerprint}};
    manifest.update(plan_json(buckets.front().artifact, weights));
  } else {
    manifest["model"] = {{"name", info.model_name}};
    json list = json::array();
    for (const ArtifactBucket& b : buckets) {
      if (b.dims.empty()) throw Error(ErrorKind::InvalidInput, "a plan among several needs its dims");
      json jb = {{"dims", b.dims}, {"fingerprint", b.artifact.info.model_fingerprint}};
      jb.update(plan_json(b.artifact, weights));
      list.push_back(std::move(jb));
    }
    manifest["buckets"] = std::move(list);
  }
  std::string text = manifest.dump();
  size_t manifest_at = artifact_detail::kHeaderBytes;
  size_t weights_at = align_up(manifest_at + text.size());
  std::string out(weights_at + weights.size(), '\0');
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put_u32(out, 8, static_cast<uint32_t>(major));
  put_u32(out, 12, kArtifactMinor);
  put_u64(out, 16, manifest_at);
  put_u64(out, 24, text.size());
  put_u64(out, 32, weights_at);
  put_u64(out, 40, weights.size());
  std::memcpy(out.data() + manifest_at, text.data(), text.size());
  weights.copy_to(out.data() + weights_at);
  artifact_detail::reseal(out);
  return out;
}

void write_artifact(const Artifact& artifact, const std::string& path) {
  write_artifact(std::vector<ArtifactBucket>{{DimValues{}, artifact}}, path);
}

void write_artifact(const std::vector<ArtifactBucket>& buckets, const std::string& path) {
  std::string bytes = serialize_artifact(buckets);
  // Write next to the target and rename, so a failed export never leaves half a file.
  std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::string why = std::strerror(errno);  // e.g. "No space left on device", "File too large"
      out.close();
      std::remove(tmp.c_str());
      throw Error(ErrorKind::Io, "cannot write artifact '" + path + "': " + why);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorKind::Io, "cannot write artifact '" + path + "'");
  }
}

void artifact_detail::reseal(std::string& bytes) {
  if (bytes.size() < kHeaderBytes) return;
  put_u64(bytes, kChecksumAt, checksum(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
}

// ---- loading ----

namespace {

class Reader {
 public:
  // `data` (`size` bytes) stays valid as long as `owner` lives.
  Reader(std::byte* data, size_t size, std::shared_ptr<const void> owner, std::string origin)
      : data_(data), size_(size), owner_(std::move(owner)), origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorKind::InvalidInput, "artifact '" + origin_ + "': " + what);
  }

  Header header() const {
    const std::byte* p = data_;
    if (size_ < artifact_detail::kHeaderBytes || std::memcmp(p, kMagic, sizeof kMagic) != 0)
      fail(size_ < sizeof kMagic || std::memcmp(p, kMagic, sizeof kMagic) != 0
               ? "not a Collage artifact (bad magic)"
               : "truncated header");
    Header h;
    h.major = get_u32(p + 8);
    h.minor = get_u32(p + 12);
    h.manifest_offset = get_u64(p + 16);
    h.manifest_bytes = get_u64(p + 24);
    h.weights_offset = get_u64(p + 32);
    h.weights_bytes = get_u64(p + 40);
    h.checksum = get_u64(p + kChecksumAt);
    if (h.major > static_cast<uint32_t>(kArtifactMajor))
      fail("format version " + std::to_string(h.major) + "." + std::to_string(h.minor) +
           " is newer than this runtime reads (" + std::to_string(kArtifactMajor) +
           ".x); use a newer collage runtime");
    if (h.major < 1) fail("format version " + std::to_string(h.major) + " is not a released version");
    uint64_t expected = h.weights_offset + h.weights_bytes;
    if (h.manifest_offset != artifact_detail::kHeaderBytes || h.manifest_bytes > size_ ||
        h.weights_offset < h.manifest_offset + h.manifest_bytes || h.weights_offset % kAlign != 0 ||
        h.weights_bytes > size_ || expected != size_)
      fail(size_ < expected && h.weights_offset <= size_
               ? "truncated: " + std::to_string(size_) + " of " + std::to_string(expected) + " bytes"
               : "corrupt header (section offsets do not fit the file)");
    if (checksum(p, size_) != h.checksum) fail("checksum mismatch: the file is corrupt");
    return h;
  }

  const std::string& origin() const { return origin_; }
  std::byte* data() const { return data_; }
  const std::shared_ptr<const void>& owner() const { return owner_; }

 private:
  std::byte* data_;
  size_t size_;
  std::shared_ptr<const void> owner_;
  std::string origin_;
};

int64_t int_in(const json& j, int64_t lo, int64_t hi, const char* what) {
  int64_t v = j.get<int64_t>();
  if (v < lo || v > hi)
    throw Error(ErrorKind::InvalidInput, std::string(what) + " " + std::to_string(v) + " is out of range");
  return v;
}

float float_from(const json& j) {
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<float>::infinity();
    if (s == "-inf") return -std::numeric_limits<float>::infinity();
    throw Error(ErrorKind::InvalidInput, "bad float '" + s + "'");
  }
  return j.get<float>();
}

Shape shape_from(const json& j) {
  Shape s = j.get<Shape>();
  shape_size(s);  // rejects negative dims and overflow
  return s;
}

class ManifestParser {
 public:
  ManifestParser(const Reader& reader, const Header& h) : reader_(reader), h_(h) {}

  Tensor weight(const json& j) {
    DType dtype = dtype_from_onnx(static_cast<int>(j.at("dtype").get<int64_t>()));
    Shape shape = shape_from(j.at("shape"));
    uint64_t offset = j.at("offset").get<uint64_t>(), bytes = j.at("bytes").get<uint64_t>();
    if (dtype_size(dtype) == 0 || bytes != static_cast<uint64_t>(shape_size(shape)) * dtype_size(dtype))
      throw Error(ErrorKind::InvalidInput, "weight size does not match its shape");
    if (offset % kAlign != 0 || offset > h_.weights_bytes || bytes > h_.weights_bytes - offset)
      throw Error(ErrorKind::InvalidInput, "weight lies outside the weights section");
    std::byte* at = reader_.data() + h_.weights_offset + offset;
    return Tensor(dtype, std::move(shape), std::make_shared<Storage>(at, bytes, reader_.owner()));
  }

  Attribute attribute(const json& j, int depth) {
    Attribute a;
    if (!j.is_object() || j.size() != 1)
      throw Error(ErrorKind::InvalidInput, "an attribute must have one field");
    const std::string& kind = j.begin().key();
    const json& v = j.begin().value();
    if (kind == "i")
      a = Attribute::of_int(v.get<int64_t>());
    else if (kind == "f")
      a = Attribute::of_float(float_from(v));
    else if (kind == "s")
      a = Attribute::of_string(v.get<std::string>());
    else if (kind == "ints")
      a = Attribute::of_ints(v.get<std::vector<int64_t>>());
    else if (kind == "floats") {
      std::vector<float> fs;
      for (const json& f : v) fs.push_back(float_from(f));
      a = Attribute::of_floats(std::move(fs));
    } else if (kind == "strings") {
      a.kind = AttrKind::Strings;
      a.strings = v.get<std::vector<std::string>>();
    } else if (kind == "tensor") {
      a.kind = AttrKind::Tensor;
      a.t = weight(v);
    } else if (kind == "graph") {
      a = Attribute::of_graph(graph(v, depth + 1));
    } else {
      throw Error(ErrorKind::InvalidInput, "unknown attribute kind '" + kind + "'");
    }
    return a;
  }

  std::vector<ArtifactBucket> parse(const json& m) {
    if (m.at("format").get<std::string>() != "collage-artifact")
      throw Error(ErrorKind::InvalidInput, "the manifest is not a collage-artifact manifest");
    ArtifactInfo common;
    common.major = static_cast<int>(h_.major);
    common.minor = static_cast<int>(h_.minor);
    common.model_name = m.at("model").at("name").get<std::string>();
    common.device = m.at("device").get<std::string>();
    common.threads = static_cast<int>(int_in(m.at("threads"), 1, 1024, "thread count"));
    common.backend_versions = m.at("backends").get<std::map<std::string, std::string>>();
    std::vector<ArtifactBucket> out;
    if (h_.major == 1) {  // one plan, its fields beside the common ones
      common.model_fingerprint = m.at("model").at("fingerprint").get<std::string>();
      out.push_back({DimValues{}, plan(m, common)});
      return out;
    }
    const json& buckets = m.at("buckets");
    if (!buckets.is_array() || buckets.empty())
      throw Error(ErrorKind::InvalidInput, "the manifest's \"buckets\" must be a non-empty list");
    for (const json& jb : buckets) {
      ArtifactBucket b;
      for (const auto& [name, value] : jb.at("dims").items())
        b.dims[name] = int_in(value, 1, int64_t{1} << 31, "bucket dim");
      if (b.dims.empty()) throw Error(ErrorKind::InvalidInput, "a bucket has no dims");
      for (const ArtifactBucket& earlier : out)
        if (earlier.dims == b.dims)
          throw Error(ErrorKind::InvalidInput, "bucket " + bucket_label(b.dims) + " is listed twice");
      ArtifactInfo info = common;
      info.model_fingerprint = jb.at("fingerprint").get<std::string>();
      b.artifact = plan(jb, info);
      for (const ArtifactBucket& earlier : out)
        if (earlier.artifact.info.inputs.size() == b.artifact.info.inputs.size() &&
            std::equal(earlier.artifact.info.inputs.begin(), earlier.artifact.info.inputs.end(),
                       b.artifact.info.inputs.begin(),
                       [](const ArtifactTensorInfo& x, const ArtifactTensorInfo& y) {
                         return x.name == y.name && x.shape == y.shape;
                       }))
          throw Error(ErrorKind::InvalidInput, "buckets " + bucket_label(earlier.dims) + " and " +
                                                   bucket_label(b.dims) + " take the same input shapes");
      out.push_back(std::move(b));
    }
    return out;
  }

  // One plan from `m` (the manifest for version 1, a bucket for version 2).
  Artifact plan(const json& m, const ArtifactInfo& common) {
    Artifact art;
    ArtifactInfo& info = art.info;
    info = common;
    info.placement_json = m.at("placement").dump(2);
    info.unplanned_bytes = m.at("memory_plan").at("unplanned_bytes").get<size_t>();

    art.graph = graph(m.at("graph"), 0);
    const Graph& g = art.graph;
    for (ValueId id : g.inputs)
      info.inputs.push_back({g.value(id).name, g.value(id).dtype, g.value(id).shape});
    for (ValueId id : g.outputs)
      info.outputs.push_back({g.value(id).name, g.value(id).dtype, g.value(id).shape});

    art.kernels = kernels(m.at("plan"), g);
    if (m.contains("bodies")) art.bodies = body_plans(m.at("bodies"), g, 0);
    const json& jm = m.at("memory_plan");
    MemoryPlan& plan = art.memory_plan;
    plan.arena_bytes = jm.at("arena_bytes").get<size_t>();
    if (plan.arena_bytes > kMaxArenaBytes)
      throw Error(ErrorKind::InvalidInput, "the memory plan's arena is implausibly large");
    for (const json& jb : jm.at("buffers")) {
      MemoryPlan::Buffer b{jb.at(0).get<int64_t>(), jb.at(1).get<int64_t>()};
      if (b.bytes < 0 || (b.offset != MemoryPlan::kHeap &&
                          (b.offset < 0 || static_cast<uint64_t>(b.offset) + static_cast<uint64_t>(b.bytes) >
                                               plan.arena_bytes)))
        throw Error(ErrorKind::InvalidInput, "a memory plan buffer lies outside the arena");
      plan.buffers.push_back(b);
    }
    return art;
  }

  // Kernels covering every node of `g` once, node ids ascending within each.
  std::vector<KernelGroup> kernels(const json& jplan, const Graph& g) {
    std::vector<KernelGroup> out;
    std::vector<int> covered(g.nodes.size(), 0);
    for (const json& jk : jplan) {
      KernelGroup k;
      k.backend = jk.at("backend").get<std::string>();
      k.label = jk.at("label").get<std::string>();
      for (const json& id : jk.at("nodes")) {
        NodeId n = static_cast<NodeId>(int_in(id, 0, g.num_nodes() - 1, "node id"));
        if (!k.nodes.empty() && n <= k.nodes.back())
          throw Error(ErrorKind::InvalidInput, "kernel node ids must ascend");
        if (covered[static_cast<size_t>(n)]++)
          throw Error(ErrorKind::InvalidInput, "node " + std::to_string(n) + " is in two kernels");
        k.nodes.push_back(n);
      }
      if (k.nodes.empty()) throw Error(ErrorKind::InvalidInput, "a kernel has no nodes");
      out.push_back(std::move(k));
    }
    for (size_t n = 0; n < covered.size(); ++n)
      if (!covered[n]) throw Error(ErrorKind::InvalidInput, "node '" + g.nodes[n].name + "' is in no kernel");
    return out;
  }

  // The placed bodies of `g`'s control nodes, each checked against the body it names.
  std::vector<ArtifactBodyPlan> body_plans(const json& jbodies, const Graph& g, int depth) {
    if (depth > kMaxBodyDepth) throw Error(ErrorKind::InvalidInput, "placed bodies nest too deeply");
    std::vector<ArtifactBodyPlan> out;
    for (const json& jb : jbodies) {
      ArtifactBodyPlan b;
      b.node = static_cast<NodeId>(int_in(jb.at("node"), 0, g.num_nodes() - 1, "body's node id"));
      b.body = jb.at("body").get<std::string>();
      const Node& n = g.node(b.node);
      auto it = n.attrs.find(b.body);
      if (it == n.attrs.end() || it->second.kind != AttrKind::Graph)
        throw Error(ErrorKind::InvalidInput, "node '" + n.name + "' has no body '" + b.body + "'");
      for (const ArtifactBodyPlan& earlier : out)
        if (earlier.node == b.node && earlier.body == b.body)
          throw Error(ErrorKind::InvalidInput,
                      "body '" + b.body + "' of node '" + n.name + "' is placed twice");
      b.kernels = kernels(jb.at("plan"), *it->second.g);
      b.bodies = body_plans(jb.at("bodies"), *it->second.g, depth + 1);
      out.push_back(std::move(b));
    }
    return out;
  }

  // A plan's graph or a body (`depth`: how deep in bodies; bounded against hostile nesting).
  Graph graph(const json& jg, int depth) {
    if (depth > kMaxBodyDepth) throw Error(ErrorKind::InvalidInput, "bodies nest too deeply");
    Graph g;
    g.name = jg.at("name").get<std::string>();
    g.opsets = jg.at("opsets").get<std::map<std::string, int>>();
    const json& jvalues = jg.at("values");
    const int64_t num_values = static_cast<int64_t>(jvalues.size());
    for (const json& jv : jvalues) {
      Value v;
      v.name = jv.at("name").get<std::string>();
      int dtype = static_cast<int>(jv.at("dtype").get<int64_t>());
      v.dtype = dtype == 0 ? DType::Undefined : dtype_from_onnx(dtype);
      v.shape = shape_from(jv.at("shape"));
      v.shape_known = jv.at("shape_known").get<bool>();
      if (jv.contains("kind")) {
        const int64_t kind = jv.at("kind").get<int64_t>();
        if (kind < 0 || kind > static_cast<int64_t>(ValueKind::OptionalSequence))
          throw Error(ErrorKind::InvalidInput, "value '" + v.name + "' has an unknown kind");
        v.kind = static_cast<ValueKind>(kind);
        if (v.kind != ValueKind::Tensor && v.shape_known)
          throw Error(ErrorKind::InvalidInput,
                      "value '" + v.name + "' is a " + value_kind_name(v.kind) + " with a static shape");
      }
      if (jv.contains("weight")) v.constant = weight(jv.at("weight"));
      if (v.name.empty()) throw Error(ErrorKind::InvalidInput, "a value has no name");
      g.add_value(std::move(v));  // indexed by name: find_value works on a loaded plan
    }
    for (const json& jn : jg.at("nodes")) {
      Node n;
      n.name = jn.at("name").get<std::string>();
      n.op_type = jn.at("op").get<std::string>();
      n.domain = jn.at("domain").get<std::string>();
      n.opset = static_cast<int>(jn.at("opset").get<int64_t>());
      for (const json& id : jn.at("inputs"))
        n.inputs.push_back(static_cast<ValueId>(int_in(id, -1, num_values - 1, "value id")));
      for (const json& id : jn.at("outputs"))
        n.outputs.push_back(static_cast<ValueId>(int_in(id, 0, num_values - 1, "value id")));
      for (const auto& [key, ja] : jn.at("attrs").items()) n.attrs[key] = attribute(ja, depth);
      if (jn.contains("captured"))
        n.captured = static_cast<int>(
            int_in(jn.at("captured"), 0, static_cast<int64_t>(n.inputs.size()), "captured count"));
      g.nodes.push_back(std::move(n));
    }
    for (const json& id : jg.at("inputs"))
      g.inputs.push_back(static_cast<ValueId>(int_in(id, 0, num_values - 1, "value id")));
    for (const json& id : jg.at("outputs"))
      g.outputs.push_back(static_cast<ValueId>(int_in(id, 0, num_values - 1, "value id")));
    std::vector<int> producers(g.values.size(), 0);
    for (const Node& n : g.nodes)
      for (ValueId out : n.outputs)
        if (++producers[static_cast<size_t>(out)] > 1 || g.value(out).constant)
          throw Error(ErrorKind::InvalidInput, "value '" + g.value(out).name + "' is produced twice");
    g.rebuild_links();
    g.validate();
    return g;
  }

 private:
  const Reader& reader_;
  Header h_;
};

std::vector<ArtifactBucket> parse_file(std::byte* data, size_t size, std::shared_ptr<const void> owner,
                                       const std::string& origin) {
  Reader reader(data, size, std::move(owner), origin);
  Header h = reader.header();
  const char* text = reinterpret_cast<const char*>(reader.data() + h.manifest_offset);
  try {
    json manifest = json::parse(text, text + h.manifest_bytes);
    return ManifestParser(reader, h).parse(manifest);
  } catch (const json::exception& e) {
    reader.fail(std::string("malformed manifest: ") + e.what());
  } catch (const Error& e) {
    reader.fail(e.what());
  }
}

// A private, copy-on-write mapping of the whole file: weights are used in place
// and pages come straight from the page cache (a zero-filled copy of a 100 MB
// file costs ~250 ms of page faults on a VM).
class MappedFile {
 public:
  MappedFile(int fd, size_t size) : size_(size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) data_ = static_cast<std::byte*>(p);
  }
  ~MappedFile() {
    if (data_) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::byte* data() const { return data_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_;
};

}  // namespace

namespace {

Artifact only_plan(std::vector<ArtifactBucket> buckets, const std::string& origin) {
  if (buckets.size() != 1) {
    std::vector<DimValues> dims;
    for (const ArtifactBucket& b : buckets) dims.push_back(b.dims);
    throw Error(ErrorKind::InvalidInput, "artifact '" + origin + "' holds a plan per shape bucket (" +
                                             bucket_list(dims) + "); read it as buckets");
  }
  return std::move(buckets.front().artifact);
}

}  // namespace

Artifact parse_artifact(const std::string& bytes, const std::string& origin) {
  return only_plan(parse_artifact_buckets(bytes, origin), origin);
}

Artifact load_artifact(const std::string& path) { return only_plan(load_artifact_buckets(path), path); }

std::vector<ArtifactBucket> parse_artifact_buckets(const std::string& bytes, const std::string& origin) {
  auto file = std::make_shared<Storage>(bytes.size());
  if (!bytes.empty()) std::memcpy(file->data(), bytes.data(), bytes.size());
  std::byte* data = file->data();
  return parse_file(data, bytes.size(), std::move(file), origin);
}

std::vector<ArtifactBucket> load_artifact_buckets(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::Io, "cannot open artifact '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorKind::Io, "cannot read artifact '" + path + "': not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return parse_artifact_buckets(std::string(), path);  // reports "bad magic"
  }
  auto mapped = std::make_shared<MappedFile>(fd, size);
  ::close(fd);  // the mapping keeps the file
  if (!mapped->data())
    throw Error(ErrorKind::Io, "cannot map artifact '" + path + "': " + std::strerror(errno));
  std::byte* data = mapped->data();
  return parse_file(data, size, std::move(mapped), path);
}

size_t select_bucket(const std::vector<ArtifactBucket>& buckets, const std::vector<Shape>& shapes) {
  std::string there;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const std::vector<ArtifactTensorInfo>& inputs = buckets[b].artifact.info.inputs;
    bool match = inputs.size() == shapes.size();
    std::string described;
    for (size_t i = 0; i < inputs.size(); ++i) {
      match = match && inputs[i].shape == shapes[i];
      described += (i ? ", " : "") + inputs[i].name + " " + shape_to_string(inputs[i].shape);
    }
    if (match) return b;
    there += "\n  " + bucket_label(buckets[b].dims) + ": " + described;
  }
  std::string given;
  for (const Shape& s : shapes) given += (given.empty() ? "" : ", ") + shape_to_string(s);
  throw Error(ErrorKind::InvalidInput, "no plan of the artifact takes inputs of shape " + given +
                                           " (it holds " + std::to_string(buckets.size()) +
                                           (buckets.size() == 1 ? " plan" : " shape buckets") +
                                           "; inputs are neither padded nor cut):" + there);
}

}  // namespace collage
