// The instruction-set cap: ONEDNN_MAX_CPU_ISA caps the project's own kernels as it caps oneDNN,
// so the suite's run under ONEDNN_MAX_CPU_ISA=AVX2 (ctest: onednn_avx2_path) runs the eight-lane
// kernels an AVX2-only machine runs, chosen the way it chooses them. Expectations come from the
// CPU's flags and the variable, read here independently of core/backend_api/cpu_isa.cc.
#include "core/backend_api/cpu_isa.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/native/transformer_kernels.h"
#include "backends/stream_gemm/packed_gemm.h"
#include "backends/stream_gemm_int8/int8_gemm.h"
#include "core/backend_api/kernel_signature.h"

namespace collage {
namespace {

TEST(CpuIsa, CapNamesMapToLevelsAsOnednnNamesThem) {
  EXPECT_EQ(isa_cap_level(nullptr), IsaLevel::Avx512Vnni);
  EXPECT_EQ(isa_cap_level(""), IsaLevel::Avx512Vnni);
  EXPECT_EQ(isa_cap_level("ALL"), IsaLevel::Avx512Vnni);
  EXPECT_EQ(isa_cap_level("not-an-isa"), IsaLevel::Avx512Vnni);  // oneDNN ignores it too
  EXPECT_EQ(isa_cap_level("SSE41"), IsaLevel::Portable);
  EXPECT_EQ(isa_cap_level("AVX"), IsaLevel::Portable);
  EXPECT_EQ(isa_cap_level("AVX2"), IsaLevel::Avx2);
  EXPECT_EQ(isa_cap_level("avx2"), IsaLevel::Avx2);
  EXPECT_EQ(isa_cap_level("AVX2_VNNI"), IsaLevel::Avx2);
  EXPECT_EQ(isa_cap_level("AVX512_CORE"), IsaLevel::Avx512);
  EXPECT_EQ(isa_cap_level("AVX512_CORE_VNNI"), IsaLevel::Avx512Vnni);
  EXPECT_EQ(isa_cap_level("AVX512_CORE_AMX"), IsaLevel::Avx512Vnni);
}

TEST(CpuIsa, TheProcessCapChoosesTheProjectsKernels) {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string name = cap ? cap : "";
  const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && name != "SSE41" && name != "AVX";
  const bool capped_to_avx2 = name == "AVX2" || name == "AVX2_VNNI" || name == "SSE41" || name == "AVX";
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && !capped_to_avx2;
  const bool vnni = avx512 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni") &&
                    name != "AVX512_CORE";
  EXPECT_EQ(cpu_isa_allows(IsaLevel::Avx2), avx2);
  EXPECT_EQ(cpu_isa_allows(IsaLevel::Avx512), avx512);
  EXPECT_EQ(cpu_isa_allows(IsaLevel::Avx512Vnni), vnni);

  // What the kernels then run.
  EXPECT_EQ(native::best_gelu_span(), avx512 ? native::gelu_span_avx512
                                      : avx2 ? native::gelu_span_avx2
                                             : native::gelu_span);
  if (avx2) {
    EXPECT_EQ(stream_gemm::best_isa(), avx512 ? stream_gemm::Isa::Avx512 : stream_gemm::Isa::Avx2);
  }
  EXPECT_EQ(stream_gemm_int8::supported(), avx2) << stream_gemm_int8::unsupported_reason();
  if (avx2) {
    EXPECT_EQ(stream_gemm_int8::usable_paths().front(),
              vnni ? stream_gemm_int8::Int8Path::Avx512Vnni : stream_gemm_int8::Int8Path::Avx2);
  }

  // Costs measured under a cap that takes something from this CPU are not this CPU's own.
  const bool takes_away = (__builtin_cpu_supports("avx512f") && !avx512) ||
                          (__builtin_cpu_supports("avx512vnni") && !vnni) ||
                          (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !avx2);
  EXPECT_EQ(device_fingerprint().find("| isa cap " + name) != std::string::npos, takes_away)
      << device_fingerprint();
}

}  // namespace
}  // namespace collage
