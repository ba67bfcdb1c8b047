// The one temporary directory helper of the test suites: a fresh directory under
// $TMPDIR (std::filesystem::temp_directory_path, /tmp without it), unique by mkdtemp
// (prefix, pid, random suffix), removed with everything in it when the object goes,
// whether the test passed or failed. Two suite runs at once never share a path.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace collage::testing {

class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& prefix = "collage_test") {
    std::string pattern =
        (std::filesystem::temp_directory_path() / (prefix + "_" + std::to_string(::getpid()) + "_XXXXXX"))
            .string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a temporary directory " + pattern + ": " +
                               std::strerror(errno));
    path_ = pattern;
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    if (!ec) return;
    // A test may have left a directory without write or search permission: give it back.
    ::chmod(path_.c_str(), S_IRWXU);
    for (auto it = std::filesystem::recursive_directory_iterator(
             path_, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec))
        std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // DIR/name as a string, the form most APIs under test take.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace collage::testing
