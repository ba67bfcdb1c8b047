#include "backends/onnxruntime/ort_allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_map>

#include "core/ir/tensor.h"

namespace collage::ort {

namespace {

constexpr size_t kLarge = size_t{1} << 20;  // from here on: whole huge-page extents, kept when freed

struct SharedAllocator {
  OrtAllocator abi{};  // first member: ORT calls back with this pointer
  const OrtMemoryInfo* info = nullptr;
  std::mutex mutex;
  std::unordered_map<void*, size_t> extents;  // every large block, in use or kept -> its extent
  std::multimap<size_t, void*> kept;          // freed large blocks by extent
};

SharedAllocator& of(OrtAllocator* self) { return *reinterpret_cast<SharedAllocator*>(self); }

void* allocate(OrtAllocator* self, size_t size) {
  if (size < kLarge) return allocate_aligned(size);
  SharedAllocator& a = of(self);
  const size_t extent = (size + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  {
    std::lock_guard<std::mutex> lock(a.mutex);
    if (auto it = a.kept.find(extent); it != a.kept.end()) {
      void* p = it->second;
      a.kept.erase(it);
      return p;
    }
  }
  void* p = allocate_aligned(extent);
  if (!p) return nullptr;  // ORT reports the failure
  std::lock_guard<std::mutex> lock(a.mutex);
  a.extents[p] = extent;
  return p;
}

void release(OrtAllocator* self, void* p) {
  if (!p) return;
  SharedAllocator& a = of(self);
  {
    std::lock_guard<std::mutex> lock(a.mutex);
    if (auto it = a.extents.find(p); it != a.extents.end()) {
      a.kept.emplace(it->second, p);
      return;
    }
  }
  std::free(p);
}

const OrtMemoryInfo* info(const OrtAllocator* self) {
  return reinterpret_cast<const SharedAllocator*>(self)->info;
}

SharedAllocator* the_allocator(const OrtMemoryInfo* memory) {
  static SharedAllocator* const a = [memory] {
    auto* s = new SharedAllocator;  // never freed: ORT holds it until the process ends
    s->abi.version = kRegisterAllocatorApiVersion;
    s->abi.alloc = allocate;
    s->abi.free = release;
    s->abi.info = info;
    s->info = memory;
    return s;
  }();
  return a;
}

}  // namespace

OrtAllocator* shared_allocator(const OrtMemoryInfo* info) { return &the_allocator(info)->abi; }

size_t shared_allocator_extents() {
  SharedAllocator* a = the_allocator(nullptr);
  std::lock_guard<std::mutex> lock(a->mutex);
  return a->extents.size();
}

}  // namespace collage::ort
