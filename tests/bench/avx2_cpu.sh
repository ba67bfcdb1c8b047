#!/usr/bin/env bash
# Benchmark tool (not part of the test suite): runs COMMAND on an AVX-512 machine as on the AVX2
# kind. Every library in it and in its child processes (ONNX Runtime's MLAS and XNNPACK, which
# ONEDNN_MAX_CPU_ISA does not reach, included) sees a CPU without AVX-512, AMX or AVX-VNNI
# (tests/bench/avx2_cpu.cc: CPUID faulting, Linux on CPUs with the cpuid_fault flag); glibc's own
# string functions leave AVX-512 too. Costs measured so are kept apart under a device tag.
# usage: tests/bench/avx2_cpu.sh COMMAND [ARG...]
#   env: BUILD (build dir, default build, relative to the repository)
#   e.g. BUILD=build THREADS=1 tests/bench/avx2_cpu.sh bash tests/bench/peer_bench.sh modern
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
[[ "$build" = /* ]] || build="$root/$build"
lib="$build/tests/libcollage_avx2_cpu.so"
[ $# -ge 1 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
grep -qw cpuid_fault /proc/cpuinfo ||
  { echo "avx2_cpu.sh: this CPU (or its hypervisor) offers no CPUID faulting (cpuid_fault)" >&2; exit 2; }
[ -f "$lib" ] || { echo "avx2_cpu.sh: $lib is not built (cmake --build $build --target collage_avx2_cpu)" >&2; exit 2; }
export LD_AUDIT="$lib${LD_AUDIT:+:$LD_AUDIT}" LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}"
export GLIBC_TUNABLES="glibc.cpu.hwcaps=-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL,-AVX512ER,-AVX512PF${GLIBC_TUNABLES:+:$GLIBC_TUNABLES}"
export COLLAGE_DEVICE_TAG="${COLLAGE_DEVICE_TAG:+$COLLAGE_DEVICE_TAG, }cpuid avx2"
exec "$@"
