// Benchmark tool (not part of the test suite): makes an AVX-512 machine look like the AVX2 kind
// to every library in a process, ONNX Runtime's MLAS and XNNPACK included, which have no
// setting like ONEDNN_MAX_CPU_ISA. It turns on the CPU's CPUID faulting (arch_prctl
// ARCH_SET_CPUID, Linux on CPUs with `cpuid_fault`) and answers each CPUID from the real
// instruction with the AVX-512, AMX and AVX-VNNI feature bits cleared. Libraries then choose
// their AVX2 code exactly as on an AVX2-only CPU; the cache sizes and the core are this machine's.
//
// tests/bench/avx2_cpu.sh loads it twice. As an audit module (LD_AUDIT) its initialiser runs
// before any library's, several of which (oneDNN, OpenBLAS) read the CPU as they load; as a
// preload (LD_PRELOAD) it interposes sigaction and signal, and its initialiser takes the handler
// over in the program's own namespace.
//
// Invariants: every thread inherits the faulting (set on the main thread before any other
// exists); a SIGSEGV handler the program installs is kept and called for every other fault,
// so a crash is still the program's to report. The dynamic loader's own choice of memcpy
// happens before either: avx2_cpu.sh takes AVX-512 from it with GLIBC_TUNABLES.
#include <asm/prctl.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);

SigactionFn real_sigaction() {
  static const auto fn = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
  return fn;
}

struct sigaction program_handler = {};  // the program's SIGSEGV disposition, as it set it

bool set_cpuid_faulting(bool on) { return syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1) == 0; }

constexpr uint32_t bit(int n) { return uint32_t{1} << n; }

// The feature bits an AVX2-only EPYC (Zen 2/3) does not have.
void clear_past_avx2(uint32_t leaf, uint32_t sub, uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d) {
  if (leaf == 7 && sub == 0) {
    // AVX512 F, DQ, IFMA, PF, ER, CD, BW, VL
    b &= ~(bit(16) | bit(17) | bit(21) | bit(26) | bit(27) | bit(28) | bit(30) | bit(31));
    // AVX512 VBMI, VBMI2, VNNI, BITALG, VPOPCNTDQ
    c &= ~(bit(1) | bit(6) | bit(11) | bit(12) | bit(14));
    // AVX512 4VNNIW, 4FMAPS, VP2INTERSECT, FP16; AMX BF16, TILE, INT8
    d &= ~(bit(2) | bit(3) | bit(8) | bit(22) | bit(23) | bit(24) | bit(25));
  } else if (leaf == 7 && sub == 1) {
    // AVX-VNNI, AVX512_BF16, AMX-FP16, AVX-IFMA
    a &= ~(bit(4) | bit(5) | bit(21) | bit(23));
    // AVX-VNNI-INT8, AVX-NE-CONVERT, AVX-VNNI-INT16, AVX10
    d &= ~(bit(4) | bit(5) | bit(10) | bit(19));
  }
}

void call_program_handler(int sig, siginfo_t* info, void* context) {
  const struct sigaction& h = program_handler;
  if (h.sa_flags & SA_SIGINFO) {
    if (h.sa_sigaction) return h.sa_sigaction(sig, info, context);
  } else if (h.sa_handler != SIG_DFL && h.sa_handler != SIG_IGN) {
    return h.sa_handler(sig);
  }
  // Default: die of the fault as the program would have.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  real_sigaction()(SIGSEGV, &dfl, nullptr);
}

void on_segv(int sig, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  greg_t* r = uc->uc_mcontext.gregs;
  const auto* ip = reinterpret_cast<const unsigned char*>(r[REG_RIP]);
  if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2)
    return call_program_handler(sig, info, context);
  const auto leaf = static_cast<uint32_t>(r[REG_RAX]), sub = static_cast<uint32_t>(r[REG_RCX]);
  uint32_t a = 0, b = 0, c = 0, d = 0;
  set_cpuid_faulting(false);
  __cpuid_count(leaf, sub, a, b, c, d);
  set_cpuid_faulting(true);
  clear_past_avx2(leaf, sub, a, b, c, d);
  r[REG_RAX] = a;  // CPUID writes the 32-bit registers, clearing the upper halves
  r[REG_RBX] = b;
  r[REG_RCX] = c;
  r[REG_RDX] = d;
  r[REG_RIP] += 2;
}

__attribute__((constructor(101))) void start() {
  struct sigaction sa = {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  real_sigaction()(SIGSEGV, &sa, &program_handler);
  if (!set_cpuid_faulting(true)) {
    std::fprintf(stderr, "avx2_cpu: this CPU or kernel has no CPUID faulting (no cpuid_fault flag)\n");
    std::_Exit(2);
  }
}

}  // namespace

// An audit module that asks for nothing but to be loaded first.
extern "C" unsigned int la_version(unsigned int) { return LAV_CURRENT; }

// The program's SIGSEGV handler is recorded and called for faults that are not CPUID.
extern "C" int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (sig != SIGSEGV) return real_sigaction()(sig, act, old);
  if (old) *old = program_handler;
  if (act) program_handler = *act;
  return 0;
}

extern "C" sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction act = {}, old = {};
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  return sigaction(sig, &act, &old) == 0 ? old.sa_handler : SIG_ERR;
}
