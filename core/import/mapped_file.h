// A file mapped read-only (and read ahead) for parsing: no copy of a model's bytes is made
// (a 650 MB GPT-2 export cost as much to copy as to parse). Unmapped on destruction; the
// bytes are valid while the object lives. An empty file maps to empty bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace collage {

class MappedFile {
 public:
  MappedFile(const std::string& path, size_t size);  // throws Io naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const;

 private:
  void* data_ = nullptr;
  size_t size_;
};

}  // namespace collage
