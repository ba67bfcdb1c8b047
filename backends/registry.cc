#include "backends/registry.h"

#include <algorithm>
#include <sstream>

// One #include per backend, generated from backends/CMakeLists.txt's collage_backend() lines.
#include "backend_includes.inc"

namespace collage {

namespace {
std::vector<const BackendSpec*>& backend_list() {
  static std::vector<const BackendSpec*> backends = {
  // One entry per backend, generated from backends/CMakeLists.txt's collage_backend() lines.
#include "backend_entries.inc"
  };
  return backends;
}
}  // namespace

const std::vector<const BackendSpec*>& all_backends() { return backend_list(); }

std::vector<const BackendSpec*> available_backends() {
  std::vector<const BackendSpec*> out;
  for (const BackendSpec* b : all_backends())
    if (unavailable_reason(*b).empty()) out.push_back(b);
  return out;
}

std::vector<const BackendSpec*> default_backends() {
  std::vector<const BackendSpec*> out;
  for (const BackendSpec* b : available_backends())
    if (b->precision == Precision::Float32) out.push_back(b);
  return out;
}

void add_backend_for_tests(const BackendSpec* backend) { backend_list().push_back(backend); }

const BackendSpec* find_backend(const std::string& name) {
  for (const BackendSpec* b : all_backends())
    if (b->name == name) return b;
  return nullptr;
}

std::vector<const BackendSpec*> select_backends(const std::string& comma_list) {
  if (comma_list.empty()) return default_backends();
  std::vector<const BackendSpec*> out;
  std::stringstream ss(comma_list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    const BackendSpec* b = find_backend(name);
    if (!b) {
      std::string known;
      for (const BackendSpec* k : all_backends()) known += (known.empty() ? "" : ", ") + k->name;
      throw Error(ErrorKind::InvalidInput, "unknown backend '" + name + "' (known: " + known + ")");
    }
    if (const std::string why = unavailable_reason(*b); !why.empty())
      throw Error(ErrorKind::InvalidInput, "backend '" + name + "' is unavailable on this CPU: " + why);
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  }
  if (out.empty()) throw Error(ErrorKind::InvalidInput, "no backend selected");
  return out;
}

void set_backend_threads(int threads) { apply_threads(all_backends(), threads); }

}  // namespace collage
