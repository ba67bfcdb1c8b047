// Constants a backend converted at compile time (packed, reordered into a library's blocked
// layout), shared by the kernels compiled while one store is in scope on the compiling thread.
// The runtime compiles every plan of a multi-shape artifact under one store, so a weight the
// buckets share is packed once per layout rather than once per bucket. Sources match by content
// (a hash, then the bytes compared), so weights a backend derives afresh per kernel (BatchNorm
// folded into a Conv's) are shared too. Outside a scope (the tuner, the exporter) nothing is.
//
// Invariant: an entry keeps its source tensor alive; constants are never written, so equal bytes,
// dtype and layout mean equal converted contents.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/ir/tensor.h"

namespace collage {

class SharedConstants {
 public:
  // The value stored for `source` converted to `layout` (a backend's own key); made by `make`
  // and stored when there is none yet.
  std::shared_ptr<const void> find_or_add(const Tensor& source, const std::string& layout,
                                          const std::function<std::shared_ptr<const void>()>& make);
  size_t hits() const;  // find_or_add calls answered from the store

  // The store of the innermost SharedConstantsScope on this thread; null outside one.
  static SharedConstants* current();

 private:
  struct Entry {
    uint64_t hash = 0;
    Tensor source;
    std::string layout;
    std::shared_ptr<const void> value;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
  size_t hits_ = 0;
};

// While alive, SharedConstants::current() on this thread is `store` (scopes nest).
class SharedConstantsScope {
 public:
  explicit SharedConstantsScope(SharedConstants* store);
  ~SharedConstantsScope();
  SharedConstantsScope(const SharedConstantsScope&) = delete;
  SharedConstantsScope& operator=(const SharedConstantsScope&) = delete;

 private:
  SharedConstants* previous_;
};

}  // namespace collage
