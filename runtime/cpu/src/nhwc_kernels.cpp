// SPDX-License-Identifier: BSD-3-Clause
// nhwc_kernels.cpp - the hot loops of nhwc.h, compiled once per ISA level
// (PTERON_CPU_ISA, as isa_kernels.cpp, whose ODR rule this file follows:
// everything has internal linkage inside pteron_cpu::isa_<level> except the
// table getter nhwc_ops_<level>(); the only templates it instantiates are
// its own (internal) and Eigen's, which the build renames per level).
//
// The depthwise rows, the pooling rows and sigmoid use explicit vectors of
// the level (SSE 4 lanes, AVX2+FMA 8, AVX-512 16; one lane elsewhere),
// channels in the lanes. Depthwise 3x3 / 5x5: groups of up to 8 output pixels
// (of 4 channel blocks at once in rows narrower than 8) share their input
// column loads and each filter row's weight vectors, with 4 to 16 independent
// accumulators; groups that reach a border skip the columns outside the row.
// Other windows: the interior columns without tests, the border columns over
// their valid taps only. Pooling: a channel block accumulates in a register
// over the valid taps. The binary, bilinear, PReLU and simple unary loops
// are written over contiguous elements so the compiler vectorises them at
// the level's width; exp, log, sin, cos, tanh and erf are Eigen's.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__GNUC__) && !defined(__clang__)
// gcc 12's AVX-512 headers, inlined into Eigen's sin / cos, read an
// intentionally undefined register (_mm512_undefined_epi32).
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>  // the vectorised erf (Gelu)

#if defined(__SSE2__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include "pteron_cpu/nhwc.h"
#include "pteron_cpu/unroll.h"

#ifndef PTERON_CPU_ISA
#error "PTERON_CPU_ISA must name the ISA level (baseline, avx2 or avx512)"
#endif

#define PTERON_NHWC_STR2_(x) #x
#define PTERON_NHWC_STR_(x) PTERON_NHWC_STR2_(x)
#define PTERON_NHWC_CAT2_(a, b) a##b
#define PTERON_NHWC_CAT_(a, b) PTERON_NHWC_CAT2_(a, b)

#define PTERON_NHWC_NAMESPACE PTERON_NHWC_CAT_(isa_, PTERON_CPU_ISA)

namespace pteron_cpu {
namespace PTERON_NHWC_NAMESPACE {
namespace {

// ---- vectors of the level ---------------------------------------------------------------------

#if defined(__AVX512F__)
constexpr int64_t L = 16;
using V = __m512;
inline V vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm512_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V vadd(V a, V b) { return _mm512_add_ps(a, b); }
inline __mmask16 lanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline V vloadp(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(lanes(n), p); }
inline void vstorep(float* p, V v, int64_t n) { _mm512_mask_storeu_ps(p, lanes(n), v); }
// min(max(v, lo), hi) with NaN kept: blend where v < lo / v > hi (false for NaN).
inline V vclamp(V v, V lo, V hi) {
  v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), v, lo);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), v, hi);
}
inline V vset(float x) { return _mm512_set1_ps(x); }
inline V vround(V a) {
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// 2^n for integral n in [-126, 127].
inline V vpow2(V n) {
  const __m512i i = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
  return _mm512_castsi512_ps(_mm512_slli_epi32(i, 23));
}
inline V vmax(V a, V b) { return _mm512_max_ps(a, b); }
inline V vmin(V a, V b) { return _mm512_min_ps(a, b); }
inline V vsub(V a, V b) { return _mm512_sub_ps(a, b); }
inline V vmul(V a, V b) { return _mm512_mul_ps(a, b); }
inline V vabs(V a) { return _mm512_abs_ps(a); }
inline V vrcp(V a) { return _mm512_rcp14_ps(a); }
// x > 0 ? a : b; and x where x is NaN, else v.
inline V vsel_pos(V x, V a, V b) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ), b, a);
}
inline V vkeep_nan(V x, V v) {
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), v, x);
}
#elif defined(__AVX2__) && (defined(__FMA__) || defined(_MSC_VER))  // MSVC: /arch:AVX2 has FMA3
constexpr int64_t L = 8;
using V = __m256;
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
alignas(32) const int32_t kLaneMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
inline __m256i lanes(int64_t n) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLaneMask + 8 - n));
}
inline V vloadp(const float* p, int64_t n) { return _mm256_maskload_ps(p, lanes(n)); }
inline void vstorep(float* p, V v, int64_t n) { _mm256_maskstore_ps(p, lanes(n), v); }
inline V vclamp(V v, V lo, V hi) {
  v = _mm256_blendv_ps(v, lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
  return _mm256_blendv_ps(v, hi, _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
}
inline V vset(float x) { return _mm256_set1_ps(x); }
inline V vround(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline V vpow2(V n) {
  const __m256i i = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  return _mm256_castsi256_ps(_mm256_slli_epi32(i, 23));
}
inline V vmax(V a, V b) { return _mm256_max_ps(a, b); }
inline V vmin(V a, V b) { return _mm256_min_ps(a, b); }
inline V vsub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V vmul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V vabs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
inline V vrcp(V a) { return _mm256_rcp_ps(a); }
inline V vsel_pos(V x, V a, V b) {
  return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ));
}
inline V vkeep_nan(V x, V v) { return _mm256_blendv_ps(v, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
#elif defined(__SSE2__) || defined(_M_X64)
constexpr int64_t L = 4;
using V = __m128;
inline V vload(const float* p) { return _mm_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm_storeu_ps(p, v); }
inline V vfma(V a, V b, V c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
inline V vadd(V a, V b) { return _mm_add_ps(a, b); }
inline V vloadp(const float* p, int64_t n) {
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n; ++i) t[i] = p[i];
  return _mm_loadu_ps(t);
}
inline void vstorep(float* p, V v, int64_t n) {
  float t[4];
  _mm_storeu_ps(t, v);
  for (int64_t i = 0; i < n; ++i) p[i] = t[i];
}
inline V vclamp(V v, V lo, V hi) {
  const V a = _mm_cmplt_ps(v, lo);
  v = _mm_or_ps(_mm_and_ps(a, lo), _mm_andnot_ps(a, v));
  const V b = _mm_cmpgt_ps(v, hi);
  return _mm_or_ps(_mm_and_ps(b, hi), _mm_andnot_ps(b, v));
}
inline V vset(float x) { return _mm_set1_ps(x); }
inline V vround(V a) { return _mm_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline V vpow2(V n) {
  const __m128i i = _mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127));
  return _mm_castsi128_ps(_mm_slli_epi32(i, 23));
}
inline V vmax(V a, V b) { return _mm_max_ps(a, b); }
inline V vmin(V a, V b) { return _mm_min_ps(a, b); }
inline V vsub(V a, V b) { return _mm_sub_ps(a, b); }
inline V vmul(V a, V b) { return _mm_mul_ps(a, b); }
inline V vabs(V a) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), a); }
inline V vrcp(V a) { return _mm_rcp_ps(a); }
inline V vsel_pos(V x, V a, V b) {
  const V m = _mm_cmpgt_ps(x, _mm_setzero_ps());
  return _mm_or_ps(_mm_and_ps(m, a), _mm_andnot_ps(m, b));
}
inline V vkeep_nan(V x, V v) {
  const V m = _mm_cmpunord_ps(x, x);
  return _mm_or_ps(_mm_and_ps(m, x), _mm_andnot_ps(m, v));
}
#else
constexpr int64_t L = 1;
using V = float;
inline V vload(const float* p) { return *p; }
inline void vstore(float* p, V v) { *p = v; }
inline V vfma(V a, V b, V c) { return a * b + c; }
inline V vadd(V a, V b) { return a + b; }
inline V vloadp(const float* p, int64_t) { return *p; }
inline void vstorep(float* p, V v, int64_t) { *p = v; }
inline V vclamp(V v, V lo, V hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}
inline V vset(float x) { return x; }
inline V vround(V a) { return std::nearbyint(a); }
inline V vpow2(V n) { return std::ldexp(1.0f, static_cast<int>(n)); }
inline V vmax(V a, V b) { return a > b ? a : b; }
inline V vmin(V a, V b) { return a < b ? a : b; }
inline V vsub(V a, V b) { return a - b; }
inline V vmul(V a, V b) { return a * b; }
inline V vabs(V a) { return std::fabs(a); }
inline V vrcp(V a) { return 1.0f / a; }
inline V vsel_pos(V x, V a, V b) { return x > 0.0f ? a : b; }
inline V vkeep_nan(V x, V v) { return x != x ? x : v; }
#endif

inline float clampf(float v, float lo, float hi) {
  v = v < lo ? lo : v;  // NaN fails both tests: kept
  return v > hi ? hi : v;
}

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

// The output columns [lo, hi) whose whole window (kw taps, dilation dw) lies inside the row.
void interior(const DwRow& r, int64_t* lo, int64_t* hi) {
  const int64_t span = (r.kw - 1) * r.dw;
  int64_t l = (r.pl + r.sw - 1) / r.sw;
  int64_t h = r.iw - span + r.pl <= 0 ? 0 : (r.iw - span + r.pl - 1) / r.sw + 1;
  h = imin(h, r.ow);
  l = imin(l, r.ow);
  *lo = l;
  *hi = imax(h, l);
}

// ---- depthwise convolution --------------------------------------------------------------------

// Channel blocks [c0, c0 + B * L) of one output pixel, taps kx in [k0, k1):
// B accumulators, so B independent FMA chains.
template <int B>
inline void dw_pixel_blocks(const DwRow& r, int64_t ix0, int64_t k0, int64_t k1, int64_t c0,
                            float* o) {
  const int64_t c = r.c;
  V acc[B];
  for (int j = 0; j < B; ++j) acc[j] = vload(r.bias + c0 + j * L);
  for (int64_t ky = 0; ky < r.kh; ++ky) {
    const float* ip = r.rows[ky] + ix0 * c + c0;
    const float* wp = r.w + ky * r.kw * c + c0;
    for (int64_t kx = k0; kx < k1; ++kx) {
      const float* x = ip + kx * r.dw * c;
      const float* w = wp + kx * c;
      for (int j = 0; j < B; ++j) acc[j] = vfma(vload(w + j * L), vload(x + j * L), acc[j]);
    }
  }
  const V lo = vset(r.lo), hi = vset(r.hi);
  for (int j = 0; j < B; ++j) {
    V v = acc[j];
    if (r.clamp) v = vclamp(v, lo, hi);
    vstore(o + c0 + j * L, v);
  }
}

// One output pixel, every channel: only the taps inside the row (the column
// range is found once per pixel), for the border columns and generic windows.
void dw_pixel(const DwRow& r, int64_t ox) {
  const int64_t c = r.c;
  const int64_t ix0 = ox * r.sw - r.pl;
  // kx in [k0, k1): 0 <= ix0 + kx * dw < iw.
  const int64_t k0 = ix0 >= 0 ? 0 : (-ix0 + r.dw - 1) / r.dw;
  const int64_t k1 = r.iw - ix0 <= 0 ? 0 : imin(r.kw, (r.iw - ix0 - 1) / r.dw + 1);
  float* o = r.out + ox * c;
  int64_t c0 = 0;
  for (; c0 + 4 * L <= c; c0 += 4 * L) dw_pixel_blocks<4>(r, ix0, k0, k1, c0, o);
  for (; c0 + L <= c; c0 += L) dw_pixel_blocks<1>(r, ix0, k0, k1, c0, o);
  if (c0 < c) {
    const int64_t n = c - c0;
    V acc = vloadp(r.bias + c0, n);
    for (int64_t ky = 0; ky < r.kh; ++ky) {
      const float* ip = r.rows[ky] + ix0 * c + c0;
      const float* wp = r.w + ky * r.kw * c + c0;
      for (int64_t kx = k0; kx < k1; ++kx)
        acc = vfma(vloadp(wp + kx * c, n), vloadp(ip + kx * r.dw * c, n), acc);
    }
    if (r.clamp) acc = vclamp(acc, vset(r.lo), vset(r.hi));
    vstorep(o + c0, acc, n);
  }
}

// P output pixels (from ox) of CB channel blocks (from c0; n lanes each: L, or fewer in a
// single last block) of a K x K window at stride S and dilation D along the row (the rows
// come dilated in r.rows). Per filter row ky and block, the K weight vectors are loaded once
// and each input column vector once: the windows of neighbouring pixels overlap, so
// kCols = (P - 1) * S + (K - 1) * D + 1 columns feed P * CB independent accumulators (8 of
// them hide the FMA latency at two FMA pipes); column col serves pixel p's tap kx where
// col = p * S + kx * D. Border: columns outside [0, iw) are skipped (the pixels left of lo and
// right of hi).
template <int K, int S, int D, int P, int CB, bool Full, bool Border>
inline void dw_group(const DwRow& r, int64_t c0, int64_t n, int64_t ox) {
  constexpr int kCols = (P - 1) * S + (K - 1) * D + 1;
  const int64_t c = r.c;
  const int64_t ix0 = ox * S - r.pl;
  V acc[P][CB];
  PTERON_UNROLL
  for (int b = 0; b < CB; ++b) {
    const V bias = Full ? vload(r.bias + c0 + b * L) : vloadp(r.bias + c0, n);
    PTERON_UNROLL
    for (int p = 0; p < P; ++p) acc[p][b] = bias;
  }
  PTERON_UNROLL
  for (int ky = 0; ky < K; ++ky) {
    const float* ip = r.rows[ky] + ix0 * c + c0;
    const float* wp = r.w + ky * K * c + c0;
    PTERON_UNROLL
    for (int b = 0; b < CB; ++b) {
      V w[K];
      PTERON_UNROLL
      for (int kx = 0; kx < K; ++kx)
        w[kx] = Full ? vload(wp + kx * c + b * L) : vloadp(wp + kx * c, n);
#if defined(_MSC_VER) && !defined(__clang__)
      // MSVC has no unroll pragma: without unroll<> it tests each (pixel, tap) pair at run
      // time. The columns only: unrolling the filter rows and blocks too took cl.exe 145 s per
      // ISA level to compile, for no measurable gain once these calls are force-inlined.
      pteron::cpu::unroll<kCols>([&](auto col_c) {
        // Constants from the types: MSVC does not read an enclosing lambda's constexpr local
        // in a constant expression.
        constexpr int col = decltype(col_c)::value;
        if (Border && (ix0 + col < 0 || ix0 + col >= r.iw)) return;
        const V x = Full ? vload(ip + col * c + b * L) : vloadp(ip + col * c, n);
        pteron::cpu::unroll<P>([&](auto p_c) {
          constexpr int p = decltype(p_c)::value;
          constexpr int t = decltype(col_c)::value - p * S;  // kx * D
          if constexpr (t >= 0 && t % D == 0 && t / D < K) acc[p][b] = vfma(w[t / D], x, acc[p][b]);
        });
      });
#else
      // GCC and Clang unroll these loops and fold the tests (unroll<> here tripled GCC's
      // compile time, ASan builds tenfold).
      PTERON_UNROLL
      for (int col = 0; col < kCols; ++col) {
        if (Border && (ix0 + col < 0 || ix0 + col >= r.iw)) continue;
        const V x = Full ? vload(ip + col * c + b * L) : vloadp(ip + col * c, n);
        PTERON_UNROLL
        for (int p = 0; p < P; ++p) {
          const int t = col - p * S;  // kx * D
          if (t >= 0 && t % D == 0 && t / D < K) acc[p][b] = vfma(w[t / D], x, acc[p][b]);
        }
      }
#endif
    }
  }
  const V vlo = vset(r.lo), vhi = vset(r.hi);
  float* o = r.out + ox * c + c0;
  PTERON_UNROLL
  for (int p = 0; p < P; ++p)
    PTERON_UNROLL
    for (int b = 0; b < CB; ++b) {
      V v = acc[p][b];
      if (r.clamp) v = vclamp(v, vlo, vhi);
      if (Full)
        vstore(o + p * c + b * L, v);
      else
        vstorep(o + p * c, v, n);
    }
}

// P pixels from ox, the channels from c0 on, one block at a time: the group's input window
// (dw_group's kCols columns of the K rows) stays in L1 while its channel blocks run, each cache
// line read whole.
template <int K, int S, int D, int P, bool Border>
inline void dw_pixels(const DwRow& r, int64_t c0, int64_t ox) {
  for (; c0 + L <= r.c; c0 += L) dw_group<K, S, D, P, 1, true, Border>(r, c0, L, ox);
  if (c0 < r.c) dw_group<K, S, D, P, 1, false, Border>(r, c0, r.c - c0, ox);
}

// P pixels from ox at a border: every channel block from c0 on (CB 1), or CB blocks from c0.
template <int K, int S, int D, int P, int CB>
inline void dw_border_group(const DwRow& r, int64_t c0, int64_t ox) {
  if constexpr (CB == 1)
    dw_pixels<K, S, D, P, true>(r, c0, ox);
  else
    dw_group<K, S, D, P, CB, true, true>(r, c0, L, ox);
}

// Pixels [ox, ow) of a row, fewer than 8: one group each of 4, 2 and 1 as the width needs.
template <int K, int S, int D, int CB>
inline void dw_rest(const DwRow& r, int64_t c0, int64_t ox) {
  if (ox + 4 <= r.ow) dw_border_group<K, S, D, 4, CB>(r, c0, ox), ox += 4;
  if (ox + 2 <= r.ow) dw_border_group<K, S, D, 2, CB>(r, c0, ox), ox += 2;
  if (ox < r.ow) dw_border_group<K, S, D, 1, CB>(r, c0, ox);
}

// A row of 8 pixels or more: groups of 8 pixels, each over every channel block. (Channel
// blocks outer, a whole row per block, read each input line once per block, from L2; on AMD
// EPYC Zen 3 at avx2, best of 40, 112x112x96 3x3/2 went 409 -> 335 us, 112x112x32 3x3
// 280 -> 235 us, 14x14x672 5x5 340 -> 286 us.) A group that reaches a border column tests its
// columns (skipping the ones outside the row); an interior one does not. A row narrower than
// 8 pixels (a 7x7 image) takes several channel blocks at a time, so its groups still have 4
// to 16 accumulators.
template <int K, int S, int D>
void dw_row_fixed(const DwRow& r) {
  int64_t ox = 0, c0 = 0;
  if (L == 1 || r.ow >= 8) {
    int64_t lo, hi;
    interior(r, &lo, &hi);
    for (; ox + 8 <= r.ow; ox += 8) {
      if (ox >= lo && ox + 8 <= hi)
        dw_pixels<K, S, D, 8, false>(r, 0, ox);
      else
        dw_pixels<K, S, D, 8, true>(r, 0, ox);
    }
  }
  // The pixels left (all of a narrow row; the last 1 to 7 of a wider one, a 14 x 14 image's
  // last 6): several channel blocks per group, so that its groups of 4, 2 and 1 pixels still
  // have 4 to 16 independent accumulators. (One block at a time, the last 6 pixels of a
  // 14 x 14 x 256 row ran on FMA chains of 4 and 2 and took most of the row's time.) Two
  // blocks for 5x5 windows at avx512: four made 16 accumulators and 20 weight vectors, more
  // than the 32 registers (a 7 x 7 x 960 5x5 row: 59 -> 44 us).
  if (L > 1 && ox < r.ow) {
    constexpr int kNarrowBlocks = L >= 16 && K <= 3 ? 4 : 2;
    for (; c0 + kNarrowBlocks * L <= r.c; c0 += kNarrowBlocks * L)
      dw_rest<K, S, D, kNarrowBlocks>(r, c0, ox);
  }
  dw_rest<K, S, D, 1>(r, c0, ox);
}

// Any window: interior columns without tests (weights read per tap), borders per pixel.
void dw_row_generic(const DwRow& r) {
  int64_t lo, hi;
  interior(r, &lo, &hi);
  for (int64_t ox = 0; ox < lo; ++ox) dw_pixel(r, ox);
  const int64_t c = r.c;
  const V vlo = vset(r.lo), vhi = vset(r.hi);
  for (int64_t ox = lo; ox < hi; ++ox) {
    const int64_t ix0 = ox * r.sw - r.pl;
    float* o = r.out + ox * c;
    for (int64_t c0 = 0; c0 < c; c0 += L) {
      const int64_t n = imin(L, c - c0);
      const bool full = n == L;
      V acc = full ? vload(r.bias + c0) : vloadp(r.bias + c0, n);
      for (int64_t ky = 0; ky < r.kh; ++ky) {
        const float* ip = r.rows[ky] + ix0 * c + c0;
        const float* wp = r.w + ky * r.kw * c + c0;
        for (int64_t kx = 0; kx < r.kw; ++kx) {
          const float* x = ip + kx * r.dw * c;
          const float* w = wp + kx * c;
          acc = full ? vfma(vload(w), vload(x), acc) : vfma(vloadp(w, n), vloadp(x, n), acc);
        }
      }
      if (r.clamp) acc = vclamp(acc, vlo, vhi);
      if (full)
        vstore(o + c0, acc);
      else
        vstorep(o + c0, acc, n);
    }
  }
  for (int64_t ox = hi; ox < r.ow; ++ox) dw_pixel(r, ox);
}

// 1x1 at stride 1 without padding (a batch norm that the exporter lowered as a depthwise
// convolution: densenet's pre-activations): out[ox][c] = x[ox][c] * w[c] + bias[c], clamped
// (dw_row_generic's per-tap loops cost more than the FMA here; the vectors are independent, so
// the loop needs no unrolling of its own).
void dw_row_1x1(const DwRow& r) {
  const int64_t c = r.c;
  const V vlo = vset(r.lo), vhi = vset(r.hi);
  const float* x = r.rows[0];
  float* o = r.out;
  for (int64_t ox = 0; ox < r.ow; ++ox, x += c, o += c) {
    int64_t c0 = 0;
    for (; c0 + L <= c; c0 += L) {
      const V v = vfma(vload(r.w + c0), vload(x + c0), vload(r.bias + c0));
      vstore(o + c0, r.clamp ? vclamp(v, vlo, vhi) : v);
    }
    if (c0 < c) {
      const int64_t n = c - c0;
      const V v = vfma(vloadp(r.w + c0, n), vloadp(x + c0, n), vloadp(r.bias + c0, n));
      vstorep(o + c0, r.clamp ? vclamp(v, vlo, vhi) : v, n);
    }
  }
}

void dw_row(const DwRow& r) {
  if (r.kh == 1 && r.kw == 1 && r.sw == 1 && r.pl == 0 && r.ow <= r.iw) return dw_row_1x1(r);
  if (r.kh == r.kw && r.dw == 1) {
    if (r.kh == 3 && r.sw == 1) return dw_row_fixed<3, 1, 1>(r);
    if (r.kh == 3 && r.sw == 2) return dw_row_fixed<3, 2, 1>(r);
    if (r.kh == 5 && r.sw == 1) return dw_row_fixed<5, 1, 1>(r);
    if (r.kh == 5 && r.sw == 2) return dw_row_fixed<5, 2, 1>(r);
  }
  // Dilation 2 at stride 1 (a segmentation backbone's last stage: lraspp's MobileNetV3 runs
  // 5x5 windows at dilation 2 on 14 x 14 x 960). dw_row_generic's one FMA chain per pixel
  // and block (25 dependent FMAs) took 3 to 4 times as long.
  if (r.kh == r.kw && r.dw == 2 && r.sw == 1) {
    if (r.kh == 3) return dw_row_fixed<3, 1, 2>(r);
    if (r.kh == 5) return dw_row_fixed<5, 1, 2>(r);
  }
  dw_row_generic(r);
}

// ---- pooling ----------------------------------------------------------------------------------

// The window columns kx in [*k0, *k1) of output column ox that lie inside
// the row.
inline void valid_taps(const PoolRow& r, int64_t ox, int64_t* k0, int64_t* k1) {
  const int64_t ix0 = ox * r.sw - r.pl;
  *k0 = ix0 >= 0 ? 0 : (-ix0 + r.dw - 1) / r.dw;
  *k1 = r.iw - ix0 <= 0 ? 0 : imin(r.kw, (r.iw - ix0 - 1) / r.dw + 1);
  if (*k1 < *k0) *k1 = *k0;
}

// Max over the valid taps, B channel blocks in registers (B independent chains: the
// NaN-keeping max is a 4-5 cycle chain per tap): max(acc, v) takes v when either is NaN
// (maxps), and an accumulator once NaN stays NaN.
template <int B, bool Full>
inline void max_block(const PoolRow& r, int64_t ix0, int64_t k0, int64_t k1, int64_t c0, int64_t n,
                      float* o) {
  const int64_t c = r.c;
  V acc[B];
  PTERON_UNROLL
  for (int b = 0; b < B; ++b) acc[b] = vset(-std::numeric_limits<float>::infinity());
  for (int64_t ky = 0; ky < r.kh; ++ky) {
    if (!r.rows[ky]) continue;
    const float* ip = r.rows[ky] + ix0 * c + c0;
    for (int64_t kx = k0; kx < k1; ++kx) {
      const float* x = ip + kx * r.dw * c;
      PTERON_UNROLL
      for (int b = 0; b < B; ++b) {
        const V v = Full ? vload(x + b * L) : vloadp(x, n);
        acc[b] = vkeep_nan(acc[b], vmax(acc[b], v));
      }
    }
  }
  PTERON_UNROLL
  for (int b = 0; b < B; ++b) {
    V v = acc[b];
    if (r.clamp) v = vclamp(v, vset(r.lo), vset(r.hi));
    if (Full)
      vstore(o + c0 + b * L, v);
    else
      vstorep(o + c0, v, n);
  }
}

void max_pool_row(const PoolRow& r) {
  const int64_t c = r.c;
  for (int64_t ox = 0; ox < r.ow; ++ox) {
    int64_t k0, k1;
    valid_taps(r, ox, &k0, &k1);
    const int64_t ix0 = ox * r.sw - r.pl;
    float* o = r.out + ox * c;
    int64_t c0 = 0;
    for (; c0 + 4 * L <= c; c0 += 4 * L) max_block<4, true>(r, ix0, k0, k1, c0, L, o);
    for (; c0 + L <= c; c0 += L) max_block<1, true>(r, ix0, k0, k1, c0, L, o);
    if (c0 < c) max_block<1, false>(r, ix0, k0, k1, c0, c - c0, o);
  }
}

template <int B, bool Full>
inline void avg_block(const PoolRow& r, int64_t ix0, int64_t k0, int64_t k1, V scale, int64_t c0,
                      int64_t n, float* o) {
  const int64_t c = r.c;
  V acc[B];
  PTERON_UNROLL
  for (int b = 0; b < B; ++b) acc[b] = vset(0.0f);
  for (int64_t ky = 0; ky < r.kh; ++ky) {
    if (!r.rows[ky]) continue;
    const float* ip = r.rows[ky] + ix0 * c + c0;
    for (int64_t kx = k0; kx < k1; ++kx) {
      const float* x = ip + kx * r.dw * c;
      PTERON_UNROLL
      for (int b = 0; b < B; ++b) acc[b] = vadd(acc[b], Full ? vload(x + b * L) : vloadp(x, n));
    }
  }
  PTERON_UNROLL
  for (int b = 0; b < B; ++b) {
    V v = vmul(acc[b], scale);
    if (r.clamp) v = vclamp(v, vset(r.lo), vset(r.hi));
    if (Full)
      vstore(o + c0 + b * L, v);
    else
      vstorep(o + c0, v, n);
  }
}

void avg_pool_row(const PoolRow& r) {
  const int64_t c = r.c;
  int64_t rows = 0;
  for (int64_t ky = 0; ky < r.kh; ++ky) rows += r.rows[ky] != nullptr;
  for (int64_t ox = 0; ox < r.ow; ++ox) {
    int64_t k0, k1;
    valid_taps(r, ox, &k0, &k1);
    const int64_t ix0 = ox * r.sw - r.pl;
    const int64_t count = rows * (k1 - k0);
    const V scale = vset(count > 0 ? 1.0f / static_cast<float>(count) : 0.0f);
    float* o = r.out + ox * c;
    int64_t c0 = 0;
    for (; c0 + 4 * L <= c; c0 += 4 * L) avg_block<4, true>(r, ix0, k0, k1, scale, c0, L, o);
    for (; c0 + L <= c; c0 += L) avg_block<1, true>(r, ix0, k0, k1, scale, c0, L, o);
    if (c0 < c) avg_block<1, false>(r, ix0, k0, k1, scale, c0, c - c0, o);
  }
}

void sum_pixels(const float* in, int64_t pixels, int64_t stride, int64_t c, float* acc) {
  float* __restrict a = acc;
  for (int64_t p = 0; p < pixels; ++p) {
    const float* __restrict s = in + p * stride;
    for (int64_t j = 0; j < c; ++j) a[j] += s[j];
  }
}

// ---- bilinear ---------------------------------------------------------------------------------

void bilinear_row(const BilinearRow& r) {
  const int64_t c = r.c;
  const float l1 = r.ly, l0 = 1.0f - r.ly;
  for (int64_t ox = 0; ox < r.ow; ++ox) {
    const float w1 = r.lx[ox], w0 = 1.0f - w1;
    const float* __restrict a0 = r.r0 + r.x0[ox] * c;
    const float* __restrict a1 = r.r0 + r.x1[ox] * c;
    const float* __restrict b0 = r.r1 + r.x0[ox] * c;
    const float* __restrict b1 = r.r1 + r.x1[ox] * c;
    float* __restrict o = r.out + ox * c;
    for (int64_t j = 0; j < c; ++j)
      o[j] = l0 * (w0 * a0[j] + w1 * a1[j]) + l1 * (w0 * b0[j] + w1 * b1[j]);
  }
}

// ---- binary -----------------------------------------------------------------------------------

template <NBinary Op>
inline float bop(float a, float b) {
  if constexpr (Op == NBinary::Add)
    return a + b;
  else if constexpr (Op == NBinary::Sub)
    return a - b;
  else if constexpr (Op == NBinary::Mul)
    return a * b;
  else if constexpr (Op == NBinary::Div)
    return a / b;
  else if constexpr (Op == NBinary::Min)
    return (a < b || a != a) ? a : b;  // NaN on either side wins
  else
    return (a > b || a != a) ? a : b;
}

template <NBinary Op, NMode M, bool Clamp>
void binary_loop(const float* a, const float* b, float* out, int64_t n, float lo, float hi) {
  if constexpr (M == NMode::VV) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = bop<Op>(a[i], b[i]);
      out[i] = Clamp ? clampf(v, lo, hi) : v;
    }
  } else if constexpr (M == NMode::VS) {
    const float s = b[0];
    for (int64_t i = 0; i < n; ++i) {
      const float v = bop<Op>(a[i], s);
      out[i] = Clamp ? clampf(v, lo, hi) : v;
    }
  } else {
    const float s = a[0];
    for (int64_t i = 0; i < n; ++i) {
      const float v = bop<Op>(s, b[i]);
      out[i] = Clamp ? clampf(v, lo, hi) : v;
    }
  }
}

template <NBinary Op, NMode M, bool Clamp>
void binary_rows_loop(const float* a, int64_t a_rs, const float* b, int64_t b_rs, float* out,
                      int64_t rows, int64_t run, float lo, float hi) {
  for (int64_t r = 0; r < rows; ++r)
    binary_loop<Op, M, Clamp>(a + r * a_rs, b + r * b_rs, out + r * run, run, lo, hi);
}

template <NBinary Op>
void binary_rows_op(NMode mode, const float* a, int64_t a_rs, const float* b, int64_t b_rs,
                    float* out, int64_t rows, int64_t run, float lo, float hi, bool clamp) {
  switch (mode) {
    case NMode::VV:
      return clamp
                 ? binary_rows_loop<Op, NMode::VV, true>(a, a_rs, b, b_rs, out, rows, run, lo, hi)
                 : binary_rows_loop<Op, NMode::VV, false>(a, a_rs, b, b_rs, out, rows, run, lo, hi);
    case NMode::VS:
      return clamp
                 ? binary_rows_loop<Op, NMode::VS, true>(a, a_rs, b, b_rs, out, rows, run, lo, hi)
                 : binary_rows_loop<Op, NMode::VS, false>(a, a_rs, b, b_rs, out, rows, run, lo, hi);
    case NMode::SV:
      return clamp
                 ? binary_rows_loop<Op, NMode::SV, true>(a, a_rs, b, b_rs, out, rows, run, lo, hi)
                 : binary_rows_loop<Op, NMode::SV, false>(a, a_rs, b, b_rs, out, rows, run, lo, hi);
  }
}

void binary_rows(NBinary op, NMode mode, const float* a, int64_t a_rs, const float* b, int64_t b_rs,
                 float* out, int64_t rows, int64_t run, float lo, float hi, bool clamp) {
  switch (op) {
    case NBinary::Add:
      return binary_rows_op<NBinary::Add>(mode, a, a_rs, b, b_rs, out, rows, run, lo, hi, clamp);
    case NBinary::Sub:
      return binary_rows_op<NBinary::Sub>(mode, a, a_rs, b, b_rs, out, rows, run, lo, hi, clamp);
    case NBinary::Mul:
      return binary_rows_op<NBinary::Mul>(mode, a, a_rs, b, b_rs, out, rows, run, lo, hi, clamp);
    case NBinary::Div:
      return binary_rows_op<NBinary::Div>(mode, a, a_rs, b, b_rs, out, rows, run, lo, hi, clamp);
    case NBinary::Min:
      return binary_rows_op<NBinary::Min>(mode, a, a_rs, b, b_rs, out, rows, run, lo, hi, clamp);
    case NBinary::Max:
      return binary_rows_op<NBinary::Max>(mode, a, a_rs, b, b_rs, out, rows, run, lo, hi, clamp);
  }
}

template <NBinary Op>
void binary_mode(NMode mode, const float* a, const float* b, float* out, int64_t n, float lo,
                 float hi, bool clamp) {
  switch (mode) {
    case NMode::VV:
      return clamp ? binary_loop<Op, NMode::VV, true>(a, b, out, n, lo, hi)
                   : binary_loop<Op, NMode::VV, false>(a, b, out, n, lo, hi);
    case NMode::VS:
      return clamp ? binary_loop<Op, NMode::VS, true>(a, b, out, n, lo, hi)
                   : binary_loop<Op, NMode::VS, false>(a, b, out, n, lo, hi);
    case NMode::SV:
      return clamp ? binary_loop<Op, NMode::SV, true>(a, b, out, n, lo, hi)
                   : binary_loop<Op, NMode::SV, false>(a, b, out, n, lo, hi);
  }
}

void binary(NBinary op, NMode mode, const float* a, const float* b, float* out, int64_t n, float lo,
            float hi, bool clamp) {
  switch (op) {
    case NBinary::Add: return binary_mode<NBinary::Add>(mode, a, b, out, n, lo, hi, clamp);
    case NBinary::Sub: return binary_mode<NBinary::Sub>(mode, a, b, out, n, lo, hi, clamp);
    case NBinary::Mul: return binary_mode<NBinary::Mul>(mode, a, b, out, n, lo, hi, clamp);
    case NBinary::Div: return binary_mode<NBinary::Div>(mode, a, b, out, n, lo, hi, clamp);
    case NBinary::Min: return binary_mode<NBinary::Min>(mode, a, b, out, n, lo, hi, clamp);
    case NBinary::Max: return binary_mode<NBinary::Max>(mode, a, b, out, n, lo, hi, clamp);
  }
}

void prelu(const float* x, const float* slope, float* out, int64_t pixels, int64_t c, float lo,
           float hi, bool clamp) {
  for (int64_t p = 0; p < pixels; ++p) {
    const float* __restrict s = x + p * c;
    float* o = out + p * c;
    for (int64_t j = 0; j < c; ++j) {
      const float v = s[j];
      const float y = v > 0.0f ? v : v * slope[j];  // NaN: NaN * slope
      o[j] = clamp ? clampf(y, lo, hi) : y;
    }
  }
}

// ---- unary ------------------------------------------------------------------------------------

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using Eigen::Map;

// e^t, t taken within [-87, 87] (so 2^n stays a normal number: e^-87 is about
// 1.6e-38, e^87 about 6e37): t = n ln 2 + r with n integral and |r| <=
// ln(2) / 2 (ln 2 in two parts), e^r by a polynomial of degree 6 (fitted by
// least squares on Chebyshev nodes of that interval: relative error 2e-9
// before float rounding), times 2^n built in the exponent bits. The clamp
// is written max(-87, t) / min(87, t): maxps / minps return their second
// operand when either is NaN, so a NaN t stays NaN through to the result.
inline V vexp_clamped(V t) {
  t = vmin(vset(87.0f), vmax(vset(-87.0f), t));
  const V n = vround(vmul(t, vset(1.44269504088896341f)));
  V r = vfma(n, vset(-0.693145751953125f), t);    // ln 2, high part (exact in n * hi)
  r = vfma(n, vset(-1.428606765330187e-06f), r);  // ln 2, low part
  V p = vset(1.3829420786350965e-3f);
  p = vfma(p, r, vset(8.374771103262901e-3f));
  p = vfma(p, r, vset(4.16683591902256e-2f));
  p = vfma(p, r, vset(1.666642129421234e-1f));
  p = vfma(p, r, vset(4.9999991059303284e-1f));
  p = vfma(p, r, vset(1.0f));
  p = vfma(p, r, vset(1.0f));
  return vmul(p, vpow2(n));
}

// sigmoid(x) = 1 / (1 + e^-x): for x > 0 the sum is near 1, for x < 0 near
// e^-x, so there is no cancellation either way. The division is a
// reciprocal estimate refined by one Newton step (a few ulp); NaN stays NaN
// (through vexp_clamped, then the reciprocal). -inf gives exactly 0 (the
// clamped exponential alone would give 1.6e-38), so that x * sigmoid(x) is
// NaN there, as in PyTorch: x + inf is +inf for every finite x, NaN for -inf
// and NaN.
inline V vsigmoid(V x) {
  const V one = vset(1.0f);
  const V d = vadd(one, vexp_clamped(vsub(vset(0.0f), x)));
  const V r = vrcp(d);
  const V s = vfma(r, vsub(one, vmul(d, r)), r);
  return vsel_pos(vadd(x, vset(std::numeric_limits<float>::infinity())), s,
                  vkeep_nan(x, vset(0.0f)));
}

// out[i] = f(x[i]) for a vector function f, four vectors per iteration: four independent
// chains through a long dependency chain such as vsigmoid's (AMD EPYC Zen 3 at avx2, SiLU over
// 1.2 M floats in place, best of 30: 0.94 -> 0.79 ms; the loop is then bound by its ~30 vector
// operations per vector).
template <typename F>
inline void map_by4(const float* x, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const V a = vload(x + i), b = vload(x + i + L), c = vload(x + i + 2 * L),
            d = vload(x + i + 3 * L);
    vstore(out + i, f(a));
    vstore(out + i + L, f(b));
    vstore(out + i + 2 * L, f(c));
    vstore(out + i + 3 * L, f(d));
  }
  for (; i + L <= n; i += L) vstore(out + i, f(vload(x + i)));
  if (i < n) vstorep(out + i, f(vloadp(x + i, n - i)), n - i);
}

void sigmoid(const float* x, float* out, int64_t n) {
  map_by4(x, out, n, [](V v) { return vsigmoid(v); });
}

// x * sigmoid(x), the product of the rounded sigmoid (as Sigmoid then Multiply round).
void silu(const float* x, float* out, int64_t n) {
  map_by4(x, out, n, [](V v) { return vmul(v, vsigmoid(v)); });
}

// x * min(max(x + 3, 0), 6) / 6, with the division as a product by 1/6 (as XNNPACK's
// kernels do; within an ulp of PyTorch's quotient): a vdivps per vector was 10% of
// MobileNetV3-small. NaN is kept: max / min return their second operand when either is NaN.
inline V vhardswish(V v) {
  const V t = vmin(vset(6.0f), vmax(vset(0.0f), vadd(v, vset(3.0f))));
  return vmul(vmul(v, t), vset(1.0f / 6.0f));
}
void hardswish(const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + L <= n; i += L) vstore(out + i, vhardswish(vload(x + i)));
  if (i < n) vstorep(out + i, vhardswish(vloadp(x + i, n - i)), n - i);
}

// Eigen's vectorised functions, on blocks through a buffer on the stack: a NaN input is
// put back afterwards (Eigen's polynomial paths clamp their argument), which also lets out
// alias x.
void unary_eigen(NUnary op, const float* x, float* out, int64_t n) {
  constexpr int64_t kBlock = 256;
  alignas(64) float buf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = imin(kBlock, n - b);
    Map<const Arr> a(x + b, len);
    Map<Arr> y(buf, len);
    switch (op) {
      case NUnary::Exp: y = a.exp(); break;
      case NUnary::Log: y = a.log(); break;
      case NUnary::Sin: y = a.sin(); break;
      case NUnary::Cos: y = a.cos(); break;
      case NUnary::Tanh: y = a.tanh(); break;
      default: y = 0.5f * a * ((a * 0.70710678118654752440f).erf() + 1.0f); break;  // Gelu
    }
    const float* xs = x + b;
    float* o = out + b;
    for (int64_t i = 0; i < len; ++i) o[i] = xs[i] != xs[i] ? xs[i] : buf[i];
  }
}

void unary(NUnary op, const float* x, float* out, int64_t n, float p0, float p1) {
  if (n <= 0) return;
  switch (op) {
    case NUnary::Abs:
      for (int64_t i = 0; i < n; ++i) out[i] = std::fabs(x[i]);
      break;
    case NUnary::Neg:
      for (int64_t i = 0; i < n; ++i) out[i] = -x[i];
      break;
    case NUnary::Floor:
      for (int64_t i = 0; i < n; ++i) out[i] = std::floor(x[i]);
      break;
    case NUnary::Ceil:
      for (int64_t i = 0; i < n; ++i) out[i] = std::ceil(x[i]);
      break;
    case NUnary::Square:
      for (int64_t i = 0; i < n; ++i) out[i] = x[i] * x[i];
      break;
    // std::sqrt, not Eigen's (rsqrt-based under fast math: NaN for +inf); sqrtps with
    // -fno-math-errno.
    case NUnary::Sqrt:
      for (int64_t i = 0; i < n; ++i) out[i] = std::sqrt(x[i]);
      break;
    case NUnary::Rsqrt:
      for (int64_t i = 0; i < n; ++i) out[i] = 1.0f / std::sqrt(x[i]);
      break;
    case NUnary::Exp:
    case NUnary::Log:
    case NUnary::Sin:
    case NUnary::Cos:
    case NUnary::Tanh:
    case NUnary::Gelu: unary_eigen(op, x, out, n); break;
    case NUnary::Sigmoid: sigmoid(x, out, n); break;
    case NUnary::Silu: silu(x, out, n); break;
    case NUnary::Hardswish: hardswish(x, out, n); break;
    case NUnary::Elu:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        out[i] = v > 0.0f ? v : p0 * std::expm1(v);
      }
      break;
    case NUnary::LeakyRelu:
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        out[i] = v > 0.0f ? v : v * p0;
      }
      break;
    case NUnary::Clamp:
      for (int64_t i = 0; i < n; ++i) out[i] = clampf(x[i], p0, p1);
      break;
  }
}

void clamp(float* x, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) x[i] = clampf(x[i], lo, hi);
}

// ---- softmax ----------------------------------------------------------------------------------

// The largest / the sum of a vector's lanes.
inline float hmax(V v) {
  alignas(64) float t[L];
  vstore(t, v);
  float m = t[0];
  for (int64_t i = 1; i < L; ++i) m = t[i] > m ? t[i] : m;
  return m;
}
inline float hsum(V v) {
  alignas(64) float t[L];
  vstore(t, v);
  float s = t[0];
  for (int64_t i = 1; i < L; ++i) s += t[i];
  return s;
}

// e^t for t <= 0 (t = x - max): vexp_clamped, with 0 below -87 (where e^t is under the
// smallest normal float, as a rounded e^t would be 0 or subnormal; -inf gives exactly 0) and
// NaN kept.
inline V vexp_nonpositive(V t) {
  return vkeep_nan(t, vsel_pos(vadd(t, vset(87.0f)), vexp_clamped(t), vset(0.0f)));
}

// Softmax of `rows` contiguous rows of `len` elements, explicit vectors with a partial last
// vector (Eigen's maps of short unaligned rows, a transformer's 49- or 197-long attention
// rows, ran their unaligned ends through scalar exp). Three passes per row: the maximum (its
// last vector re-reads lanes already seen: the maximum does not mind), e^(x - max) into y with
// its sum, then y times 1 / sum. A NaN, or +inf, anywhere makes the row NaN (through x - max),
// as in PyTorch. y may alias x.
void softmax_rows(const float* x, float* y, int64_t rows, int64_t len) {
  if (len <= 0) return;
  for (int64_t r = 0; r < rows; ++r, x += len, y += len) {
    float mx = x[0];
    if (len >= L) {
      V m0 = vload(x), m1 = m0;
      int64_t i = L;
      for (; i + 2 * L <= len; i += 2 * L) m0 = vmax(m0, vload(x + i)), m1 = vmax(m1, vload(x + i + L));
      for (; i + L <= len; i += L) m0 = vmax(m0, vload(x + i));
      if (i < len) m1 = vmax(m1, vload(x + len - L));
      mx = hmax(vmax(m0, m1));
    } else {
      for (int64_t i = 1; i < len; ++i) mx = x[i] > mx ? x[i] : mx;
    }
    const V vm = vset(mx);
    V s0 = vset(0.0f), s1 = s0;
    int64_t i = 0;
    for (; i + 2 * L <= len; i += 2 * L) {
      const V e0 = vexp_nonpositive(vsub(vload(x + i), vm));
      const V e1 = vexp_nonpositive(vsub(vload(x + i + L), vm));
      vstore(y + i, e0);
      vstore(y + i + L, e1);
      s0 = vadd(s0, e0);
      s1 = vadd(s1, e1);
    }
    for (; i + L <= len; i += L) {
      const V e = vexp_nonpositive(vsub(vload(x + i), vm));
      vstore(y + i, e);
      s0 = vadd(s0, e);
    }
    if (i < len) {  // the lanes past the row are read back from y as zeros
      vstorep(y + i, vexp_nonpositive(vsub(vloadp(x + i, len - i), vm)), len - i);
      s1 = vadd(s1, vloadp(y + i, len - i));
    }
    const V scale = vset(1.0f / hsum(vadd(s0, s1)));
    for (i = 0; i + L <= len; i += L) vstore(y + i, vmul(vload(y + i), scale));
    if (i < len) vstorep(y + i, vmul(vloadp(y + i, len - i), scale), len - i);
  }
}

// ---- 2-D transpose ----------------------------------------------------------------------------

#if defined(__SSE2__) || defined(_M_X64)
// out[j * out_rs + i] = in[i * in_rs + j] for a 4 x 4 block.
inline void transpose4x4(const float* in, int64_t in_rs, float* out, int64_t out_rs) {
  __m128 r0 = _mm_loadu_ps(in), r1 = _mm_loadu_ps(in + in_rs);
  __m128 r2 = _mm_loadu_ps(in + 2 * in_rs), r3 = _mm_loadu_ps(in + 3 * in_rs);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(out, r0);
  _mm_storeu_ps(out + out_rs, r1);
  _mm_storeu_ps(out + 2 * out_rs, r2);
  _mm_storeu_ps(out + 3 * out_rs, r3);
}
#endif

#if defined(__AVX2__)
// The same for an 8 x 8 block.
inline void transpose8x8(const float* in, int64_t in_rs, float* out, int64_t out_rs) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + i * in_rs);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(out + i * out_rs, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(out + (i + 4) * out_rs, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

void transpose(const float* in, int64_t in_rs, float* out, int64_t out_rs, int64_t rows,
               int64_t cols) {
  int64_t r = 0;
#if defined(__SSE2__) || defined(_M_X64)
  if (rows < 4 && rows > 1 && out_rs == rows) {
    // Interleaving 2 or 3 planes (NCHW -> NHWC of an RGB image): a 4 x 4 block with the missing
    // rows zero, stored 4 floats per column at out + j * rows; each store's extra floats land on
    // the next column's slots, which the next store (or the scalar tail) overwrites, so the loop
    // stops one column before `cols` and never writes past this call's columns.
    const __m128 z = _mm_setzero_ps();
    int64_t c = 0;
    for (; c + 4 < cols; c += 4) {
      __m128 r0 = _mm_loadu_ps(in + c), r1 = _mm_loadu_ps(in + in_rs + c);
      __m128 r2 = rows == 3 ? _mm_loadu_ps(in + 2 * in_rs + c) : z, r3 = z;
      _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
      float* o = out + c * rows;
      _mm_storeu_ps(o, r0);
      _mm_storeu_ps(o + rows, r1);
      _mm_storeu_ps(o + 2 * rows, r2);
      _mm_storeu_ps(o + 3 * rows, r3);
    }
    for (; c < cols; ++c)
      for (int64_t i = 0; i < rows; ++i) out[c * rows + i] = in[i * in_rs + c];
    return;
  }
#endif
#if defined(__AVX2__)
  for (; r + 8 <= rows; r += 8) {
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8) transpose8x8(in + r * in_rs + c, in_rs, out + c * out_rs + r, out_rs);
    for (; c + 4 <= cols; c += 4) {
      transpose4x4(in + r * in_rs + c, in_rs, out + c * out_rs + r, out_rs);
      transpose4x4(in + (r + 4) * in_rs + c, in_rs, out + c * out_rs + r + 4, out_rs);
    }
    for (; c < cols; ++c)
      for (int64_t i = 0; i < 8; ++i) out[c * out_rs + r + i] = in[(r + i) * in_rs + c];
  }
#endif
#if defined(__SSE2__) || defined(_M_X64)
  for (; r + 4 <= rows; r += 4) {
    int64_t c = 0;
    for (; c + 4 <= cols; c += 4) transpose4x4(in + r * in_rs + c, in_rs, out + c * out_rs + r, out_rs);
    for (; c < cols; ++c)
      for (int64_t i = 0; i < 4; ++i) out[c * out_rs + r + i] = in[(r + i) * in_rs + c];
  }
#endif
  for (; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[c * out_rs + r] = in[r * in_rs + c];
}

const NhwcOps kNhwcOps = {
    PTERON_NHWC_STR_(PTERON_CPU_ISA),
    dw_row,
    max_pool_row,
    avg_pool_row,
    sum_pixels,
    bilinear_row,
    binary,
    binary_rows,
    prelu,
    unary,
    clamp,
    transpose,
    softmax_rows,
};

}  // namespace
}  // namespace PTERON_NHWC_NAMESPACE

const NhwcOps* PTERON_NHWC_CAT_(nhwc_ops_, PTERON_CPU_ISA)() {
  return &PTERON_NHWC_NAMESPACE::kNhwcOps;
}

}  // namespace pteron_cpu
