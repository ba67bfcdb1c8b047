// A static memory plan: every buffer a run allocates gets a fixed offset in one
// arena, chosen ahead of time from the buffers' sizes and lifetimes so buffers
// that are never live together share memory. Shapes are static, so the sequence
// of allocations a placement makes is the same on every run; it is recorded
// once (a traced run) and planned here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace collage {

struct BufferLifetime {
  size_t bytes = 0;
  int first_step = 0;         // step that allocated it
  int last_step = 0;          // last step during or after which it was still alive
  bool outlives_run = false;  // handed to the caller (graph outputs): never in the arena
};

struct MemoryPlan {
  static constexpr int64_t kHeap = -1;
  struct Buffer {
    int64_t bytes = 0;
    int64_t offset = kHeap;  // byte offset in the arena, or kHeap
  };
  std::vector<Buffer> buffers;  // one per allocation, in the order the run makes them
  size_t arena_bytes = 0;
};

// Greedy by size (largest first, each at the lowest 64-byte aligned offset that
// does not overlap a time-overlapping buffer already placed), as TFLite's planner.
MemoryPlan plan_memory(const std::vector<BufferLifetime>& lifetimes);

// Sum of the sizes of the buffers that go in the arena: the memory a run would
// take with no reuse at all.
size_t unplanned_bytes(const std::vector<BufferLifetime>& lifetimes);

}  // namespace collage
