// SPDX-License-Identifier: BSD-3-Clause
// dispatch.cpp - picks the ISA level of the CPU kernel library's hot loops
// (isa.h), once per library that links it (kernels_optimized and
// backend_xnnpack each make the same choice).
//
// The level is the widest one that both the CPU (CPUID) and the operating
// system (XGETBV: the OS saves the YMM / ZMM state on context switches)
// support. PTERON_ISA=baseline|avx2|avx512|avx512vnni lowers it, never raises it above
// what the CPU supports (avx512vnni: the int8 GEMM of qgemm.h on AVX512-VNNI; the float
// tables stay at avx512; PTERON_ISA=avx512 leaves the int8 GEMM at avx512 too). Compiled at the
// library's baseline ISA.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "pteron_cpu/isa.h"
#include "pteron/kernel.h"
#include "pteron_cpu/qgemm.h"

#if defined(PTERON_CPU_HAVE_X86_ISAS)
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#include <immintrin.h>
#else
#include <cpuid.h>
#endif
#endif

namespace pteron_cpu {
namespace {

enum Level { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

#if defined(PTERON_CPU_HAVE_X86_ISAS)

void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
#if defined(_MSC_VER) && !defined(__clang__)
  int v[4];
  __cpuidex(v, static_cast<int>(leaf), static_cast<int>(sub));
  for (int i = 0; i < 4; ++i) r[i] = static_cast<unsigned>(v[i]);
#else
  r[0] = r[1] = r[2] = r[3] = 0;
  __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
#endif
}

// XCR0: which register states the OS saves. Only called when CPUID says
// OSXSAVE, so the instruction exists.
unsigned long long xcr0() {
#if defined(_MSC_VER) && !defined(__clang__)
  return _xgetbv(0);
#else
  unsigned lo = 0, hi = 0;
  // xgetbv, spelled as bytes so no -mxsave is needed at the baseline.
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
#endif
}

Level cpu_level() {
  unsigned r[4];
  cpuid(0, 0, r);
  const unsigned max_leaf = r[0];
  if (max_leaf < 7) return kBaseline;
  cpuid(1, 0, r);
  const unsigned ecx1 = r[2];
  const bool osxsave = (ecx1 >> 27) & 1u;
  const bool avx = (ecx1 >> 28) & 1u;
  const bool fma = (ecx1 >> 12) & 1u;
  if (!osxsave || !avx) return kBaseline;
  const unsigned long long x = xcr0();
  const bool ymm_state = (x & 0x6u) == 0x6u;    // SSE + AVX state
  const bool zmm_state = (x & 0xe6u) == 0xe6u;  // + opmask, ZMM_Hi256, Hi16_ZMM
  cpuid(7, 0, r);
  const unsigned ebx7 = r[1];
  const bool avx2 = (ebx7 >> 5) & 1u;
  const bool avx512f = (ebx7 >> 16) & 1u;
  const bool avx512dq = (ebx7 >> 17) & 1u;
  const bool avx512bw = (ebx7 >> 30) & 1u;
  const bool avx512vl = (ebx7 >> 31) & 1u;
  if (!ymm_state || !avx2 || !fma) return kBaseline;
  if (zmm_state && avx512f && avx512dq && avx512bw && avx512vl) return kAvx512;
  return kAvx2;
}

// AVX512-VNNI (CPUID.7.0:ECX bit 11), with the AVX-512 state cpu_level() checked.
bool cpu_vnni() {
  unsigned r[4];
  cpuid(0, 0, r);
  if (r[0] < 7) return false;
  cpuid(7, 0, r);
  return (r[2] >> 11) & 1u;
}

#else

Level cpu_level() { return kBaseline; }

#endif

const IsaOps* table(Level l) {
#if defined(PTERON_CPU_HAVE_X86_ISAS)
  if (l == kAvx512) return isa_ops_avx512();
  if (l == kAvx2) return isa_ops_avx2();
#endif
  (void)l;
  return isa_ops_baseline();
}

Level choose() {
  Level l = cpu_level();
  if (const char* env = std::getenv("PTERON_ISA")) {
    if (*env) {
      Level want = l;
      if (std::strcmp(env, "baseline") == 0)
        want = kBaseline;
      else if (std::strcmp(env, "avx2") == 0)
        want = kAvx2;
      else if (std::strcmp(env, "avx512") == 0 || std::strcmp(env, "avx512vnni") == 0)
        want = kAvx512;
      else {
        // Once per process: kernels_optimized and backend_xnnpack each hold this code.
        // The value in full (pteron_warn_once escapes its control bytes).
        const std::string msg = std::string("pteron: ignoring PTERON_ISA='") + env +
                                "' (expected baseline, avx2, avx512 or avx512vnni)";
        pteron_warn_once("PTERON_ISA", msg.c_str());
      }
      if (want < l) l = want;  // only ever lower
    }
  }
  return l;
}

}  // namespace

int isa_level() {
  static const Level chosen = choose();  // thread-safe, once per process
  return chosen;
}

#if defined(PTERON_CPU_HAVE_X86_ISAS)
bool isa_vnni() {
  static const bool on = [] {
    if (isa_level() < kAvx512 || !cpu_vnni()) return false;
    const char* env = std::getenv("PTERON_ISA");
    return !env || !*env || std::strcmp(env, "avx512vnni") == 0 ||
           (std::strcmp(env, "baseline") != 0 && std::strcmp(env, "avx2") != 0 &&
            std::strcmp(env, "avx512") != 0);  // an ignored setting lowers nothing
  }();
  return on;
}
#endif

const IsaOps& ops() {
  static const IsaOps* chosen = table(Level(isa_level()));
  return *chosen;
}

}  // namespace pteron_cpu

// Fix the choice when the library loads, before any kernel runs.
namespace {
const int pteron_opt_isa_chosen = (pteron_cpu::ops(), 0);
}
