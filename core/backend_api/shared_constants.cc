#include "core/backend_api/shared_constants.h"

#include <cstring>

#include "core/ir/byte_hash.h"

namespace collage {

namespace {
thread_local SharedConstants* current_store = nullptr;
}  // namespace

namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.bytes() == b.bytes() &&
         (a.raw() == b.raw() || a.bytes() == 0 || std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
}

}  // namespace

std::shared_ptr<const void> SharedConstants::find_or_add(
    const Tensor& source, const std::string& layout,
    const std::function<std::shared_ptr<const void>()>& make) {
  const uint64_t hash = hash_bytes(source.raw(), source.bytes());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Entry& e : entries_)
      if (e.hash == hash && e.layout == layout && same_bytes(e.source, source)) {
        ++hits_;
        return e.value;
      }
  }
  std::shared_ptr<const void> value = make();  // outside the lock: converting takes a while
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({hash, source, layout, value});
  return value;
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
