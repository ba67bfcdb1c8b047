// The intermediate buffers of a region kernel. Memories are created without data
// while the kernel's steps are built; every step reports the memories it touches,
// and once all steps exist `plan()` gives buffers whose lifetimes do not overlap
// the same arena (greedy, in order of first use) and binds the memories to it.
// Invariants: a view (`alias`) shares its buffer's lifetime; memories this object
// did not create (region inputs and outputs, constants) are ignored by `touch`.
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

namespace collage::onednn {

class RegionMemory {
 public:
  // A new buffer of `md`, first written by step `step`.
  dnnl::memory buffer(const dnnl::memory::desc& md, int step);
  // Another view of `of`'s buffer (a reshape, or a sub-memory of a Concat's destination).
  dnnl::memory alias(const dnnl::memory& of, const dnnl::memory::desc& md);
  bool owns(const dnnl::memory& m) const { return buffer_of_.count(m.get()) != 0; }
  // Step `step` reads or writes `m`.
  void touch(const dnnl::memory& m, int step);
  // Assigns arenas; throws Error(Unsupported) when one cannot be allocated.
  void plan();
  size_t arena_bytes() const;

 private:
  struct Buffer {
    size_t bytes;
    int first, last;  // steps writing first / reading last
    std::vector<dnnl::memory> users;
  };
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::vector<Buffer> buffers_;
  std::map<dnnl_memory_t, size_t> buffer_of_;
  std::vector<std::pair<std::unique_ptr<void, Free>, size_t>> arenas_;
};

}  // namespace collage::onednn
