// SPDX-License-Identifier: BSD-3-Clause
// gemm_kernels.cpp - the hot loops of gemm.h, compiled once per ISA level
// (PTERON_CPU_ISA, as isa_kernels.cpp), each build in namespace pteron_cpu::isa_<level>:
//
//   avx2      6 rows x 16 columns: 12 ymm accumulators, per k two loads of the packed panel
//             and one broadcast of A per row, 12 FMAs;
//   avx512    8 rows x 32 columns (two panels per call, GemmUkernel2): 16 zmm accumulators,
//             per k two panel loads and one broadcast per row; the last odd panel 8 x 16 (this
//             level cannot run on an AVX2-only CPU: correct by construction, the same
//             template as avx2 with 16-lane vectors);
//   baseline  SSE (x86-64-v2) 3 rows x 16 columns, multiply then add (no FMA); elsewhere
//             plain C++ 4 x 16.
//
// Edge tiles: rows past mr read and write row mr - 1 again (the same values, so the repeated
// store is harmless), columns past nc are computed from the panel's zero padding and not
// stored (masked stores at avx2 / avx512); when nc fits in half a panel (levels with more than
// one vector per panel row), only that half is computed. Each level also has an indirect variant
// (rows given as pointers to K segments: a convolution without im2col) and a 1-row variant. Only
// gemm.h's plain types are used here; no inline function of gemm.h is called (the ODR rule
// described in isa_kernels.cpp).
#include <cstdint>
#include <cstring>

#include "pteron_cpu/gemm.h"
#include "pteron_cpu/unroll.h"

#if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
// gcc 12's AVX-512 min / max intrinsics read an "undefined" vector it then warns about.
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#ifndef PTERON_CPU_ISA
#error "PTERON_CPU_ISA must name the ISA level (baseline, avx2 or avx512)"
#endif

#define PTERON_GEMM_CAT2_(a, b) a##b
#define PTERON_GEMM_CAT_(a, b) PTERON_GEMM_CAT2_(a, b)
#define PTERON_GEMM_STR2_(x) #x
#define PTERON_GEMM_STR_(x) PTERON_GEMM_STR2_(x)

namespace pteron_cpu {
#define PTERON_GEMM_ISA_NAMESPACE PTERON_GEMM_CAT_(isa_, PTERON_CPU_ISA)
namespace PTERON_GEMM_ISA_NAMESPACE {
namespace {

#if defined(__AVX512F__)
struct Vec {
  using T = __m512;
  static constexpr int kLanes = 16;
  static T load(const float* p) { return _mm512_load_ps(p); }
  static T loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T set1(float x) { return _mm512_set1_ps(x); }
  static T madd(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  // max(lo, x) / min(hi, x) return x when x is NaN (the second operand).
  static T clamp(T x, T lo, T hi) { return _mm512_min_ps(hi, _mm512_max_ps(lo, x)); }
  // The first r lanes (0 < r < kLanes), the rest of memory untouched.
  static void store_part(float* p, T v, int r) {
    _mm512_mask_storeu_ps(p, __mmask16((1u << r) - 1u), v);
  }
};
// 8 rows x 2 panels (gemm.h, GemmUkernel2): 16 accumulators, per k two panel loads and 8
// broadcasts for 16 FMAs (FMA-bound; 14 rows x 1 panel, 15 loads per 14 FMAs, was load-bound).
constexpr int kRows = 8;
#define PTERON_GEMM_TWO_PANELS 1
#elif defined(__AVX2__) && (defined(__FMA__) || defined(_MSC_VER))  // MSVC: /arch:AVX2 has FMA3
struct Vec {
  using T = __m256;
  static constexpr int kLanes = 8;
  static T load(const float* p) { return _mm256_load_ps(p); }
  static T loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T set1(float x) { return _mm256_set1_ps(x); }
  static T madd(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T clamp(T x, T lo, T hi) { return _mm256_min_ps(hi, _mm256_max_ps(lo, x)); }
  static void store_part(float* p, T v, int r) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(r), lane), v);
  }
};
constexpr int kRows = 6;
#elif defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
struct Vec {
  using T = __m128;
  static constexpr int kLanes = 4;
  static T load(const float* p) { return _mm_load_ps(p); }
  static T loadu(const float* p) { return _mm_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm_storeu_ps(p, v); }
  static T set1(float x) { return _mm_set1_ps(x); }
  static T madd(T a, T b, T c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static T add(T a, T b) { return _mm_add_ps(a, b); }
  static T clamp(T x, T lo, T hi) { return _mm_min_ps(hi, _mm_max_ps(lo, x)); }
  static void store_part(float* p, T v, int r) {
    alignas(16) float t[4];
    _mm_store_ps(t, v);
    for (int l = 0; l < r; ++l) p[l] = t[l];
  }
};
constexpr int kRows = 3;
#else
struct Vec {
  using T = float;
  static constexpr int kLanes = 1;
  static T load(const float* p) { return *p; }
  static T loadu(const float* p) { return *p; }
  static void storeu(float* p, T v) { *p = v; }
  static T set1(float x) { return x; }
  static T madd(T a, T b, T c) { return a * b + c; }
  static T add(T a, T b) { return a + b; }
  static T clamp(T x, T lo, T hi) {
    const T y = x < lo ? lo : x;  // NaN compares false: kept
    return y > hi ? hi : y;
  }
  static void store_part(float*, T, int) {}  // one lane: never a part
};
constexpr int kRows = 4;
#endif

#if defined(__GNUC__)
#define PTERON_GEMM_INLINE inline __attribute__((always_inline))
#else
#define PTERON_GEMM_INLINE inline
#endif

constexpr int kNv = int(kGemmNr) / Vec::kLanes;  // vectors per row of a panel
static_assert(kNv * Vec::kLanes == kGemmNr, "panel width must be a whole number of vectors");
// A panel's first half (when a panel is more than one vector): the last panel of an N that
// leaves at most kHalf vectors of columns (N = 24, 40, 72, 197, ...) is computed on that half
// only, the other half of the FMAs being on zero padding.
constexpr int kHalf = kNv / 2;

// The body of every microkernel: up to kMr rows, the K sum taken as `segs` segments of `seglen`
// contiguous values each; row i's segment s starts at rows[i * rstride + s] + aoff (a plain
// GEMM: one segment per row; a convolution's indirect rows: one per filter row or tap, aoff
// its group's first channel). Rows past mr repeat
// row mr - 1. Arrays of vectors with constant trip counts: the compiler keeps them in
// registers (checked: bench/gemm reaches the FMA peak's ~90 % at avx2). A single row (a matrix
// times a vector: a decoder's fully connected at batch 1) sums in 4 independent chains, so the
// FMA latency does not bound it. Every loop over rows, vectors and chains, the clamp and
// the stores included, carries PTERON_UNROLL: with the epilogue rolled, gcc 12 spilled
// all accumulators to the stack at every call (bench/gemm/gemm_shapes.cpp: 72 -> 82 GFLOP per
// CPU-second on vit's [197,64] x [64,197], 3-6 % on its fully connected shapes).
template <int kMr, int kNu>
PTERON_GEMM_INLINE void body(int64_t mr, int64_t nc, int64_t segs, int64_t seglen,
                             const float* const* rows, int64_t rstride, int64_t aoff,
                             const float* w, float* c, int64_t ldc, const float* minmax) {
  constexpr int kChains = kMr == 1 ? 4 : 1;
  typename Vec::T acc[kChains][kMr][kNu];
  PTERON_UNROLL
  for (int v = 0; v < kNu; ++v) {
    const typename Vec::T b = Vec::load(w + v * Vec::kLanes);
    PTERON_UNROLL
    for (int i = 0; i < kMr; ++i) acc[0][i][v] = b;
    PTERON_UNROLL
    for (int h = 1; h < kChains; ++h) {
      PTERON_UNROLL
      for (int i = 0; i < kMr; ++i) acc[h][i][v] = Vec::set1(0.0f);
    }
  }
  w += kGemmNr;
  for (int64_t s = 0; s < segs; ++s) {
    const float* ar[kMr];
    PTERON_UNROLL
    for (int i = 0; i < kMr; ++i) ar[i] = rows[(i < mr ? i : mr - 1) * rstride + s] + aoff;
    int64_t p = 0;
    if (kChains > 1) {
      for (; p + kChains <= seglen; p += kChains) {
        PTERON_UNROLL
        for (int h = 0; h < kChains; ++h) {
          const typename Vec::T x = Vec::set1(ar[0][p + h]);
          if constexpr (kNu == 1) {  // (as below: for MSVC)
            acc[h][0][0] = Vec::madd(x, Vec::load(w), acc[h][0][0]);
          } else if constexpr (kNu == 2) {
            acc[h][0][0] = Vec::madd(x, Vec::load(w), acc[h][0][0]);
            acc[h][0][1] = Vec::madd(x, Vec::load(w + Vec::kLanes), acc[h][0][1]);
          } else {
            PTERON_UNROLL
            for (int v = 0; v < kNu; ++v)
              acc[h][0][v] = Vec::madd(x, Vec::load(w + v * Vec::kLanes), acc[h][0][v]);
          }
          w += kGemmNr;
        }
      }
    }
    for (; p < seglen; ++p) {
      typename Vec::T b[kNu];
      PTERON_UNROLL
      for (int v = 0; v < kNu; ++v) b[v] = Vec::load(w + v * Vec::kLanes);
      w += kGemmNr;
      PTERON_UNROLL
      for (int i = 0; i < kMr; ++i) {
        const typename Vec::T x = Vec::set1(ar[i][p]);
        // One or two vectors written out, not as a loop: MSVC (no unroll pragma) unrolled
        // neither this loop nor the one around it and kept every accumulator in memory, a load
        // and a store around each FMA (2.5x slower 16-channel convolutions at avx512).
        if constexpr (kNu == 1) {
          acc[0][i][0] = Vec::madd(x, b[0], acc[0][i][0]);
        } else if constexpr (kNu == 2) {
          acc[0][i][0] = Vec::madd(x, b[0], acc[0][i][0]);
          acc[0][i][1] = Vec::madd(x, b[1], acc[0][i][1]);
        } else {
          PTERON_UNROLL
          for (int v = 0; v < kNu; ++v) acc[0][i][v] = Vec::madd(x, b[v], acc[0][i][v]);
        }
      }
    }
  }
  PTERON_UNROLL
  for (int h = 1; h < kChains; ++h) {  // the chains' sums, in a fixed order
    PTERON_UNROLL
    for (int v = 0; v < kNu; ++v) acc[0][0][v] = Vec::add(acc[0][0][v], acc[h][0][v]);
  }
  float* cr[kMr];
  cr[0] = c;
  PTERON_UNROLL
  for (int i = 1; i < kMr; ++i) cr[i] = i < mr ? cr[i - 1] + ldc : cr[i - 1];
  const typename Vec::T lo = Vec::set1(minmax[0]), hi = Vec::set1(minmax[1]);
  PTERON_UNROLL
  for (int i = 0; i < kMr; ++i) {
    PTERON_UNROLL
    for (int v = 0; v < kNu; ++v) acc[0][i][v] = Vec::clamp(acc[0][i][v], lo, hi);
  }
  if (nc == kGemmNr) {
    PTERON_UNROLL
    for (int i = kMr - 1; i >= 0; --i) {
      PTERON_UNROLL
      for (int v = 0; v < kNu; ++v) Vec::storeu(cr[i] + v * Vec::kLanes, acc[0][i][v]);
    }
    return;
  }
  // Columns past nc not stored: whole vectors while they fit, then the first lanes of one.
  PTERON_UNROLL
  for (int i = kMr - 1; i >= 0; --i) {
    PTERON_UNROLL
    for (int v = 0; v < kNu; ++v) {
      const int64_t r = nc - v * Vec::kLanes;
      if (r >= Vec::kLanes)
        Vec::storeu(cr[i] + v * Vec::kLanes, acc[0][i][v]);
      else if (r > 0)
        Vec::store_part(cr[i] + v * Vec::kLanes, acc[0][i][v], int(r));
    }
  }
}

// GemmUkernel: rows a + i * lda.
template <int kMr>
void ukernel(int64_t mr, int64_t nc, int64_t kc, const float* a, int64_t lda, const float* w,
             float* c, int64_t ldc, const float* minmax) {
  const float* ar[kMr];
  ar[0] = a;
  PTERON_UNROLL
  for (int i = 1; i < kMr; ++i) ar[i] = i < mr ? ar[i - 1] + lda : ar[i - 1];
  if (kHalf > 0 && nc <= kHalf * Vec::kLanes)
    body<kMr, kHalf ? kHalf : 1>(mr, nc, 1, kc, ar, 1, 0, w, c, ldc, minmax);
  else
    body<kMr, kNv>(mr, nc, 1, kc, ar, 1, 0, w, c, ldc, minmax);
}

// GemmIUkernel: indirect rows.
template <int kMr>
void iukernel(int64_t mr, int64_t nc, int64_t segs, int64_t seglen, const float* const* rows,
              int64_t aoff, const float* w, float* c, int64_t ldc, const float* minmax) {
  if (kHalf > 0 && nc <= kHalf * Vec::kLanes)
    body<kMr, kHalf ? kHalf : 1>(mr, nc, segs, seglen, rows, segs, aoff, w, c, ldc, minmax);
  else
    body<kMr, kNv>(mr, nc, segs, seglen, rows, segs, aoff, w, c, ldc, minmax);
}

#if defined(PTERON_GEMM_TWO_PANELS)
// Two panels at once (kNv == 1): row i's accumulators for panel 0 and panel 1, one broadcast of
// A shared by both. Rows past mr repeat row mr - 1, as in body.
template <int kMr>
PTERON_GEMM_INLINE void body2(int64_t mr, int64_t nc, int64_t segs, int64_t seglen,
                              const float* const* rows, int64_t rstride, int64_t aoff,
                              const float* w, const float* w2, float* c, int64_t ldc,
                              const float* minmax) {
  static_assert(kNv == 1, "two panels of one vector per row");
  typename Vec::T acc[kMr][2];
  {
    const typename Vec::T b0 = Vec::load(w), b1 = Vec::load(w2);
    PTERON_UNROLL
    for (int i = 0; i < kMr; ++i) acc[i][0] = b0, acc[i][1] = b1;
  }
  w += kGemmNr, w2 += kGemmNr;
  for (int64_t s = 0; s < segs; ++s) {
    const float* ar[kMr];
    PTERON_UNROLL
    for (int i = 0; i < kMr; ++i) ar[i] = rows[(i < mr ? i : mr - 1) * rstride + s] + aoff;
    for (int64_t p = 0; p < seglen; ++p, w += kGemmNr, w2 += kGemmNr) {
      const typename Vec::T b0 = Vec::load(w), b1 = Vec::load(w2);
      PTERON_UNROLL
      for (int i = 0; i < kMr; ++i) {
        const typename Vec::T x = Vec::set1(ar[i][p]);
        acc[i][0] = Vec::madd(x, b0, acc[i][0]);
        acc[i][1] = Vec::madd(x, b1, acc[i][1]);
      }
    }
  }
  float* cr[kMr];
  cr[0] = c;
  PTERON_UNROLL
  for (int i = 1; i < kMr; ++i) cr[i] = i < mr ? cr[i - 1] + ldc : cr[i - 1];
  const typename Vec::T lo = Vec::set1(minmax[0]), hi = Vec::set1(minmax[1]);
  const int r = int(nc - kGemmNr);  // columns of the second panel, 1..kGemmNr
  PTERON_UNROLL
  for (int i = kMr - 1; i >= 0; --i) {
    Vec::storeu(cr[i], Vec::clamp(acc[i][0], lo, hi));
    if (r == kGemmNr)
      Vec::storeu(cr[i] + kGemmNr, Vec::clamp(acc[i][1], lo, hi));
    else
      Vec::store_part(cr[i] + kGemmNr, Vec::clamp(acc[i][1], lo, hi), r);
  }
}

void ukernel2(int64_t mr, int64_t nc, int64_t kc, const float* a, int64_t lda, const float* w,
              const float* w2, float* c, int64_t ldc, const float* minmax) {
  const float* ar[kRows];
  ar[0] = a;
  PTERON_UNROLL
  for (int i = 1; i < kRows; ++i) ar[i] = i < mr ? ar[i - 1] + lda : ar[i - 1];
  body2<kRows>(mr, nc, 1, kc, ar, 1, 0, w, w2, c, ldc, minmax);
}

void iukernel2(int64_t mr, int64_t nc, int64_t segs, int64_t seglen, const float* const* rows,
               int64_t aoff, const float* w, const float* w2, float* c, int64_t ldc,
               const float* minmax) {
  body2<kRows>(mr, nc, segs, seglen, rows, segs, aoff, w, w2, c, ldc, minmax);
}
#endif

const GemmKernels kTable = {PTERON_GEMM_STR_(PTERON_CPU_ISA),
                            kRows,
                            &ukernel<kRows>,
                            &ukernel<1>,
                            &iukernel<kRows>,
                            &iukernel<1>,
#if defined(PTERON_GEMM_TWO_PANELS)
                            &ukernel2,
                            &iukernel2
#else
                            nullptr,
                            nullptr
#endif
};

}  // namespace

const GemmKernels* gemm_kernels() { return &kTable; }

}  // namespace PTERON_GEMM_ISA_NAMESPACE
}  // namespace pteron_cpu
