// SPDX-License-Identifier: BSD-3-Clause
// gemm.h - packed-weight GEMM (fully connected, convolution as GEMM, batch matmul): weight packing,
// register-blocked microkernels per ISA level, the parallel driver. Part of pteron_cpu
// (runtime/cpu/CMakeLists.txt); the per-ISA hot loops are in gemm_kernels.cpp, the driver
// and the packing in gemm.cpp.
//
// What it computes (float32 throughout, all sizes and strides in elements, never bytes):
//
//   C[i, j] = clamp(bias[j] + sum over p < K of A[i, p] * B[p, j], lo, hi)
//   for i < M, j < N; A[i, p] at a[i * lda + p]; C[i, j] at c[i * ldc + j].
//
// B and the bias are packed once (PackedWeights::pack) into panels of kGemmNr columns:
// panel q holds columns [q * kGemmNr, q * kGemmNr + kGemmNr), first the kGemmNr bias values,
// then for each p < K the kGemmNr values B[p, j], columns past N (and a missing bias) as zeros.
// One layout for every ISA level, so packed weights stay valid whichever level runs.
//
// clamp(x, lo, hi) = min(max(x, lo), hi) with NaN kept (a NaN sum stays NaN, as PyTorch's
// relu / hardtanh do); lo = -inf, hi = +inf is no clamp. The sums are float32 with FMA at the
// AVX2 and AVX-512 levels, separate multiply and add at the baseline: results differ from a
// naive loop by rounding only (the K sum is sequential per output, except for single rows:
// there 4 interleaved partial sums, p = 0, 4, 8, ... and so on, added at the end).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "pteron_cpu/nhwc.h"  // NUnary

namespace pteron_cpu {

constexpr int64_t kGemmNr = 16;  // columns per packed panel (all ISA levels)

// Packed B (K x N) and bias. Owns 64-byte aligned memory; movable, not copyable.
class PackedWeights {
 public:
  PackedWeights() = default;
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;
  PackedWeights(PackedWeights&& o) noexcept;
  PackedWeights& operator=(PackedWeights&& o) noexcept;
  ~PackedWeights();

  // Packs B and bias. B's element (p, j), p < k, j < n, is at
  //   b[p * ldb + j]   when nk == false (B stored K x N: XNNPACK's fully connected with
  //                    XNN_FLAG_TRANSPOSE_WEIGHTS, a batch matmul's plain B),
  //   b[j * ldb + p]   when nk == true  (B stored N x K: PyTorch's Linear weight, XNNPACK's
  //                    default fully connected filter [output_channels, input_channels], a
  //                    convolution's OHWI filter with K = kh * kw * group_input_channels).
  // bias: n values or null (zeros). Reuses its memory when it is large enough (a batch matmul
  // packs at every run). False only when memory cannot be had (then empty()).
  bool pack(int64_t k, int64_t n, const float* b, int64_t ldb, bool nk, const float* bias);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  bool empty() const { return data_ == nullptr; }
  // Panel q (q < ceil(n / kGemmNr)): kGemmNr bias values, then k rows of kGemmNr values.
  const float* panel(int64_t q) const { return data_ + q * (k_ + 1) * kGemmNr; }

 private:
  void release();
  int64_t k_ = 0, n_ = 0;
  size_t capacity_ = 0;  // floats
  float* data_ = nullptr;
  void* block_ = nullptr;  // what malloc returned (data_ is aligned inside it)
};

// What a GEMM applies to each tile right after computing it (while the tile is in cache), in
// this order:
//  - an activation, when `on`: C = op(clamp(...)) for every output. op: one of nhwc.h's unary
//    functions without parameters (Sigmoid, Silu, Hardswish);
//  - a residual, when `res` is set: C[i, j] = min(max(C[i, j] + res[i * ldr + j], res_lo),
//    res_hi) (NaN kept; no clamp when both bounds are infinite), j < N. That is a same-shape
//    Add node after the GEMM (a ResNet or MobileNetV2 block's skip connection), bit for bit:
//    nhwc.h's binary Add, done on the tile instead of in a pass over the whole tensor. res must
//    not overlap C; the indirect serial entry points take res at their first row, as they take c.
struct GemmAct {
  bool on = false;
  NUnary op = NUnary::Abs;
  const float* res = nullptr;
  int64_t ldr = 0;
  float res_lo = -std::numeric_limits<float>::infinity();
  float res_hi = std::numeric_limits<float>::infinity();
};

// A per-column map of A applied before the product (when `scale` is set): the GEMM multiplies
// A'[i][p] = min(max(A[i][p] * scale[p] + shift[p], lo), hi) (NaN kept), p < K, each of scale
// and shift K floats. It is a 1x1 depthwise convolution (a batch norm and its ReLU, as in
// DenseNet's pre-activation layers) done on each tile's rows while they are in cache, in place
// of a pass over the whole tensor: each tile maps its rows into a per-thread buffer of
// tile rows x K floats, so A itself is left as it is.
struct GemmPre {
  const float* scale = nullptr;
  const float* shift = nullptr;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

// C = clamp(A x B + bias, lo, hi) as above (then act), M x w.n(), K = w.k(). lda >= K, ldc >= N (or any
// strides when M <= 1). Work is split in tiles of (rows x panels) over pteron_parallel_for
// (pteron/kernel.h), rows when N is small, columns when M is small, so every thread has work.
// Uses the microkernels of pteron_cpu::isa_level(). Never fails; C must not overlap A.
void gemm_packed(int64_t m, const float* a, int64_t lda, const PackedWeights& w, float* c,
                 int64_t ldc, float lo, float hi, GemmAct act = {});

// The same with A' = A mapped by `pre` (pre.scale set). False, with C incomplete, when a
// thread's buffer (tile rows x K floats, kept between calls) cannot be allocated.
bool gemm_packed_pre(int64_t m, const float* a, int64_t lda, const GemmPre& pre,
                     const PackedWeights& w, float* c, int64_t ldc, float lo, float hi,
                     GemmAct act = {});

// The same on the calling thread only (a caller that splits the work itself).
void gemm_packed_serial(int64_t m, const float* a, int64_t lda, const PackedWeights& w, float* c,
                        int64_t ldc, float lo, float hi, GemmAct act = {});

// Rows per microkernel block at pteron_cpu::isa_level() (6 at avx2, 8 at avx512, 3 or 4 at
// the baseline): a caller that splits M itself (gemm_packed_serial on row ranges) wastes no
// work when its ranges are multiples of it.
int64_t gemm_rows_per_block();

// Indirect rows (a convolution without im2col): row i < m of A is `segs` segments of `seglen`
// contiguous floats, segment s at rows[i * segs + s] + aoff (each valid for seglen floats; aoff
// in floats, e.g. a group's first channel); K = segs * seglen must equal w.k() (nothing is done
// otherwise). Split over pteron_parallel_for like gemm_packed.
void gemm_packed_indirect(int64_t m, int64_t segs, int64_t seglen, const float* const* rows,
                          int64_t aoff, const PackedWeights& w, float* c, int64_t ldc, float lo,
                          float hi, GemmAct act = {});

// The same on the calling thread only.
void gemm_packed_indirect_serial(int64_t m, int64_t segs, int64_t seglen, const float* const* rows,
                                 int64_t aoff, const PackedWeights& w, float* c, int64_t ldc,
                                 float lo, float hi, GemmAct act = {});

// A 1x1 convolution whose output only a depthwise convolution reads (MobileNetV2's expansion
// and the depthwise convolution after it), without the expanded tensor (nhwc.cpp):
//   e = act(clamp(x . W + bias, lo, hi)), NHWC [dw.n, dw.ih, dw.iw, dw.ic], x NHWC
//   [dw.n, dw.ih, dw.iw, w->k()], W and bias packed in `w` (w->n() == dw.ic);
//   out = depthwise_conv2d(dw, e), [dw.n, dw.oh, dw.ow, dw.ic] (nhwc.h, DwConv2d).
// The output rows are split over pteron_parallel_for as any node's; each thread computes the
// rows of e its window reads into a ring of dw.kh rows of its own (gemm_packed_serial on one
// image row at a time), each row once, except the rows above a range that does not follow the
// range the thread did before in the same call (its share's first, or one taken from another
// thread), computed again. The results
// are those of gemm_packed followed by depthwise_conv2d, bit for bit: each pixel of e goes
// through the microkernel gemm_packed on all dw.n x dw.ih x dw.iw pixels gives it (the one-row
// microkernel, which sums in another order, only on the last pixel where that count is one
// more than a multiple of gemm_rows_per_block(); a row that would end on a lone pixel is split
// before it, a lone pixel computed beside a neighbour). Needs dw.m == 1, dw.dh == 1,
// 1 <= dw.kh <= 64 (otherwise nothing is done) and a row block of at least 3 (every level's).
// zeros: dw.iw * dw.ic zeros (the rows outside the image). False, with out incomplete, when a
// thread's ring ((dw.kh x dw.iw + 2) x dw.ic floats, kept between calls) cannot be allocated.
// Where the fusion pays (the XNNPACK delegate's fuse_expand_depthwise and kernels_optimized's
// NHWC regions): an expanded tensor of at least this many bytes. Below, it stays in the cache
// between the two nodes, and each thread's first rows, computed twice at a split, cost more
// than the fusion saves.
constexpr int64_t kExpandDepthwiseMinBytes = int64_t(1) << 20;
struct ExpandDepthwise {
  DwConv2d dw;
  const PackedWeights* w = nullptr;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  GemmAct act;  // the 1x1 convolution's activation (act.res unused)
};
bool expand_depthwise_conv2d(const ExpandDepthwise& p, const float* x, float* out,
                             const float* zeros);

// ---- between gemm.cpp and gemm_kernels.cpp (not for callers) ------------------------------

// One microkernel call: rows i < mr (1 <= mr <= GemmKernels::mr) and columns j < nc
// (1 <= nc <= kGemmNr) of C from A rows a + i * lda, K = kc, one packed panel w;
// minmax = {lo, hi}.
using GemmUkernel = void (*)(int64_t mr, int64_t nc, int64_t kc, const float* a, int64_t lda,
                             const float* w, float* c, int64_t ldc, const float* minmax);

// The same with indirect rows: row i's segment s at rows[i * segs + s] + aoff, seglen floats.
using GemmIUkernel = void (*)(int64_t mr, int64_t nc, int64_t segs, int64_t seglen,
                              const float* const* rows, int64_t aoff, const float* w, float* c,
                              int64_t ldc, const float* minmax);

// Two panels per call (a level whose panel row is one vector): columns j < nc,
// kGemmNr < nc <= 2 * kGemmNr, the first kGemmNr from panel w, the rest from panel w2.
using GemmUkernel2 = void (*)(int64_t mr, int64_t nc, int64_t kc, const float* a, int64_t lda,
                              const float* w, const float* w2, float* c, int64_t ldc,
                              const float* minmax);
using GemmIUkernel2 = void (*)(int64_t mr, int64_t nc, int64_t segs, int64_t seglen,
                               const float* const* rows, int64_t aoff, const float* w,
                               const float* w2, float* c, int64_t ldc, const float* minmax);

struct GemmKernels {
  const char* name;  // "baseline", "avx2" or "avx512"
  int64_t mr;        // rows per microkernel call
  GemmUkernel ukernel;
  GemmUkernel ukernel_1row;  // the same for mr == 1 (one row, not mr copies of it)
  GemmIUkernel iukernel;
  GemmIUkernel iukernel_1row;
  GemmUkernel2 ukernel2;    // null where a level has none
  GemmIUkernel2 iukernel2;
};

// One table per level, each defined in its own object of gemm_kernels.cpp (the ODR rule of
// isa_kernels.cpp: the getters differ by namespace, everything else is internal).
namespace isa_baseline {
const GemmKernels* gemm_kernels();
}
#if defined(PTERON_CPU_HAVE_X86_ISAS)
namespace isa_avx2 {
const GemmKernels* gemm_kernels();
}
namespace isa_avx512 {
const GemmKernels* gemm_kernels();
}
#endif

// The table of pteron_cpu::isa_level().
const GemmKernels& gemm_kernels();

}  // namespace pteron_cpu
