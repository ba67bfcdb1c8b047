// One allocator for every ONNX Runtime session of the process, registered with the environment
// (sessions opt in with session.use_env_allocators). Without it each session keeps an arena of its
// own: a placement's dozens of kernel sessions then hold dozens of arenas, and their buffers lie
// apart in memory (docs/backends.md measures the difference). Blocks of 1 MiB and up are whole 2 MiB
// extents advised onto transparent huge pages, as the executor's own large buffers are; a freed one is
// kept for the next request of its extent (a run's memory-pattern block comes back every run) and
// never returned, as ORT's own arena keeps its memory. Thread-safe: sessions run on OpenMP's threads.
#pragma once

#include "backends/onnxruntime/ort_abi.h"

namespace collage::ort {

// The process's allocator, describing its memory as `info` (device CPU memory; the first call's
// `info` is kept). Lives to the end of the process.
OrtAllocator* shared_allocator(const OrtMemoryInfo* info);
// How many huge-page extents it has made so far (in use or kept).
size_t shared_allocator_extents();

}  // namespace collage::ort
