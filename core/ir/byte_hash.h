// A fast content hash of a byte range: FNV-1a over 64-bit little-endian words (the tail
// zero-padded), with a shift-xor after each multiply; one multiply per 8 bytes, so hashing a
// model's weights costs a fraction of copying them. Not cryptographic: callers that rely on
// equal hashes meaning equal bytes compare the bytes too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace collage {

inline uint64_t hash_bytes(const void* data, size_t size) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull ^ size;
  for (size_t at = 0; at < size; at += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p + at, std::min<size_t>(8, size - at));  // little-endian hosts only
    h = (h ^ word) * 1099511628211ull;
    h ^= h >> 29;
  }
  return h;
}

}  // namespace collage
