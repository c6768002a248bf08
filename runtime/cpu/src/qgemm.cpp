// SPDX-License-Identifier: BSD-3-Clause
// qgemm.cpp - qgemm.h's level choice, weight packing and parallel driver (the baseline ISA).
#include "pteron_cpu/qgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "pteron_cpu/isa.h"
#include "pteron_cpu/nhwc.h"  // grain_for
#include "pteron/kernel.h"  // pteron_parallel_for

namespace pteron_cpu {

namespace {

const QGemmKernels* table_for(int level) {
#if defined(PTERON_CPU_HAVE_X86_ISAS)
  if (level >= 2 && isa_vnni()) return isa_avx512vnni::qgemm_kernels();
  if (level >= 2) return isa_avx512::qgemm_kernels();
  if (level == 1) return isa_avx2::qgemm_kernels();
#endif
  (void)level;
  return isa_baseline::qgemm_kernels();
}

}  // namespace

const QGemmKernels& qgemm_kernels() {
  static const QGemmKernels* chosen = table_for(isa_level());
  return *chosen;
}

QPackedWeights::~QPackedWeights() {
  std::free(data_);
  std::free(colsum_);
}

const void* QPackedWeights::panel(int64_t q) const {
  return static_cast<const char*>(data_) + q * panel_bytes_;
}

bool QPackedWeights::pack(int64_t n, int64_t segs, int64_t seglen, const int8_t* w) {
  const QGemmKernels& kt = qgemm_kernels();
  const int64_t k = segs * seglen;
  if (n < 1 || segs < 1 || seglen < 1 || k > kQGemmMaxK) return false;
  const int64_t seglen4 = (seglen + 3) / 4 * 4;
  const int64_t panels = (n + kQGemmNr - 1) / kQGemmNr;
  const int64_t panel_bytes = segs * seglen4 * kQGemmNr * kt.w_bytes;
  std::free(data_);
  std::free(colsum_);
  data_ = std::calloc(size_t(panels * panel_bytes), 1);
  // padded to whole panels: the vector epilogues read 16 columns
  colsum_ = static_cast<int32_t*>(std::calloc(size_t(panels * kQGemmNr), sizeof(int32_t)));
  if (!data_ || !colsum_) {
    std::free(data_);
    std::free(colsum_);
    data_ = nullptr, colsum_ = nullptr;
    return false;
  }
  n_ = n, segs_ = segs, seglen_ = seglen, panel_bytes_ = panel_bytes;
  groups_ = seglen4 / kt.k_group;
  const int64_t kg = kt.k_group;
  for (int64_t j = 0; j < n; ++j) {
    const int8_t* row = w + j * k;
    int32_t sum = 0;
    for (int64_t p = 0; p < k; ++p) sum += row[p];
    colsum_[j] = sum;
    const int64_t q = j / kQGemmNr, col = j % kQGemmNr;
    char* panel = static_cast<char*>(data_) + q * panel_bytes;
    for (int64_t s = 0; s < segs; ++s)
      for (int64_t p = 0; p < seglen; ++p) {
        // panel row (s, p / kg): kQGemmNr columns of kg taps
        const int64_t idx = ((s * (seglen4 / kg) + p / kg) * kQGemmNr + col) * kg + p % kg;
        if (kt.w_bytes == 1)
          reinterpret_cast<int8_t*>(panel)[idx] = row[s * seglen + p];
        else
          reinterpret_cast<int16_t*>(panel)[idx] = row[s * seglen + p];
      }
  }
  return true;
}

namespace {

struct QJob {
  const QGemmKernels* kt;
  int64_t m;
  const void* const* rows;
  const QPackedWeights* w;
  const QGemmOut* out;
  int64_t mt, nt, ntiles;  // tile: rows (a multiple of mr), panels; tiles along N
};

void run_qtiles(void* user, int64_t begin, int64_t end) {
  const QJob& j = *static_cast<const QJob*>(user);
  const int64_t mr = j.kt->mr, n = j.w->n(), segs = j.w->segs();
  const int64_t panels = (n + kQGemmNr - 1) / kQGemmNr;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t i0 = (t / j.ntiles) * j.mt, q0 = (t % j.ntiles) * j.nt;
    const int64_t i1 = std::min(j.m, i0 + j.mt), q1 = std::min(panels, q0 + j.nt);
    const int64_t step = j.kt->panels;
    for (int64_t q = q0; q < q1; q += step) {
      const void* panel = j.w->panel(q);
      const int64_t nc = std::min(kQGemmNr * std::min(step, q1 - q), n - q * kQGemmNr);
      for (int64_t i = i0; i < i1; i += mr)
        j.kt->ukernel(std::min(mr, i1 - i), nc, segs, j.w->groups(), j.rows + i * segs, panel,
                      j.w->panel_bytes(), *j.out, i, q * kQGemmNr);
    }
  }
}

}  // namespace

void qgemm_indirect(int64_t m, const void* const* rows, const QPackedWeights& w,
                    const QGemmOut& out) {
  if (m <= 0 || w.n() <= 0) return;
  QJob j{};
  j.kt = &qgemm_kernels();
  j.m = m, j.rows = rows, j.w = &w, j.out = &out;
  const int64_t mr = j.kt->mr, panels = (w.n() + kQGemmNr - 1) / kQGemmNr;
  const int64_t mblocks = (m + mr - 1) / mr;
  // Tiles of up to 8 row blocks x 8 panels, shrunk until there are about 4 per thread.
  // Small problems (under ~64 K multiply-adds, gemm.cpp's bound) stay on the calling thread.
  const int64_t macs = m * w.n() * w.segs() * w.seglen();
  const int64_t threads =
      macs < (int64_t(1) << 16) ? 1 : std::max<int64_t>(1, pteron_parallel_threads());
  int64_t mb = std::min<int64_t>(mblocks, 8), nt = std::min<int64_t>(panels, 8);
  auto count = [&] { return ((mblocks + mb - 1) / mb) * ((panels + nt - 1) / nt); };
  while (count() < 4 * threads && (mb > 1 || nt > 1)) {
    if (mb >= nt && mb > 1)
      mb = (mb + 1) / 2;
    else
      nt = (nt + 1) / 2;
  }
  if (j.kt->panels > 1 && nt > 1) nt = (nt + j.kt->panels - 1) / j.kt->panels * j.kt->panels;
  j.mt = mb * mr, j.nt = nt, j.ntiles = (panels + nt - 1) / nt;
  const int64_t tiles = ((m + j.mt - 1) / j.mt) * j.ntiles;
  if (threads <= 1 || tiles <= 1)
    run_qtiles(&j, 0, tiles);
  else
    pteron_parallel_for(0, tiles, 1, run_qtiles, &j);
}

namespace {

struct QDwJob {
  const QDwConv* p;
  const uint8_t* x;
};

void run_qdw(void* user, int64_t begin, int64_t end) {
  const QDwJob& j = *static_cast<const QDwJob*>(user);
  qgemm_kernels().dwconv(*j.p, j.x, begin, end);
}

struct QAddJob {
  const QAdd* p;
  const uint8_t *a, *b;
};

// Elements per chunk: small enough that a tensor the node before split between the threads
// is split here too, each thread reading what it wrote (a 28 x 28 x 32 sum in one chunk of
// 16 K took longer at 2 threads than at 1).
constexpr int64_t kQAddChunk = 4096;

void run_qadd(void* user, int64_t begin, int64_t end) {
  const QAddJob& j = *static_cast<const QAddJob*>(user);
  const int64_t at = begin * kQAddChunk;
  qgemm_kernels().add(*j.p, j.a + at, j.b + at, (end - begin) * kQAddChunk, at);
}

}  // namespace

void qdwconv(const QDwConv& p, const uint8_t* x) {
  const int64_t rows = p.n * p.oh;
  if (rows <= 0 || p.ow <= 0 || p.c <= 0) return;
  QDwJob j{&p, x};
  // The float depthwise convolution's split (nhwc.h, grain_for: multiply-adds, taps counted).
  // 32 K outputs a chunk left a 28 x 28 x 144 stride-2 layer in 3 chunks of 8-10 rows, one of
  // 2 threads with twice the other's share, and the rows each thread wrote were not the ones
  // the next node read.
  const int64_t grain = grain_for(p.ow * p.c * std::max<int64_t>(1, p.kh * p.kw));
  if (pteron_parallel_threads() <= 1 || rows <= grain)
    run_qdw(&j, 0, rows);
  else
    pteron_parallel_for(0, rows, grain, run_qdw, &j);
}

void qadd(const QAdd& p, const uint8_t* a, const uint8_t* b, int64_t n) {
  if (n <= 0) return;
  const int64_t whole = n / kQAddChunk;
  QAddJob j{&p, a, b};
  if (whole > 0) {
    if (pteron_parallel_threads() <= 1 || whole == 1)
      run_qadd(&j, 0, whole);
    else
      pteron_parallel_for(0, whole, 1, run_qadd, &j);
  }
  const int64_t at = whole * kQAddChunk;
  if (at < n) qgemm_kernels().add(p, a + at, b + at, n - at, at);
}

}  // namespace pteron_cpu
