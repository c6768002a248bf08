// SPDX-License-Identifier: BSD-3-Clause
// qgemm_kernels.cpp - the microkernels of qgemm.h, compiled once per ISA level (PTERON_CPU_ISA,
// as isa_kernels.cpp: baseline, avx2, avx512, and avx512vnni with -mavx512vnni), each in
// namespace pteron_cpu::isa_<level>. One call computes up to mr rows x 16 columns of C from one
// packed panel:
//
//   baseline    plain loops over uint8 codes and int8 weights (4 taps per panel row);
//   avx2        per 2 taps: the panel row (16 columns x 2 int16) in two ymm, each row's two
//               int16 codes broadcast as one int32, vpmaddwd (products summed in pairs, exact:
//               |255 * 128 * 2| < 2^31) and vpaddd into 2 accumulators per row, 6 rows;
//   avx512      the same with one zmm per panel row, 12 rows;
//   avx512vnni  per 4 taps: one zmm of 16 columns x 4 int8, each row's 4 uint8 codes broadcast
//               as one int32, vpdpbusd (u8 x s8, 4 products summed into int32, no saturation),
//               12 rows.
// Edge tiles: columns past nc are computed from the panel's zero padding and not stored.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "pteron_cpu/qgemm.h"
#include "pteron_cpu/unroll.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
// gcc 12's AVX-512 min / max intrinsics read an "undefined" vector it then warns about.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#ifndef PTERON_CPU_ISA
#error "PTERON_CPU_ISA must name the ISA level (baseline, avx2, avx512 or avx512vnni)"
#endif

#define PTERON_QGEMM_CAT2_(a, b) a##b
#define PTERON_QGEMM_CAT_(a, b) PTERON_QGEMM_CAT2_(a, b)
#define PTERON_QGEMM_STR2_(x) #x
#define PTERON_QGEMM_STR_(x) PTERON_QGEMM_STR2_(x)

namespace pteron_cpu {
namespace PTERON_QGEMM_CAT_(isa_, PTERON_CPU_ISA) {
namespace {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// QGemmOut's epilogue for one element (the baseline level's, and the reference the vector
// ones follow step by step).
inline float round_even(float t) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: t + kMagic rounds t half to even
  return (t + kMagic) - kMagic;
}
// v rounded onto a grid: clamp(round(v * inv), lo, hi), NaN -> lo.
inline float grid_value(float v, float inv, float lo, float hi) {
  float t = v * inv;
  t = t > lo - 1 ? t : lo - 1;  // within round_even's range; NaN -> the low end
  t = t < hi + 1 ? t : hi + 1;
  t = round_even(t);
  return t < lo ? lo : (t > hi ? hi : t);
}
inline void epilogue(const QGemmOut& o, int32_t c, int64_t i, int64_t j) {
  const int32_t corr = o.col_corr ? o.col_corr[j] : o.row_off[i] * o.colsum[j];
  const float rs = o.row_scale ? o.row_scale[i] : 1.0f;
  float v = float(c - corr) * (rs * o.col_scale[j]) + o.bias[j];
  if (o.requant) {
    const float t = grid_value(v, o.o_inv, o.lo, o.hi);
    if (o.yc)
      o.yc[i * o.ldy + j] = uint8_t(int32_t(t + o.code_add));
    else
      o.y[i * o.ldy + j] = t * o.o_scale;
    return;
  }
  v = v < o.lo ? o.lo : v;
  o.y[i * o.ldy + j] = v > o.hi ? o.hi : v;
}
// One element of a QCodesOut.
inline void put_code(const QCodesOut& o, float v, int64_t at) {
  const float t = grid_value(v, o.inv, o.lo, o.hi);
  if (o.yc)
    o.yc[at] = uint8_t(int32_t(t + o.code_add));
  else
    o.y[at] = t * o.scale;
}

#if defined(__AVX512F__)
// The epilogue of R rows of 16 int32 sums (masked loads and stores past nc).
template <int R>
void store512(const __m512i* acc, int64_t nc, const QGemmOut& o, int64_t i0, int64_t j0) {
  const __mmask16 m = nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nc) - 1);
  const __m512i cs = _mm512_maskz_loadu_epi32(m, (o.col_corr ? o.col_corr : o.colsum) + j0);
  const __m512 ws = _mm512_maskz_loadu_ps(m, o.col_scale + j0);
  const __m512 b = _mm512_maskz_loadu_ps(m, o.bias + j0);
  const __m512 lo = _mm512_set1_ps(o.lo), hi = _mm512_set1_ps(o.hi);
  const __m512 inv = _mm512_set1_ps(o.o_inv), sc = _mm512_set1_ps(o.o_scale);
  const __m512i code_add = _mm512_set1_epi32(static_cast<int32_t>(o.code_add));
  for (int i = 0; i < R; ++i) {
    const __m512i corr =
        o.col_corr ? cs : _mm512_mullo_epi32(_mm512_set1_epi32(o.row_off[i0 + i]), cs);
    const __m512 scale = o.row_scale ? _mm512_mul_ps(_mm512_set1_ps(o.row_scale[i0 + i]), ws) : ws;
    __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i], corr)), scale, b);
    if (o.requant) {
      if (o.yc) {
        // lo and hi are whole numbers, so clamping before the rounding (cvtps: half to even,
        // the default MXCSR mode) gives the same integer as after; the code offset is then
        // an integer add.
        const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, inv), lo), hi);
        const __m512i c = _mm512_add_epi32(_mm512_cvtps_epi32(t), code_add);
        _mm_mask_storeu_epi8(o.yc + (i0 + i) * o.ldy + j0, m, _mm512_cvtusepi32_epi8(c));
        continue;
      }
      __m512 t =
          _mm512_roundscale_ps(_mm512_mul_ps(v, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);  // max(NaN, lo) is lo
      v = _mm512_mul_ps(t, sc);
    } else {
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    }
    _mm512_mask_storeu_ps(o.y + (i0 + i) * o.ldy + j0, m, v);
  }
}
#endif

#if defined(PTERON_QGEMM_VNNI)

constexpr int64_t kMr = 8;
constexpr int kActBytes = 1, kWBytes = 1;
constexpr int64_t kGroup = 4;
constexpr int64_t kPanels = 2;

// P panels (16 columns each) per call: P vectors per row and group, one broadcast of the row's
// codes shared by them.
template <int R, int P>
void body_p(int64_t nc, int64_t segs, int64_t groups, const void* const* rows, const void* w,
            int64_t wstride, const QGemmOut& o, int64_t i0, int64_t j0) {
  __m512i acc[P][R];
  for (int p = 0; p < P; ++p)
    for (int i = 0; i < R; ++i) acc[p][i] = _mm512_setzero_si512();
  const int8_t* wp = static_cast<const int8_t*>(w);
  for (int64_t s = 0; s < segs; ++s) {
    const uint8_t* a[R];
    for (int i = 0; i < R; ++i) a[i] = static_cast<const uint8_t*>(rows[i * segs + s]);
    for (int64_t g = 0; g < groups; ++g, wp += 64) {
      __m512i wv[P];
      for (int p = 0; p < P; ++p) wv[p] = _mm512_loadu_si512(wp + p * wstride);
      for (int i = 0; i < R; ++i) {
        const __m512i av = _mm512_set1_epi32(load_i32(a[i] + 4 * g));
        for (int p = 0; p < P; ++p) acc[p][i] = _mm512_dpbusd_epi32(acc[p][i], av, wv[p]);
      }
    }
  }
  for (int p = 0; p < P; ++p)
    if (nc > 16 * p) store512<R>(acc[p], nc - 16 * p < 16 ? nc - 16 * p : 16, o, i0, j0 + 16 * p);
}

template <int R>
void body(int64_t nc, int64_t segs, int64_t groups, const void* const* rows, const void* w,
          int64_t wstride, const QGemmOut& o, int64_t i0, int64_t j0) {
  if (nc > 16)
    body_p<R, 2>(nc, segs, groups, rows, w, wstride, o, i0, j0);
  else
    body_p<R, 1>(nc, segs, groups, rows, w, wstride, o, i0, j0);
}

#elif defined(__AVX512F__)

constexpr int64_t kMr = 12;
constexpr int kActBytes = 2, kWBytes = 2;
constexpr int64_t kGroup = 2;
constexpr int64_t kPanels = 1;

template <int R>
void body(int64_t nc, int64_t segs, int64_t groups, const void* const* rows, const void* w,
          int64_t, const QGemmOut& o, int64_t i0, int64_t j0) {
  __m512i acc[R];
  PTERON_UNROLL  // as at avx2: no rep stos of the accumulators at every call
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_si512();
  const int16_t* wp = static_cast<const int16_t*>(w);
  for (int64_t s = 0; s < segs; ++s) {
    const int16_t* a[R];
    for (int i = 0; i < R; ++i) a[i] = static_cast<const int16_t*>(rows[i * segs + s]);
    for (int64_t g = 0; g < groups; ++g, wp += 32) {
      const __m512i wv = _mm512_loadu_si512(wp);
      for (int i = 0; i < R; ++i)
        acc[i] = _mm512_add_epi32(
            acc[i], _mm512_madd_epi16(_mm512_set1_epi32(load_i32(a[i] + 2 * g)), wv));
    }
  }
  store512<R>(acc, nc, o, i0, j0);
}

#elif defined(__AVX2__)

constexpr int64_t kMr = 6;
constexpr int kActBytes = 2, kWBytes = 2;
constexpr int64_t kGroup = 2;
constexpr int64_t kPanels = 1;

// The epilogue's colsum loads read 16 columns: a panel's colsum is padded (QPackedWeights).

// round(v * inv) half to even, clamped to [lo, hi]; max(NaN, lo) is lo.
inline __m256 grid8(__m256 v, __m256 inv, __m256 lo, __m256 hi) {
  const __m256 t =
      _mm256_round_ps(_mm256_mul_ps(v, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm256_min_ps(_mm256_max_ps(t, lo), hi);
}
// The 16 codes of v0 (columns 0-7) and v1 (8-15) as bytes: v * inv clamped to [lo, hi], then
// rounded by vcvtps2dq (half to even: the default MXCSR mode), which gives the integer grid8
// gives, since lo and hi are whole numbers (max(NaN, lo) is lo); then the code offset `add` as
// an integer add, and the packs to bytes, all in registers.
inline __m128i pack_codes16(__m256 v0, __m256 v1, __m256 inv, __m256 lo, __m256 hi,
                            __m256i add) {
  const __m256 t0 = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v0, inv), lo), hi);
  const __m256 t1 = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v1, inv), lo), hi);
  const __m256i c0 = _mm256_add_epi32(_mm256_cvtps_epi32(t0), add);
  const __m256i c1 = _mm256_add_epi32(_mm256_cvtps_epi32(t1), add);
  const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(c0, c1), 0xD8);
  return _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
}

template <int R>
void body(int64_t nc, int64_t segs, int64_t groups, const void* const* rows, const void* w,
          int64_t, const QGemmOut& o, int64_t i0, int64_t j0) {
  __m256i lo[R], hi[R];
  PTERON_UNROLL  // else gcc 12 zeroes the arrays on the stack with rep stos at every call
  for (int i = 0; i < R; ++i) lo[i] = hi[i] = _mm256_setzero_si256();
  const int16_t* wp = static_cast<const int16_t*>(w);
  for (int64_t s = 0; s < segs; ++s) {
    const int16_t* a[R];
    for (int i = 0; i < R; ++i) a[i] = static_cast<const int16_t*>(rows[i * segs + s]);
    for (int64_t g = 0; g < groups; ++g, wp += 32) {
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp));
      const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 16));
      for (int i = 0; i < R; ++i) {
        const __m256i av = _mm256_set1_epi32(load_i32(a[i] + 2 * g));
        lo[i] = _mm256_add_epi32(lo[i], _mm256_madd_epi16(av, w0));
        hi[i] = _mm256_add_epi32(hi[i], _mm256_madd_epi16(av, w1));
      }
    }
  }
  // The epilogue, 8 columns at a time, in registers: the per-column vectors once per call
  // (masked loads past nc), then per row vcvtdq2ps, FMA and the requantization (codes:
  // pack_codes16; a zeroed row buffer per row was 13% of mobilenet_v2_int8 on AMD EPYC Zen 3).
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(nc)), lane);
  const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(nc) - 8), lane);
  const int32_t* ccol = o.col_corr ? o.col_corr : o.colsum;  // padded to 16 columns
  const __m256i cs0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ccol + j0));
  const __m256i cs1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ccol + j0 + 8));
  const __m256 ws0 = _mm256_maskload_ps(o.col_scale + j0, m0);
  const __m256 ws1 = _mm256_maskload_ps(o.col_scale + j0 + 8, m1);
  const __m256 b0 = _mm256_maskload_ps(o.bias + j0, m0);
  const __m256 b1 = _mm256_maskload_ps(o.bias + j0 + 8, m1);
  const __m256 vlo = _mm256_set1_ps(o.lo), vhi = _mm256_set1_ps(o.hi);
  const __m256 vinv = _mm256_set1_ps(o.o_inv), vsc = _mm256_set1_ps(o.o_scale);
  const __m256i vadd = _mm256_set1_epi32(static_cast<int32_t>(o.code_add));
  const int32_t* row_off = o.row_off;
  const float* row_scale = o.row_scale;
  const bool col_corr = o.col_corr != nullptr, requant = o.requant != 0;
  uint8_t* const yc = o.yc;
  float* const y = o.y;
  const int64_t ldy = o.ldy;
  for (int i = 0; i < R; ++i) {
    const __m256i off = _mm256_set1_epi32(row_off ? row_off[i0 + i] : 0);
    const __m256 rs = _mm256_set1_ps(row_scale ? row_scale[i0 + i] : 1.0f);
    const __m256i corr0 = col_corr ? cs0 : _mm256_mullo_epi32(off, cs0);
    const __m256i corr1 = col_corr ? cs1 : _mm256_mullo_epi32(off, cs1);
    __m256 v0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(lo[i], corr0)),
                                _mm256_mul_ps(rs, ws0), b0);
    __m256 v1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(hi[i], corr1)),
                                _mm256_mul_ps(rs, ws1), b1);
    if (requant && yc) {
      const __m128i c = pack_codes16(v0, v1, vinv, vlo, vhi, vadd);
      uint8_t* out = yc + (i0 + i) * ldy + j0;
      if (nc >= 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), c);
      } else {
        alignas(16) uint8_t tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), c);
        std::memcpy(out, tmp, size_t(nc));
      }
      continue;
    }
    if (requant) {
      v0 = _mm256_mul_ps(grid8(v0, vinv, vlo, vhi), vsc);
      v1 = _mm256_mul_ps(grid8(v1, vinv, vlo, vhi), vsc);
    } else {
      v0 = _mm256_min_ps(_mm256_max_ps(v0, vlo), vhi);
      v1 = _mm256_min_ps(_mm256_max_ps(v1, vlo), vhi);
    }
    float* out = y + (i0 + i) * ldy + j0;
    if (nc >= 16) {
      _mm256_storeu_ps(out, v0), _mm256_storeu_ps(out + 8, v1);
    } else {
      _mm256_maskstore_ps(out, m0, v0);
      if (nc > 8) _mm256_maskstore_ps(out + 8, m1, v1);
    }
  }
}

#endif

#if defined(__AVX2__) || defined(__AVX512F__)
template <int R>
void rows_up_to(int64_t mr, int64_t nc, int64_t segs, int64_t groups, const void* const* rows,
                const void* w, int64_t wstride, const QGemmOut& o, int64_t i0, int64_t j0) {
  if constexpr (R > 1) {
    if (mr < R) return rows_up_to<R - 1>(mr, nc, segs, groups, rows, w, wstride, o, i0, j0);
  }
  body<R>(nc, segs, groups, rows, w, wstride, o, i0, j0);
}

void ukernel(int64_t mr, int64_t nc, int64_t segs, int64_t groups, const void* const* rows,
             const void* w, int64_t wstride, const QGemmOut& o, int64_t i0, int64_t j0) {
  rows_up_to<int(kMr)>(mr, nc, segs, groups, rows, w, wstride, o, i0, j0);
}
#else

constexpr int64_t kMr = 4;
constexpr int kActBytes = 1, kWBytes = 1;
constexpr int64_t kGroup = 4;
constexpr int64_t kPanels = 1;

void ukernel(int64_t mr, int64_t nc, int64_t segs, int64_t groups, const void* const* rows,
             const void* w, int64_t, const QGemmOut& o, int64_t i0, int64_t j0) {
  int32_t acc[kMr][16] = {};
  const int8_t* wp = static_cast<const int8_t*>(w);
  for (int64_t s = 0; s < segs; ++s) {
    for (int64_t g = 0; g < groups; ++g, wp += 64) {
      for (int64_t i = 0; i < mr; ++i) {
        const uint8_t* a = static_cast<const uint8_t*>(rows[i * segs + s]) + 4 * g;
        for (int64_t j = 0; j < 16; ++j)
          acc[i][j] += int32_t(a[0]) * wp[4 * j] + int32_t(a[1]) * wp[4 * j + 1] +
                       int32_t(a[2]) * wp[4 * j + 2] + int32_t(a[3]) * wp[4 * j + 3];
      }
    }
  }
  for (int64_t i = 0; i < mr; ++i)
    for (int64_t j = 0; j < nc; ++j)
      epilogue(o, acc[i][j], i0 + i, j0 + j);
}

#endif

// ---- activation codes ---------------------------------------------------------------------

template <typename T>
void encode_scalar(const float* x, int64_t n, float inv, float a, float b, float lo, float hi,
                   float shift, T* out) {
  for (int64_t i = 0; i < n; ++i) {
    float t = x[i] * inv + a;
    t = t > lo - b - 1 ? t : lo - b - 1;  // NaN -> the low end
    t = t < hi - b + 1 ? t : hi - b + 1;
    float r = round_even(t) + b;
    r = r < lo ? lo : (r > hi ? hi : r);
    out[i] = static_cast<T>(r + shift);
  }
}

void encode(const float* x, int64_t n, float inv, float zp, float lo, float hi, float shift,
            int zp_before_round, void* out) {
  const float a = zp_before_round ? zp : 0.0f, b = zp_before_round ? 0.0f : zp;
  int64_t i = 0;
#if defined(__AVX512F__)
  {
    const __m512 vinv = _mm512_set1_ps(inv), va = _mm512_set1_ps(a);
    const __m512 tlo = _mm512_set1_ps(lo - b - 1), thi = _mm512_set1_ps(hi - b + 1);
    const __m512i vb = _mm512_set1_epi32(int32_t(b)), vlo = _mm512_set1_epi32(int32_t(lo));
    const __m512i vhi = _mm512_set1_epi32(int32_t(hi)), vs = _mm512_set1_epi32(int32_t(shift));
    for (; i + 16 <= n; i += 16) {
      __m512 t = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vinv), va);  // no FMA
      t = _mm512_min_ps(_mm512_max_ps(t, tlo), thi);  // max(NaN, lo) is lo
      __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(t), vb);  // rounds half to even
      r = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(r, vlo), vhi), vs);
      if (kActBytes == 1)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint8_t*>(out) + i),
                         _mm512_cvtepi32_epi8(r));
      else
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(static_cast<int16_t*>(out) + i),
                            _mm512_cvtepi32_epi16(r));
    }
  }
#elif defined(__AVX2__)
  {
    const __m256 vinv = _mm256_set1_ps(inv), va = _mm256_set1_ps(a);
    const __m256 tlo = _mm256_set1_ps(lo - b - 1), thi = _mm256_set1_ps(hi - b + 1);
    const __m256i vb = _mm256_set1_epi32(int32_t(b)), vlo = _mm256_set1_epi32(int32_t(lo));
    const __m256i vhi = _mm256_set1_epi32(int32_t(hi)), vs = _mm256_set1_epi32(int32_t(shift));
    for (; i + 8 <= n; i += 8) {
      __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv), va);  // no FMA
      t = _mm256_min_ps(_mm256_max_ps(t, tlo), thi);
      __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(t), vb);
      r = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(r, vlo), vhi), vs);
      const __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<int16_t*>(out) + i), p);
    }
  }
#endif
  // The rest (every element at the baseline level): the same steps, one element at a time.
  if (kActBytes == 1)
    encode_scalar(x + i, n - i, inv, a, b, lo, hi, shift, static_cast<uint8_t*>(out) + i);
  else
    encode_scalar(x + i, n - i, inv, a, b, lo, hi, shift, static_cast<int16_t*>(out) + i);
}

void minmax(const float* x, int64_t n, float* mn, float* mx) {
  float lo = x[0], hi = x[0];
  bool nan = false;
  int64_t i = 0;
#if defined(__AVX512F__)
  if (n >= 16) {
    __m512 vlo = _mm512_loadu_ps(x), vhi = vlo;
    __mmask16 bad = 0;
    for (; i + 16 <= n; i += 16) {
      const __m512 v = _mm512_loadu_ps(x + i);
      vlo = _mm512_min_ps(vlo, v), vhi = _mm512_max_ps(vhi, v);
      bad |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
    lo = _mm512_reduce_min_ps(vlo), hi = _mm512_reduce_max_ps(vhi);
    nan = bad != 0;
  }
#elif defined(__AVX2__)
  if (n >= 8) {
    __m256 vlo = _mm256_loadu_ps(x), vhi = vlo, bad = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      vlo = _mm256_min_ps(vlo, v), vhi = _mm256_max_ps(vhi, v);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    alignas(32) float l[8], h[8];
    _mm256_store_ps(l, vlo), _mm256_store_ps(h, vhi);
    lo = l[0], hi = h[0];
    for (int k = 1; k < 8; ++k) lo = l[k] < lo ? l[k] : lo, hi = h[k] > hi ? h[k] : hi;
    nan = _mm256_movemask_ps(bad) != 0;
  }
#endif
  for (; i < n; ++i) {
    const float v = x[i];
    nan |= v != v;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  if (nan) lo = hi = std::numeric_limits<float>::quiet_NaN();
  *mn = lo, *mx = hi;
}

void requant(float* x, int64_t n, float inv, float lo, float hi, float scale) {
  int64_t i = 0;
#if defined(__AVX512F__)
  {
    const __m512 vinv = _mm512_set1_ps(inv), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const __m512 vs = _mm512_set1_ps(scale);
    for (; i + 16 <= n; i += 16) {
      const __m512 t = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vinv),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_min_ps(_mm512_max_ps(t, vlo), vhi), vs));
    }
  }
#elif defined(__AVX2__)
  {
    const __m256 vinv = _mm256_set1_ps(inv), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const __m256 vs = _mm256_set1_ps(scale);
    for (; i + 8 <= n; i += 8) {
      const __m256 t = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_min_ps(_mm256_max_ps(t, vlo), vhi), vs));
    }
  }
#endif
  for (; i < n; ++i) {
    float t = x[i] * inv;
    t = t > lo - 1 ? t : lo - 1;  // within round_even's range; NaN -> the low end
    t = t < hi + 1 ? t : hi + 1;
    t = round_even(t);
    x[i] = (t < lo ? lo : (t > hi ? hi : t)) * scale;
  }
}

// ---- depthwise convolution and sum of codes (qgemm.h: QDwConv, QAdd) ------------------------
// Channels (elements) 16 at a time in float32 vectors (two ymm at the avx2 level), the rest one
// at a time with the same steps; the grid rounding as requant's.

#if defined(__AVX512F__)
struct Grid16 {
  __m512 inv, lo, hi, scale, add;
  explicit Grid16(const QCodesOut& o)
      : inv(_mm512_set1_ps(o.inv)), lo(_mm512_set1_ps(o.lo)), hi(_mm512_set1_ps(o.hi)),
        scale(_mm512_set1_ps(o.scale)), add(_mm512_set1_ps(o.code_add)) {}
};
inline __m512 codes16(const uint8_t* p, float off) {
  const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(u)), _mm512_set1_ps(off));
}
inline void put16(const QCodesOut& o, const Grid16& g, __m512 v, int64_t at) {
  __m512 t =
      _mm512_roundscale_ps(_mm512_mul_ps(v, g.inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  t = _mm512_min_ps(_mm512_max_ps(t, g.lo), g.hi);  // max(NaN, lo) is lo
  if (o.yc)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o.yc + at),
                     _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(_mm512_add_ps(t, g.add))));
  else
    _mm512_storeu_ps(o.y + at, _mm512_mul_ps(t, g.scale));
}
#elif defined(__AVX2__)
struct V16 {
  __m256 a, b;
};
struct Grid16 {
  __m256 inv, lo, hi, scale;
  __m256i add;
  explicit Grid16(const QCodesOut& o)
      : inv(_mm256_set1_ps(o.inv)), lo(_mm256_set1_ps(o.lo)), hi(_mm256_set1_ps(o.hi)),
        scale(_mm256_set1_ps(o.scale)),
        add(_mm256_set1_epi32(static_cast<int32_t>(o.code_add))) {}
};
// 8 codes from memory as int32 lanes (the load folds into vpmovzxbd).
inline __m256i codes8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline V16 codes16(const uint8_t* p, float off) {
  const __m256 o = _mm256_set1_ps(off);
  return {_mm256_sub_ps(_mm256_cvtepi32_ps(codes8(p)), o),
          _mm256_sub_ps(_mm256_cvtepi32_ps(codes8(p + 8)), o)};
}
inline void put16(const QCodesOut& o, const Grid16& g, V16 v, int64_t at) {
  if (o.yc) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o.yc + at),
                     pack_codes16(v.a, v.b, g.inv, g.lo, g.hi, g.add));
    return;
  }
  _mm256_storeu_ps(o.y + at, _mm256_mul_ps(grid8(v.a, g.inv, g.lo, g.hi), g.scale));
  _mm256_storeu_ps(o.y + at + 8, _mm256_mul_ps(grid8(v.b, g.inv, g.lo, g.hi), g.scale));
}
#endif

// One output pixel, any taps (those outside the input skipped): codes minus in_off times w.
void dw_pixel(const QDwConv& p, const uint8_t* x, int64_t b, int64_t oy, int64_t ox,
              int64_t at) {
  const int64_t C = p.c;
  int64_t tap[64], toff[64], nt = 0;  // the taps inside the input (at most 64: QDwConv)
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = oy * p.sh - p.pt + ky * p.dh;
    if (iy < 0 || iy >= p.ih) continue;
    for (int64_t kx = 0; kx < p.kw && nt < 64; ++kx) {
      const int64_t ix = ox * p.sw - p.pl + kx * p.dw;
      if (ix < 0 || ix >= p.iw) continue;
      tap[nt] = (ky * p.kw + kx) * C;
      toff[nt++] = ((b * p.ih + iy) * p.iw + ix) * C;
    }
  }
  int64_t c = 0;
#if defined(__AVX512F__)
  const Grid16 g(p.out);
  for (; c + 16 <= C; c += 16) {
    __m512 acc = _mm512_loadu_ps(p.bias + c);
    for (int64_t t = 0; t < nt; ++t)
      acc = _mm512_fmadd_ps(codes16(x + toff[t] + c, p.in_off), _mm512_loadu_ps(p.w + tap[t] + c),
                            acc);
    put16(p.out, g, acc, at + c);
  }
#elif defined(__AVX2__)
  const Grid16 g(p.out);
  for (; c + 16 <= C; c += 16) {
    V16 acc{_mm256_loadu_ps(p.bias + c), _mm256_loadu_ps(p.bias + c + 8)};
    for (int64_t t = 0; t < nt; ++t) {
      const V16 u = codes16(x + toff[t] + c, p.in_off);
      const float* w = p.w + tap[t] + c;
      acc.a = _mm256_fmadd_ps(u.a, _mm256_loadu_ps(w), acc.a);
      acc.b = _mm256_fmadd_ps(u.b, _mm256_loadu_ps(w + 8), acc.b);
    }
    put16(p.out, g, acc, at + c);
  }
#endif
  for (; c < C; ++c) {
    float acc = p.bias[c];
    for (int64_t t = 0; t < nt; ++t)
      acc = std::fma(float(x[toff[t] + c]) - p.in_off, p.w[tap[t] + c], acc);
    put_code(p.out, acc, at + c);
  }
}

#if defined(__AVX512F__) || defined(__AVX2__)
// Output pixels ox0 <= ox < ox1 of one row whose taps are all inside the input, 16 channels
// from c: T taps (T = kh * kw when known at compile time, else 0 and p.kh * p.kw), the filter's
// vectors held in registers across the pixels; codes times w from bias_full.
template <int T>
void dw_inner(const QDwConv& p, const uint8_t* x, const int64_t* toff, int64_t row0,
              int64_t ox0, int64_t ox1, int64_t c, int64_t at0) {
  const int64_t taps = T ? T : p.kh * p.kw;
  const int64_t C = p.c, step = p.sw * C;
  const Grid16 g(p.out);
#if defined(__AVX512F__)
  __m512 w[T ? T : 1];
  if (T)
    for (int t = 0; t < T; ++t) w[t] = _mm512_loadu_ps(p.w + t * C + c);
  const __m512 b = _mm512_loadu_ps(p.bias_full + c);
  const uint8_t* px = x + row0 + (ox0 * p.sw - p.pl) * C + c;
  auto code = [&](const uint8_t* q) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
  };
  int64_t ox = ox0;
  // four pixels at a time: four independent FMA chains
  for (; ox + 4 <= ox1; ox += 4, px += 4 * step) {
    __m512 a0 = b, a1 = b, a2 = b, a3 = b;
    for (int64_t t = 0; t < taps; ++t) {
      const __m512 wt = T ? w[T ? t : 0] : _mm512_loadu_ps(p.w + t * C + c);
      const uint8_t* q = px + toff[t];
      a0 = _mm512_fmadd_ps(code(q), wt, a0);
      a1 = _mm512_fmadd_ps(code(q + step), wt, a1);
      a2 = _mm512_fmadd_ps(code(q + 2 * step), wt, a2);
      a3 = _mm512_fmadd_ps(code(q + 3 * step), wt, a3);
    }
    put16(p.out, g, a0, at0 + ox * C + c);
    put16(p.out, g, a1, at0 + (ox + 1) * C + c);
    put16(p.out, g, a2, at0 + (ox + 2) * C + c);
    put16(p.out, g, a3, at0 + (ox + 3) * C + c);
  }
  for (; ox < ox1; ++ox, px += step) {
    __m512 acc = b;
    for (int64_t t = 0; t < taps; ++t)
      acc = _mm512_fmadd_ps(code(px + toff[t]), T ? w[T ? t : 0] : _mm512_loadu_ps(p.w + t * C + c),
                            acc);
    put16(p.out, g, acc, at0 + ox * C + c);
  }
#else
  __m256 wa[T ? T : 1], wb[T ? T : 1];
  if (T)
    for (int t = 0; t < T; ++t)
      wa[t] = _mm256_loadu_ps(p.w + t * C + c), wb[t] = _mm256_loadu_ps(p.w + t * C + c + 8);
  const __m256 ba = _mm256_loadu_ps(p.bias_full + c), bb = _mm256_loadu_ps(p.bias_full + c + 8);
  const uint8_t* px = x + row0 + (ox0 * p.sw - p.pl) * C + c;
  int64_t ox = ox0;
  // two pixels at a time: four independent FMA chains
  for (; ox + 2 <= ox1; ox += 2, px += 2 * step) {
    V16 a0{ba, bb}, a1{ba, bb};
    for (int64_t t = 0; t < taps; ++t) {
      const __m256 wta = T ? wa[T ? t : 0] : _mm256_loadu_ps(p.w + t * C + c);
      const __m256 wtb = T ? wb[T ? t : 0] : _mm256_loadu_ps(p.w + t * C + c + 8);
      const uint8_t* q = px + toff[t];
      a0.a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(codes8(q)), wta, a0.a);
      a0.b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(codes8(q + 8)), wtb, a0.b);
      a1.a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(codes8(q + step)), wta, a1.a);
      a1.b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(codes8(q + step + 8)), wtb, a1.b);
    }
    put16(p.out, g, a0, at0 + ox * C + c);
    put16(p.out, g, a1, at0 + (ox + 1) * C + c);
  }
  for (; ox < ox1; ++ox, px += step) {
    V16 acc{ba, bb};
    for (int64_t t = 0; t < taps; ++t) {
      const __m256 ua = _mm256_cvtepi32_ps(codes8(px + toff[t]));
      const __m256 ub = _mm256_cvtepi32_ps(codes8(px + toff[t] + 8));
      acc.a = _mm256_fmadd_ps(ua, T ? wa[T ? t : 0] : _mm256_loadu_ps(p.w + t * C + c), acc.a);
      acc.b = _mm256_fmadd_ps(ub, T ? wb[T ? t : 0] : _mm256_loadu_ps(p.w + t * C + c + 8), acc.b);
    }
    put16(p.out, g, acc, at0 + ox * C + c);
  }
#endif
}
#endif

void dwconv(const QDwConv& p, const uint8_t* x, int64_t row_begin, int64_t row_end) {
  const int64_t C = p.c;
  // The columns whose taps are all inside the input: ox0 <= ox < ox1.
  int64_t ox0 = (p.pl + p.sw - 1) / p.sw;
  const int64_t last = p.iw - 1 - (p.kw - 1) * p.dw + p.pl;  // ox * sw <= last
  int64_t ox1 = last < 0 ? 0 : last / p.sw + 1;
  ox1 = ox1 < p.ow ? ox1 : p.ow;
  ox0 = ox0 < ox1 ? ox0 : ox1;
  // tap t's offset from the pixel of tap 0, in codes
  int64_t toff[64];
  const int64_t taps = p.kh * p.kw;
  for (int64_t ky = 0; ky < p.kh; ++ky)
    for (int64_t kx = 0; kx < p.kw; ++kx)
      toff[ky * p.kw + kx] = (ky * p.dh * p.iw + kx * p.dw) * C;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t b = r / p.oh, oy = r % p.oh;
    const int64_t at0 = r * p.ow * C;
    const int64_t iy0 = oy * p.sh - p.pt;
    const bool rows_in = iy0 >= 0 && iy0 + (p.kh - 1) * p.dh < p.ih;
    int64_t fast_end = 0, c = 0;
#if defined(__AVX512F__) || defined(__AVX2__)
    if (rows_in && ox0 < ox1) {
      const int64_t row0 = (b * p.ih + iy0) * p.iw * C;
      for (; c + 16 <= C; c += 16) {
        if (taps == 9)
          dw_inner<9>(p, x, toff, row0, ox0, ox1, c, at0);
        else if (taps == 25)
          dw_inner<25>(p, x, toff, row0, ox0, ox1, c, at0);
        else
          dw_inner<0>(p, x, toff, row0, ox0, ox1, c, at0);
      }
      fast_end = c;
    }
#endif
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      const bool fast = rows_in && ox >= ox0 && ox < ox1;
      if (fast && fast_end == C) continue;
      if (!fast) {
        dw_pixel(p, x, b, oy, ox, at0 + ox * C);
        continue;
      }
      // the channels past the last whole 16 of a fast pixel
      const uint8_t* px = x + (b * p.ih + iy0) * p.iw * C + (ox * p.sw - p.pl) * C;
      for (c = fast_end; c < C; ++c) {
        float acc = p.bias_full[c];
        for (int64_t t = 0; t < taps; ++t) acc = std::fma(float(px[toff[t] + c]), p.w[t * C + c], acc);
        put_code(p.out, acc, at0 + ox * C + c);
      }
    }
  }
}

void add(const QAdd& p, const uint8_t* a, const uint8_t* b, int64_t n, int64_t at) {
  int64_t i = 0;
#if defined(__AVX512F__)
  {
    const Grid16 g(p.out);
    const __m512 sa = _mm512_set1_ps(p.a_scale), sb = _mm512_set1_ps(p.b_scale);
    for (; i + 16 <= n; i += 16)
      put16(p.out, g,
            _mm512_add_ps(_mm512_mul_ps(codes16(a + i, p.a_off), sa),
                          _mm512_mul_ps(codes16(b + i, p.b_off), sb)),
            at + i);
  }
#elif defined(__AVX2__)
  {
    const Grid16 g(p.out);
    const __m256 sa = _mm256_set1_ps(p.a_scale), sb = _mm256_set1_ps(p.b_scale);
    for (; i + 16 <= n; i += 16) {
      const V16 u = codes16(a + i, p.a_off), v = codes16(b + i, p.b_off);
      put16(p.out, g,
            V16{_mm256_add_ps(_mm256_mul_ps(u.a, sa), _mm256_mul_ps(v.a, sb)),
                _mm256_add_ps(_mm256_mul_ps(u.b, sa), _mm256_mul_ps(v.b, sb))},
            at + i);
    }
  }
#endif
  for (; i < n; ++i)
    put_code(p.out, (float(a[i]) - p.a_off) * p.a_scale + (float(b[i]) - p.b_off) * p.b_scale,
             at + i);
}

const QGemmKernels kTable = {PTERON_QGEMM_STR_(PTERON_CPU_ISA), kMr, kActBytes, kWBytes, kGroup,
                             kPanels, &ukernel, &encode, &minmax, &requant, &dwconv, &add};

}  // namespace

const QGemmKernels* qgemm_kernels() { return &kTable; }

}  // namespace PTERON_QGEMM_CAT_(isa_, PTERON_CPU_ISA)
}  // namespace pteron_cpu
