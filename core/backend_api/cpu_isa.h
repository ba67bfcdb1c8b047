// The instruction sets the project's own kernels may use: what the CPU has, capped by
// ONEDNN_MAX_CPU_ISA when it is set. One setting caps oneDNN and these kernels alike, so an
// AVX-512 machine runs the code an AVX2-only one does (tests and benchmarks of that kind).
// XNNPACK and ONNX Runtime have no such setting and run what the CPU has. The cap is read
// once per process: set it before the first kernel is built.
#pragma once

#include <string>

namespace collage {

// Each level includes the ones below it.
enum class IsaLevel { Portable = 0, Avx2 = 1, Avx512 = 2, Avx512Vnni = 3 };

// The level a cap named as oneDNN names them allows (SSE41, AVX, AVX2, AVX2_VNNI, AVX512_CORE,
// AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, ALL; any case). Null, empty, ALL or a
// name oneDNN does not know allow everything, as oneDNN treats them.
IsaLevel isa_cap_level(const char* cap);

// Whether the CPU has `level`'s instructions (AVX2 with FMA; AVX-512F; AVX-512 BW and VNNI)
// and the process's cap allows them.
bool cpu_isa_allows(IsaLevel level);

// Whether the CPU has `level`'s instructions but the cap takes them away (a reason to name).
bool cpu_isa_capped(IsaLevel level);

// "" when the cap takes nothing away from this CPU; else " | isa cap NAME". The device
// fingerprint carries it, so costs measured under a cap are kept apart from the CPU's own.
std::string isa_cap_note();

}  // namespace collage
