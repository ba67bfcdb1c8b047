// Which instruction set oneDNN runs: the CPU's own, or AVX2 under ONEDNN_MAX_CPU_ISA=AVX2.
// The suite runs the oneDNN tests a second time under that cap (ctest: onednn_avx2_path), so
// the AVX2 kernels an AVX2-only machine runs are tested on an AVX-512 machine too; this test
// proves the cap reached oneDNN there, and that the uncapped run uses what the CPU has.
#include <gtest/gtest.h>

#include <cstdlib>
#include <dnnl.hpp>
#include <string>

#include "backends/onednn_bf16/onednn_bf16.h"

namespace collage {
namespace {

bool capped_to_avx2() {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  return cap && std::string(cap) == "AVX2";
}

// The implementation oneDNN picks for an ordinary 3x3 convolution ("brgconv:avx512_core", ...).
std::string conv_implementation() {
  using dnnl::memory;
  const dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  const memory::desc src({1, 32, 28, 28}, memory::data_type::f32, memory::format_tag::any);
  const memory::desc weights({64, 32, 3, 3}, memory::data_type::f32, memory::format_tag::any);
  const memory::desc dst({1, 64, 28, 28}, memory::data_type::f32, memory::format_tag::any);
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::convolution_direct, src, weights, dst, {1, 1},
                                             {1, 1}, {1, 1});
  return dnnl::convolution_forward::primitive_desc(desc, cpu).impl_info_str();
}

TEST(OnednnIsa, RunsTheCpusInstructionSetUnlessCappedToAvx2) {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const std::string impl = conv_implementation();
  if (capped_to_avx2() || !__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(isa, static_cast<unsigned>(dnnl_cpu_isa_avx2));
    EXPECT_NE(impl.find("avx2"), std::string::npos) << impl;
    EXPECT_EQ(impl.find("avx512"), std::string::npos) << impl;
    // bf16 dot products are past the cap (or absent): the backend says so instead of failing,
    // and names which of the two it is.
    const std::string why = unavailable_reason(onednn_bf16_backend());
    const bool cpu_has_bf16 = __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
    EXPECT_NE(why.find(cpu_has_bf16 ? "ONEDNN_MAX_CPU_ISA caps oneDNN" : "this CPU has no bf16"),
              std::string::npos)
        << why;
  } else {
    const auto avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
    EXPECT_EQ(isa & avx512, avx512);
    EXPECT_NE(impl.find("avx512"), std::string::npos) << impl;
  }
}

}  // namespace
}  // namespace collage
