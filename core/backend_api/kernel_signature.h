// Canonical kernel signatures: what makes two candidate kernels cost the same
// (backend + version, ops, attributes, shapes, dtypes) independent of node
// names and weight values; the cost DB is keyed by them.
#pragma once

#include <cstdint>
#include <string>

#include "core/ir/graph.h"
#include "core/ir/subgraph.h"

namespace collage {

// Human-readable canonical text, e.g.
// "onednn@2.6.3|Conv{group=1;pads=[1,1,1,1]}(in0:f32[1,3,8,8],c:f32[8,3,3,3])->f32[1,8,8,8];Relu(n0.0)->..."
std::string kernel_signature(const Graph& graph, const SubGraph& subgraph, const std::string& backend,
                             const std::string& backend_version);

uint64_t fnv1a64(const std::string& text);
std::string hex64(uint64_t value);

// Structure, ops, attributes and shapes of the imported graph (not weight values): the whole
// graph's signature, hashed. Placements and measurement sessions are held to it.
std::string model_fingerprint(const Graph& graph);

// Whether `sub` is timed with its weights out of cache: the model's constants exceed the cache
// a run keeps (cache_kept_between_runs_bytes), so every request streams them from DRAM, and the
// kernel reads at least kSettings.cold_weight_min_bytes of them. Timed hot, such a kernel looks up to
// 1.5x faster than it runs (BERT-base at seq 16: each MatMul's weights are 2.3-9.4 MiB), and
// the libraries that hide the stream best lose to the ones that only do well hot. The
// signature carries it ("|cold weights"), so hot and cold costs are never mixed.
bool measured_cold(const Graph& graph, const SubGraph& sub);
size_t last_level_cache_bytes();  // from sysfs (index3), else 32 MiB
// What of it a run can count on finding again on the next request: the last-level cache, at
// most kSettings.cache_kept_cap_bytes.
size_t cache_kept_between_runs_bytes();

// CPU model name (with its family and model numbers where /proc/cpuinfo gives them) and ISA
// flags that matter to kernels (avx2, avx512f, fma, ...), plus
// "| tag T" when $COLLAGE_DEVICE_TAG is set. Read once per process.
std::string device_fingerprint();

}  // namespace collage
