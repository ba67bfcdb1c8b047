#include "core/runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace collage {

namespace {
constexpr int64_t kAlign = 64;
int64_t aligned(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferLifetime>& lifetimes) {
  MemoryPlan plan;
  plan.buffers.resize(lifetimes.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    plan.buffers[i].bytes = static_cast<int64_t>(lifetimes[i].bytes);
    if (!lifetimes[i].outlives_run) order.push_back(i);
  }
  // Largest first; ties by first use so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lifetimes[a].bytes > lifetimes[b].bytes; });
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of time-overlapping placed buffers
  for (size_t i : order) {
    const BufferLifetime& me = lifetimes[i];
    busy.clear();
    for (size_t j : placed) {
      const BufferLifetime& other = lifetimes[j];
      if (other.first_step <= me.last_step && me.first_step <= other.last_step)
        busy.emplace_back(plan.buffers[j].offset, plan.buffers[j].offset + aligned(plan.buffers[j].bytes));
    }
    std::sort(busy.begin(), busy.end());
    int64_t need = aligned(static_cast<int64_t>(me.bytes));
    int64_t best = -1, best_gap = 0, cursor = 0;
    for (const auto& [start, end] : busy) {
      int64_t gap = start - cursor;
      if (gap >= need && (best < 0 || gap < best_gap)) best = cursor, best_gap = gap;  // best fit
      cursor = std::max(cursor, end);
    }
    plan.buffers[i].offset = best >= 0 ? best : cursor;
    plan.arena_bytes = std::max(plan.arena_bytes, static_cast<size_t>(plan.buffers[i].offset + need));
    placed.push_back(i);
  }
  return plan;
}

size_t unplanned_bytes(const std::vector<BufferLifetime>& lifetimes) {
  size_t total = 0;
  for (const BufferLifetime& b : lifetimes)
    if (!b.outlives_run) total += b.bytes;
  return total;
}

}  // namespace collage
