#include "core/backend_api/shared_constants.h"

#include <algorithm>
#include <cstring>

namespace collage {

namespace {
thread_local SharedConstants* current_store = nullptr;
}  // namespace

namespace {

// FNV-1a over 64-bit words (the tail zero-padded): one multiply per 8 bytes.
uint64_t content_hash(const Tensor& t) {
  const unsigned char* p = static_cast<const unsigned char*>(t.raw());
  const size_t n = t.bytes();
  uint64_t h = 1469598103934665603ull ^ n;
  for (size_t at = 0; at < n; at += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p + at, std::min<size_t>(8, n - at));
    h = (h ^ word) * 1099511628211ull;
    h ^= h >> 29;
  }
  return h;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.bytes() == b.bytes() &&
         (a.raw() == b.raw() || a.bytes() == 0 || std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
}

}  // namespace

std::shared_ptr<const void> SharedConstants::find(const Tensor& source, const std::string& layout) const {
  const uint64_t hash = content_hash(source);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& e : entries_)
    if (e.hash == hash && e.layout == layout && same_bytes(e.source, source)) {
      ++hits_;
      return e.value;
    }
  return nullptr;
}

void SharedConstants::add(const Tensor& source, const std::string& layout,
                          std::shared_ptr<const void> value) {
  const uint64_t hash = content_hash(source);
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({hash, source, layout, std::move(value)});
}

size_t SharedConstants::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

SharedConstants* SharedConstants::current() { return current_store; }

SharedConstantsScope::SharedConstantsScope(SharedConstants* store) : previous_(current_store) {
  current_store = store;
}

SharedConstantsScope::~SharedConstantsScope() { current_store = previous_; }

}  // namespace collage
