#include "backends/onednn_region/region_memory.h"

#include <algorithm>

#include "backends/onednn/onednn_common.h"
#include "core/ir/error.h"

namespace collage::onednn {

dnnl::memory RegionMemory::buffer(const dnnl::memory::desc& md, int step) {
  dnnl::memory m(md, cpu(), DNNL_MEMORY_NONE);
  buffer_of_[m.get()] = buffers_.size();
  buffers_.push_back({md.get_size(), step, step, {m}});
  return m;
}

dnnl::memory RegionMemory::alias(const dnnl::memory& of, const dnnl::memory::desc& md) {
  auto it = buffer_of_.find(of.get());
  if (it == buffer_of_.end())
    throw Error(ErrorKind::Internal, "onednn-region: a view of a buffer it does not own");
  dnnl::memory m(md, of.get_engine(), DNNL_MEMORY_NONE);
  buffer_of_[m.get()] = it->second;
  buffers_[it->second].users.push_back(m);
  return m;
}

void RegionMemory::touch(const dnnl::memory& m, int step) {
  auto it = buffer_of_.find(m.get());
  if (it == buffer_of_.end()) return;
  Buffer& b = buffers_[it->second];
  b.first = std::min(b.first, step);
  b.last = std::max(b.last, step);
}

void RegionMemory::plan() {
  std::vector<size_t> order(buffers_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers_[a].first < buffers_[b].first; });
  struct Slot {
    size_t bytes = 0;
    int busy_until = -1;
    std::vector<size_t> buffers;
  };
  std::vector<Slot> slots;
  for (size_t b : order) {
    const Buffer& buf = buffers_[b];
    // The smallest free slot that fits, else the largest free one (grown).
    Slot* best = nullptr;
    for (Slot& s : slots) {
      if (s.busy_until >= buf.first) continue;
      bool fits = s.bytes >= buf.bytes, best_fits = best && best->bytes >= buf.bytes;
      if (!best || (fits && (!best_fits || s.bytes < best->bytes)) ||
          (!fits && !best_fits && s.bytes > best->bytes))
        best = &s;
    }
    if (!best) best = &slots.emplace_back();
    best->bytes = std::max(best->bytes, buf.bytes);
    best->busy_until = buf.last;
    best->buffers.push_back(b);
  }
  for (Slot& s : slots) {
    size_t bytes = (std::max<size_t>(s.bytes, 64) + 63) / 64 * 64;
    std::unique_ptr<void, Free> arena(std::aligned_alloc(64, bytes));
    if (!arena)
      throw Error(ErrorKind::Unsupported,
                  "onednn-region: cannot allocate " + std::to_string(bytes) + " bytes");
    for (size_t b : s.buffers)
      for (dnnl::memory& m : buffers_[b].users) m.set_data_handle(arena.get());
    arenas_.emplace_back(std::move(arena), bytes);
  }
}

size_t RegionMemory::arena_bytes() const {
  size_t total = 0;
  for (const auto& a : arenas_) total += a.second;
  return total;
}

}  // namespace collage::onednn
