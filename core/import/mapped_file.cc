#include "core/import/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/ir/error.h"

namespace collage {

MappedFile::MappedFile(const std::string& path, size_t size) : size_(size) {
  if (size_ == 0) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::Io, "cannot open '" + path + "': " + std::strerror(errno));
  void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  const int mmap_errno = errno;
  ::close(fd);
  if (data == MAP_FAILED)
    throw Error(ErrorKind::Io, "cannot read '" + path + "': " + std::strerror(mmap_errno));
  data_ = data;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

std::string_view MappedFile::bytes() const {
  return data_ ? std::string_view(static_cast<const char*>(data_), size_) : std::string_view();
}

}  // namespace collage
