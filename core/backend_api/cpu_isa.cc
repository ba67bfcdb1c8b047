#include "core/backend_api/cpu_isa.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace collage {

namespace {

std::string upper(const char* s) {
  std::string out = s ? s : "";
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

bool cpu_has(IsaLevel level) {
  switch (level) {
    case IsaLevel::Portable:
      return true;
    case IsaLevel::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case IsaLevel::Avx512:
      return cpu_has(IsaLevel::Avx2) && __builtin_cpu_supports("avx512f");
    case IsaLevel::Avx512Vnni:
      return cpu_has(IsaLevel::Avx512) && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

// The variable as the process first read it; every later answer follows that one reading.
const std::string& cap_name() {
  static const std::string name = upper(std::getenv("ONEDNN_MAX_CPU_ISA"));
  return name;
}

IsaLevel process_cap() {
  static const IsaLevel cap = isa_cap_level(cap_name().c_str());
  return cap;
}

}  // namespace

IsaLevel isa_cap_level(const char* cap) {
  const std::string name = upper(cap);
  if (name == "SSE41" || name == "AVX") return IsaLevel::Portable;
  if (name == "AVX2" || name == "AVX2_VNNI" || name == "AVX2_VNNI_2") return IsaLevel::Avx2;
  if (name == "AVX512_CORE") return IsaLevel::Avx512;
  return IsaLevel::Avx512Vnni;  // AVX512_CORE_VNNI and above, ALL, unset, unknown
}

bool cpu_isa_allows(IsaLevel level) {
  static const bool allowed[] = {true, cpu_has(IsaLevel::Avx2) && process_cap() >= IsaLevel::Avx2,
                                 cpu_has(IsaLevel::Avx512) && process_cap() >= IsaLevel::Avx512,
                                 cpu_has(IsaLevel::Avx512Vnni) && process_cap() >= IsaLevel::Avx512Vnni};
  return allowed[static_cast<int>(level)];
}

bool cpu_isa_capped(IsaLevel level) { return cpu_has(level) && !cpu_isa_allows(level); }

std::string isa_cap_note() {
  for (IsaLevel l : {IsaLevel::Avx2, IsaLevel::Avx512, IsaLevel::Avx512Vnni})
    if (cpu_isa_capped(l)) return " | isa cap " + cap_name();
  return "";
}

}  // namespace collage
