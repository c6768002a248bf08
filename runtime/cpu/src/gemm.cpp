// SPDX-License-Identifier: BSD-3-Clause
// gemm.cpp - the driver of gemm.h, compiled at the baseline ISA: weight packing, the choice
// of microkernel table, the tile split over pteron_parallel_for.
#include "pteron_cpu/gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
#include <immintrin.h>
#endif

#include "pteron_cpu/isa.h"
#include "pteron/kernel.h"
#include "pteron/types.h"

namespace pteron_cpu {

// ---- PackedWeights ----------------------------------------------------------------------------

PackedWeights::PackedWeights(PackedWeights&& o) noexcept { *this = std::move(o); }

PackedWeights& PackedWeights::operator=(PackedWeights&& o) noexcept {
  if (this != &o) {
    release();
    k_ = o.k_, n_ = o.n_, capacity_ = o.capacity_, data_ = o.data_, block_ = o.block_;
    o.k_ = o.n_ = 0, o.capacity_ = 0, o.data_ = nullptr, o.block_ = nullptr;
  }
  return *this;
}

PackedWeights::~PackedWeights() { release(); }

void PackedWeights::release() {
  std::free(block_);
  block_ = nullptr, data_ = nullptr, capacity_ = 0, k_ = n_ = 0;
}

namespace {

// out[r * kGemmNr + j] = src[j * ld + r] for j < kGemmNr, r < 4 (4 rows of a panel from 16
// columns of an N x K matrix).
void transpose_16x4(const float* src, int64_t ld, float* out) {
#if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
  for (int64_t j = 0; j < kGemmNr; j += 4) {
    __m128 r0 = _mm_loadu_ps(src + (j + 0) * ld), r1 = _mm_loadu_ps(src + (j + 1) * ld);
    __m128 r2 = _mm_loadu_ps(src + (j + 2) * ld), r3 = _mm_loadu_ps(src + (j + 3) * ld);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    _mm_storeu_ps(out + 0 * kGemmNr + j, r0);
    _mm_storeu_ps(out + 1 * kGemmNr + j, r1);
    _mm_storeu_ps(out + 2 * kGemmNr + j, r2);
    _mm_storeu_ps(out + 3 * kGemmNr + j, r3);
  }
#else
  for (int64_t j = 0; j < kGemmNr; ++j)
    for (int64_t r = 0; r < 4; ++r) out[r * kGemmNr + j] = src[j * ld + r];
#endif
}

}  // namespace

bool PackedWeights::pack(int64_t k, int64_t n, const float* b, int64_t ldb, bool nk,
                         const float* bias) {
  if (k < 0 || n < 0) return false;
  const int64_t panels = (n + kGemmNr - 1) / kGemmNr;
  const size_t need = size_t(panels) * size_t(k + 1) * size_t(kGemmNr);
  if (need > capacity_ || data_ == nullptr) {
    release();
    // 64-byte aligned inside a malloc block (std::aligned_alloc is missing on MinGW / MSVC).
    void* block = std::malloc(std::max<size_t>(need, 1) * sizeof(float) + 64);
    if (!block) return false;
    block_ = block;
    data_ = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(block) + 63) & ~uintptr_t(63));
    capacity_ = std::max<size_t>(need, 1);
  }
  k_ = k, n_ = n;
  for (int64_t q = 0; q < panels; ++q) {
    float* out = data_ + q * (k + 1) * kGemmNr;
    const int64_t j0 = q * kGemmNr, nc = std::min(kGemmNr, n - j0);
    std::memset(out, 0, sizeof(float) * size_t(kGemmNr));
    if (bias) std::memcpy(out, bias + j0, sizeof(float) * size_t(nc));
    out += kGemmNr;
    if (!nk && nc == kGemmNr) {
      // A constant-size copy per row (inlined; a batch matmul packs B at every run).
      for (int64_t p = 0; p < k; ++p, out += kGemmNr)
        std::memcpy(out, b + p * ldb + j0, sizeof(float) * size_t(kGemmNr));
    } else if (!nk) {
      for (int64_t p = 0; p < k; ++p, out += kGemmNr) {
        std::memcpy(out, b + p * ldb + j0, sizeof(float) * size_t(nc));
        for (int64_t j = nc; j < kGemmNr; ++j) out[j] = 0.0f;
      }
    } else {
      int64_t p = 0;
      if (nc == kGemmNr)  // 4 x 4 blocks: 4 contiguous values read from each of 4 columns
        for (; p + 4 <= k; p += 4, out += 4 * kGemmNr) transpose_16x4(b + j0 * ldb + p, ldb, out);
      for (; p < k; ++p, out += kGemmNr) {
        for (int64_t j = 0; j < nc; ++j) out[j] = b[(j0 + j) * ldb + p];
        for (int64_t j = nc; j < kGemmNr; ++j) out[j] = 0.0f;
      }
    }
  }
  return true;
}

// ---- kernels ------------------------------------------------------------------------------------

namespace {

const GemmKernels* table_for(int level) {
#if defined(PTERON_CPU_HAVE_X86_ISAS)
  if (level >= 2) return isa_avx512::gemm_kernels();
  if (level == 1) return isa_avx2::gemm_kernels();
#endif
  (void)level;
  return isa_baseline::gemm_kernels();
}

struct Job {
  const GemmKernels* kt;
  int64_t m;
  const float* a;
  int64_t lda;
  const PackedWeights* w;
  float* c;
  int64_t ldc;
  float minmax[2];
  int64_t mt, nt;                      // tile: rows (a multiple of kt->mr), panels
  int64_t mtiles, ntiles;              // tiles along M and along N
  bool rows_first = false;             // tiles numbered along N first (split()'s choice)
  const float* const* rows = nullptr;  // indirect rows (then a and lda unused)
  int64_t segs = 0, seglen = 0, aoff = 0;
  GemmAct act;
  GemmPre pre;                              // gemm_packed_pre's map of A (pre.scale set)
  std::atomic<bool>* pre_failed = nullptr;  // set by a tile whose buffer could not be had
};

// A thread's buffer for the rows of A mapped by Job::pre: kept between calls (it grows to the
// largest tile rows x K the thread has seen), so a delegate's 1x1 convolutions allocate it once.
thread_local std::vector<float> t_pre_rows;

// Rows [i0, i1) of A mapped by j.pre into t_pre_rows (row stride K); null when the buffer
// cannot grow.
const float* map_rows(const Job& j, int64_t i0, int64_t i1) {
  const int64_t k = j.w->k(), rows = i1 - i0;
  const size_t need = size_t(rows) * size_t(k);
  if (t_pre_rows.size() < need) {
    try {
      t_pre_rows.resize(need);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  float* buf = t_pre_rows.data();
  // nhwc.h's 1x1 depthwise row (one FMA per value, then the clamp): the results of the node
  // this map replaces, bit for bit. Dense rows go as one row of `rows` pixels.
  const auto dw_row = nhwc_ops().dw_row;
  DwRow r;
  r.c = k, r.w = j.pre.scale, r.bias = j.pre.shift, r.lo = j.pre.lo, r.hi = j.pre.hi;
  r.clamp = j.pre.lo > -std::numeric_limits<float>::infinity() ||
            j.pre.hi < std::numeric_limits<float>::infinity();
  const bool dense = j.lda == k;
  for (int64_t i = i0; i < i1; i += dense ? rows : 1) {
    const float* row = j.a + i * j.lda;
    r.rows = &row, r.out = buf + (i - i0) * k;
    r.iw = r.ow = dense ? rows : 1;
    dw_row(r);
  }
  return buf;
}

// Rows [i0, i1) x panels [q0, q1): panel outer, so one packed panel (k x 16 floats) serves
// every row block of the tile while it is in cache. The pool deals contiguous shares of tile
// numbers to its threads, so the numbering decides what each thread reads (split()):
//  - by columns (tile t: row tile t % mtiles, panel tile t / mtiles): each thread reads its own
//    columns of B and all of A (B larger than A and C: a fully connected layer's weights);
//  - by rows (rows_first: row tile t / ntiles, panel tile t % ntiles): each thread reads its
//    own rows of A, which it wrote itself in the node before when that node split its rows
//    the same way, and writes its own rows of C (B smaller: a convolution's filter).
void run_tile(const Job& j, int64_t i0, int64_t i1, int64_t q0, int64_t q1) {
  const int64_t mr = j.kt->mr, n = j.w->n(), k = j.w->k();
  // Row i of the A the microkernels read: a + (i - a0) * lda.
  const float* a = j.a;
  int64_t lda = j.lda, a0 = 0;
  if (j.pre.scale && !j.rows) {
    a = map_rows(j, i0, i1);
    if (!a) {
      j.pre_failed->store(true, std::memory_order_relaxed);
      return;
    }
    lda = k, a0 = i0;
  }
  for (int64_t q = q0; q < q1; ++q) {
    const float* panel = j.w->panel(q);
    if (q + 1 < q1 && j.kt->ukernel2) {  // two panels per call (one vector per panel row)
      const float* panel2 = j.w->panel(q + 1);
      const int64_t nc = std::min(2 * kGemmNr, n - q * kGemmNr);
      for (int64_t i = i0; i < i1; i += mr) {
        const int64_t rows = std::min(mr, i1 - i);
        float* c = j.c + i * j.ldc + q * kGemmNr;
        if (rows == 1 && j.rows)
          for (int64_t h = 0; h < 2; ++h)
            j.kt->iukernel_1row(1, std::min(kGemmNr, nc - h * kGemmNr), j.segs, j.seglen,
                                j.rows + i * j.segs, j.aoff, h ? panel2 : panel,
                                c + h * kGemmNr, j.ldc, j.minmax);
        else if (rows == 1)
          for (int64_t h = 0; h < 2; ++h)
            j.kt->ukernel_1row(1, std::min(kGemmNr, nc - h * kGemmNr), k, a + (i - a0) * lda, lda,
                               h ? panel2 : panel, c + h * kGemmNr, j.ldc, j.minmax);
        else if (j.rows)
          j.kt->iukernel2(rows, nc, j.segs, j.seglen, j.rows + i * j.segs, j.aoff, panel, panel2,
                          c, j.ldc, j.minmax);
        else
          j.kt->ukernel2(rows, nc, k, a + (i - a0) * lda, lda, panel, panel2, c, j.ldc,
                         j.minmax);
      }
      ++q;
      continue;
    }
    const int64_t nc = std::min(kGemmNr, n - q * kGemmNr);
    for (int64_t i = i0; i < i1; i += mr) {
      const int64_t rows = std::min(mr, i1 - i);
      float* c = j.c + i * j.ldc + q * kGemmNr;
      if (j.rows)
        (rows == 1 ? j.kt->iukernel_1row : j.kt->iukernel)(
            rows, nc, j.segs, j.seglen, j.rows + i * j.segs, j.aoff, panel, c, j.ldc, j.minmax);
      else
        (rows == 1 ? j.kt->ukernel_1row : j.kt->ukernel)(rows, nc, k, a + (i - a0) * lda, lda,
                                                         panel, c, j.ldc, j.minmax);
    }
  }
  const int64_t c0 = q0 * kGemmNr, c1 = std::min(n, q1 * kGemmNr);
  // The tile's rows are contiguous when it covers every column of a dense C: one call each.
  const bool whole = c0 == 0 && c1 == n && j.ldc == n;
  if (j.act.on) {  // the fused activation, on the tile's outputs while they are in cache
    const auto unary = nhwc_ops().unary;
    if (whole) {
      float* t = j.c + i0 * j.ldc;
      unary(j.act.op, t, t, (i1 - i0) * n, 0.0f, 0.0f);
    } else {
      for (int64_t i = i0; i < i1; ++i) {
        float* row = j.c + i * j.ldc + c0;
        unary(j.act.op, row, row, c1 - c0, 0.0f, 0.0f);
      }
    }
  }
  if (j.act.res) {  // the fused residual Add (GemmAct), after the activation
    const auto binary = nhwc_ops().binary;
    const float lo = j.act.res_lo, hi = j.act.res_hi;
    const bool clamp = lo > -std::numeric_limits<float>::infinity() ||
                       hi < std::numeric_limits<float>::infinity();
    if (whole && j.act.ldr == n) {
      float* t = j.c + i0 * j.ldc;
      binary(NBinary::Add, NMode::VV, t, j.act.res + i0 * j.act.ldr, t, (i1 - i0) * n, lo, hi,
             clamp);
      return;
    }
    for (int64_t i = i0; i < i1; ++i) {
      float* row = j.c + i * j.ldc + c0;
      binary(NBinary::Add, NMode::VV, row, j.act.res + i * j.act.ldr + c0, row, c1 - c0, lo, hi,
             clamp);
    }
  }
}

void run_tiles(void* user, int64_t begin, int64_t end) {
  const Job& j = *static_cast<const Job*>(user);
  const int64_t panels = (j.w->n() + kGemmNr - 1) / kGemmNr;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t i0 = (j.rows_first ? t / j.ntiles : t % j.mtiles) * j.mt;
    const int64_t q0 = (j.rows_first ? t % j.ntiles : t / j.mtiles) * j.nt;
    run_tile(j, i0, std::min(j.m, i0 + j.mt), q0, std::min(panels, q0 + j.nt));
  }
}

Job make_job(int64_t m, const float* a, int64_t lda, const PackedWeights& w, float* c, int64_t ldc,
             float lo, float hi, GemmAct act) {
  Job j{};
  j.act = act;
  j.kt = &gemm_kernels();
  j.m = m, j.a = a, j.lda = lda, j.w = &w, j.c = c, j.ldc = ldc;
  j.minmax[0] = lo, j.minmax[1] = hi;
  return j;
}

}  // namespace

const GemmKernels& gemm_kernels() {
  static const GemmKernels* chosen = table_for(isa_level());
  return *chosen;
}

int64_t gemm_rows_per_block() { return gemm_kernels().mr; }

namespace {

// The tile split of an M x N problem for `threads` threads. Returns the number of tiles.
//  - By columns (the default): tiles of up to 8 row blocks x 8 panels (a tile's A rows and one
//    packed panel stay in L2 while the tile runs), shrunk along the long side until there are
//    about four tiles per thread (N split when M is one block, M split when N is one panel).
//  - By rows, when several threads share the work, M has at least two row blocks per thread,
//    and the packed B is no larger than A and C together, nor than 1 MiB: each thread then
//    reads all of B (a convolution's filter, tens to hundreds of KiB, from the shared cache)
//    but only its own rows of A and C. Split by columns, every thread read all of A, half of
//    it from the other core's cache where the node before split its rows (a depthwise
//    convolution or an element-wise node), and wrote C in columns that the next node reads
//    by rows: MobileNetV2's 14 x 14 x 384 -> 64 projection took 55 us at 2 threads against
//    68 at 1, and 35 split by rows, on a 2-vCPU Xeon (family 6, model 207). Whole panels per
//    tile while there are about four tiles per thread (at most 8 row blocks each, as above);
//    N is split only when M runs out of row blocks. (Large weights, the MLP's 4 MiB, stay
//    split by columns: each thread streams only its part of them.)
int64_t split(Job& j, int64_t threads) {
  const int64_t mr = j.kt->mr, panels = (j.w->n() + kGemmNr - 1) / kGemmNr;
  const int64_t mblocks = (j.m + mr - 1) / mr;
  const int64_t want = threads > 1 ? 4 * threads : 1;
  const int64_t b_bytes = panels * kGemmNr * (j.w->k() + 1) * int64_t(sizeof(float));
  const int64_t ac_bytes = j.m * (j.w->k() + j.w->n()) * int64_t(sizeof(float));
  j.rows_first = threads > 1 && mblocks >= 2 * threads &&
                 b_bytes <= std::min<int64_t>(ac_bytes, int64_t(1) << 20);
  int64_t mb, nt;
  auto tiles = [&] { return ((mblocks + mb - 1) / mb) * ((panels + nt - 1) / nt); };
  if (j.rows_first) {
    mb = std::min<int64_t>(8, std::max<int64_t>(1, mblocks / want)), nt = panels;
    while (tiles() < want && nt > 1) nt = (nt + 1) / 2;
  } else {
    mb = std::min<int64_t>(mblocks, 8), nt = std::min<int64_t>(panels, 8);
    while (tiles() < want && (mb > 1 || nt > 1)) {
      if (nt > 1 && (nt >= mb || mb == 1))
        nt = (nt + 1) / 2;
      else
        mb = (mb + 1) / 2;
    }
  }
  // Two panels per microkernel call where the level has it: tiles of whole pairs.
  if (j.kt->ukernel2 && nt > 1 && nt % 2) nt = std::min(panels, nt + 1);
  j.mt = mb * mr, j.nt = nt;
  j.mtiles = (mblocks + mb - 1) / mb;
  j.ntiles = (panels + nt - 1) / nt;
  return j.mtiles * j.ntiles;
}

// The tiles of j over pteron_parallel_for; small problems (under ~64 K multiply-adds) stay on
// the calling thread.
void run_parallel(Job& j) {
  int64_t threads = std::max<int32_t>(1, pteron_parallel_threads());
  if (j.m * j.w->n() * std::max<int64_t>(j.w->k(), 1) < (int64_t(1) << 16)) threads = 1;
  const int64_t tiles = split(j, threads);
  if (threads == 1)
    run_tiles(&j, 0, tiles);
  else
    pteron_parallel_for(0, tiles, 1, &run_tiles, &j);
}

}  // namespace

void gemm_packed_serial(int64_t m, const float* a, int64_t lda, const PackedWeights& w, float* c,
                        int64_t ldc, float lo, float hi, GemmAct act) {
  if (m <= 0 || w.n() <= 0 || w.empty()) return;
  Job j = make_job(m, a, lda, w, c, ldc, lo, hi, act);
  run_tiles(&j, 0, split(j, 1));
}

void gemm_packed_indirect_serial(int64_t m, int64_t segs, int64_t seglen, const float* const* rows,
                                 int64_t aoff, const PackedWeights& w, float* c, int64_t ldc,
                                 float lo, float hi, GemmAct act) {
  if (m <= 0 || w.n() <= 0 || w.empty() || segs <= 0 || segs * seglen != w.k()) return;
  Job j = make_job(m, nullptr, 0, w, c, ldc, lo, hi, act);
  j.rows = rows, j.segs = segs, j.seglen = seglen, j.aoff = aoff;
  run_tiles(&j, 0, split(j, 1));
}

void gemm_packed_indirect(int64_t m, int64_t segs, int64_t seglen, const float* const* rows,
                          int64_t aoff, const PackedWeights& w, float* c, int64_t ldc, float lo,
                          float hi, GemmAct act) {
  if (m <= 0 || w.n() <= 0 || w.empty() || segs <= 0 || segs * seglen != w.k()) return;
  Job j = make_job(m, nullptr, 0, w, c, ldc, lo, hi, act);
  j.rows = rows, j.segs = segs, j.seglen = seglen, j.aoff = aoff;
  run_parallel(j);
}

void gemm_packed(int64_t m, const float* a, int64_t lda, const PackedWeights& w, float* c,
                 int64_t ldc, float lo, float hi, GemmAct act) {
  if (m <= 0 || w.n() <= 0 || w.empty()) return;
  Job j = make_job(m, a, lda, w, c, ldc, lo, hi, act);
  run_parallel(j);
}

bool gemm_packed_pre(int64_t m, const float* a, int64_t lda, const GemmPre& pre,
                     const PackedWeights& w, float* c, int64_t ldc, float lo, float hi,
                     GemmAct act) {
  if (m <= 0 || w.n() <= 0 || w.empty()) return true;
  std::atomic<bool> failed{false};
  Job j = make_job(m, a, lda, w, c, ldc, lo, hi, act);
  j.pre = pre, j.pre_failed = &failed;
  run_parallel(j);
  return !failed.load();
}

}  // namespace pteron_cpu
