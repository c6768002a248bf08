// SPDX-License-Identifier: BSD-3-Clause
// q4gemm.cpp - q4gemm.h's level choice, weight packing and parallel driver (the baseline ISA).
#include "pteron_cpu/q4gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "pteron_cpu/isa.h"
#include "pteron_cpu/qgemm.h"  // isa_vnni
#include "pteron/kernel.h"  // pteron_parallel_for

namespace pteron_cpu {

namespace {

const Q4Kernels* table_for(int level) {
#if defined(PTERON_CPU_HAVE_X86_ISAS)
  if (level >= 2 && isa_vnni()) return isa_avx512vnni::q4gemm_kernels();
  if (level >= 2) return isa_avx512::q4gemm_kernels();
  if (level == 1) return isa_avx2::q4gemm_kernels();
#endif
  (void)level;
  return isa_baseline::q4gemm_kernels();
}

}  // namespace

const Q4Kernels& q4gemm_kernels() {
  static const Q4Kernels* chosen = table_for(isa_level());
  return *chosen;
}

Q4Weights::~Q4Weights() {
  std::free(data_);
  std::free(scales_);
  std::free(scales16_);
}

bool Q4Weights::pack(int64_t n, int64_t k, int64_t gs, const uint8_t* nibbles,
                     const float* scales) {
  if (n < 1 || k < 1 || gs < 8 || gs % 8 != 0 || k % gs != 0 || k % 2 != 0) return false;
  const int64_t panels = (n + kQ4Nr - 1) / kQ4Nr, groups = k / gs;
  bool bf16 = true;  // every scale a bfloat16: its low 16 bits zero
  for (int64_t i = 0; i < n * groups && bf16; ++i) {
    uint32_t u;
    std::memcpy(&u, scales + i, 4);
    bf16 = (u & 0xFFFFu) == 0;
  }
  std::free(data_);
  std::free(scales_);
  std::free(scales16_);
  scales_ = nullptr, scales16_ = nullptr;
  data_ = static_cast<uint8_t*>(std::calloc(size_t(panels * (k / 2) * kQ4Nr), 1));
  const size_t nsc = size_t(panels * groups * kQ4Nr);
  if (bf16)
    scales16_ = static_cast<uint16_t*>(std::calloc(nsc, sizeof(uint16_t)));
  else
    scales_ = static_cast<float*>(std::calloc(nsc, sizeof(float)));
  if (!data_ || (!scales_ && !scales16_)) {
    std::free(data_);
    std::free(scales_);
    std::free(scales16_);
    data_ = nullptr, scales_ = nullptr, scales16_ = nullptr;
    return false;
  }
  bf16_ = bf16;
  n_ = n, k_ = k, gs_ = gs;
  auto code = [&](int64_t j, int64_t t) -> uint8_t {  // weight (j, t)'s 4-bit code
    const uint8_t b = nibbles[(j * k + t) / 2];
    return ((j * k + t) & 1) ? uint8_t(b >> 4) : uint8_t(b & 15);
  };
  for (int64_t j = 0; j < n; ++j) {
    const int64_t p = j / kQ4Nr, c = j % kQ4Nr;
    uint8_t* panel = data_ + p * panel_bytes();
    for (int64_t g = 0; g < groups; ++g) {
      const float sv = scales[j * groups + g];
      if (bf16) {
        uint32_t u;
        std::memcpy(&u, &sv, 4);
        scales16_[(p * groups + g) * kQ4Nr + c] = uint16_t(u >> 16);
      } else {
        scales_[(p * groups + g) * kQ4Nr + c] = sv;
      }
      for (int64_t b = 0; b < gs / 8; ++b) {
        uint8_t* block = panel + (g * (gs / 8) + b) * 64;
        for (int64_t t = 0; t < 4; ++t) {
          const int64_t at = g * gs + 8 * b + t;
          block[4 * c + t] = uint8_t(code(j, at) | (code(j, at + 4) << 4));
        }
      }
    }
  }
  return true;
}

namespace {

struct Q4Job {
  const Q4Kernels* kt;
  const Q4Args* a;
  int64_t mt, pt, ptiles;  // tile: rows, panels; tiles along the panels
};

void run_q4tiles(void* user, int64_t begin, int64_t end) {
  const Q4Job& j = *static_cast<const Q4Job*>(user);
  const int64_t panels = j.a->w->panels();
  for (int64_t t = begin; t < end; ++t) {
    const int64_t i0 = (t / j.ptiles) * j.mt, p0 = (t % j.ptiles) * j.pt;
    const int64_t i1 = std::min(j.a->m, i0 + j.mt), p1 = std::min(panels, p0 + j.pt);
    j.kt->ukernel(*j.a, i0, i1 - i0, p0, p1);
  }
}

}  // namespace

bool q4gemm(int64_t m, const int8_t* x, int64_t ldx, const int32_t* xzp, const float* xscale,
            const Q4Weights& w, const float* bias, float* y, int64_t ldy, float lo, float hi) {
  if (m <= 0) return true;
  const int64_t groups = w.groups(), gs = w.group_size();
  std::vector<int32_t> corr;
  try {
    corr.resize(size_t(m * groups));
  } catch (...) {
    return false;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      int32_t s = 0;
      const int8_t* xg = x + i * ldx + g * gs;
      for (int64_t t = 0; t < gs; ++t) s += xg[t];
      corr[size_t(i * groups + g)] = 8 * (s - xzp[i] * int32_t(gs));
    }
  Q4Args a;
  a.m = m, a.x = x, a.ldx = ldx, a.xzp = xzp, a.xscale = xscale, a.xcorr = corr.data();
  a.w = &w, a.bias = bias, a.y = y, a.ldy = ldy, a.lo = lo, a.hi = hi;
  Q4Job j{};
  j.kt = &q4gemm_kernels();
  j.a = &a;
  // Tiles of up to 16 rows (a multiple of the level's rows) x 4 panels (64 output channels),
  // the panels shrunk until there are at least 4 tiles per thread: a decoded token (m = 1)
  // splits its output channels over the threads. A call that reads under 128 KiB of weights
  // per 4 rows (some 8 us on one core) stays on the calling thread. Measured on a quiet 2-vCPU
  // Zen 4 (stories110M 8da4w, one decoded token): 3.4 ms at 1 thread; 2.3 ms at 2 threads with
  // every layer split (768 x 768 and up: 288 KiB and more); 3.5 ms when layers under 1 MiB
  // stayed serial.
  const int64_t panels = w.panels();
  const int64_t bytes = panels * w.panel_bytes() * ((m + 3) / 4);
  const int64_t threads =
      bytes < (int64_t(1) << 17) ? 1 : std::max<int64_t>(1, pteron_parallel_threads());
  j.mt = std::max<int64_t>(j.kt->mr, 16 / j.kt->mr * j.kt->mr);
  j.pt = std::min<int64_t>(panels, 4);
  const int64_t mtiles = (m + j.mt - 1) / j.mt;
  while (j.pt > 1 && mtiles * ((panels + j.pt - 1) / j.pt) < 4 * threads) --j.pt;
  j.ptiles = (panels + j.pt - 1) / j.pt;
  const int64_t tiles = mtiles * j.ptiles;
  if (threads <= 1 || tiles == 1)
    run_q4tiles(&j, 0, tiles);
  else
    pteron_parallel_for(0, tiles, 1, run_q4tiles, &j);
  return true;
}

}  // namespace pteron_cpu
