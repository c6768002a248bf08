// SPDX-License-Identifier: BSD-3-Clause
// qgemm_kernels.cpp - the microkernels of qgemm.h, compiled once per ISA level (PTERON_OPT_ISA,
// as isa_kernels.cpp: baseline, avx2, avx512, and avx512vnni with -mavx512vnni), each in
// namespace pteron_opt::isa_<level>. One call computes up to mr rows x 16 columns of C from one
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
#include <cstdint>
#include <cstring>

#include "qgemm.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#ifndef PTERON_OPT_ISA
#error "PTERON_OPT_ISA must name the ISA level (baseline, avx2, avx512 or avx512vnni)"
#endif

#define PTERON_QGEMM_CAT2_(a, b) a##b
#define PTERON_QGEMM_CAT_(a, b) PTERON_QGEMM_CAT2_(a, b)
#define PTERON_QGEMM_STR2_(x) #x
#define PTERON_QGEMM_STR_(x) PTERON_QGEMM_STR2_(x)

namespace pteron_opt {
namespace PTERON_QGEMM_CAT_(isa_, PTERON_OPT_ISA) {
namespace {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

#if defined(PTERON_QGEMM_VNNI)

constexpr int64_t kMr = 12;
constexpr int kActBytes = 1, kWBytes = 1;
constexpr int64_t kGroup = 4;

template <int R>
void body(int64_t nc, int64_t segs, int64_t groups, const void* const* rows, const void* w,
          int32_t* c, int64_t ldc) {
  __m512i acc[R];
  for (int i = 0; i < R; ++i) acc[i] = _mm512_setzero_si512();
  const int8_t* wp = static_cast<const int8_t*>(w);
  for (int64_t s = 0; s < segs; ++s) {
    const uint8_t* a[R];
    for (int i = 0; i < R; ++i) a[i] = static_cast<const uint8_t*>(rows[i * segs + s]);
    for (int64_t g = 0; g < groups; ++g, wp += 64) {
      const __m512i wv = _mm512_loadu_si512(wp);
      for (int i = 0; i < R; ++i)
        acc[i] = _mm512_dpbusd_epi32(acc[i], _mm512_set1_epi32(load_i32(a[i] + 4 * g)), wv);
    }
  }
  const __mmask16 m = nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nc) - 1);
  for (int i = 0; i < R; ++i) _mm512_mask_storeu_epi32(c + i * ldc, m, acc[i]);
}

#elif defined(__AVX512F__)

constexpr int64_t kMr = 12;
constexpr int kActBytes = 2, kWBytes = 2;
constexpr int64_t kGroup = 2;

template <int R>
void body(int64_t nc, int64_t segs, int64_t groups, const void* const* rows, const void* w,
          int32_t* c, int64_t ldc) {
  __m512i acc[R];
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
  const __mmask16 m = nc >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nc) - 1);
  for (int i = 0; i < R; ++i) _mm512_mask_storeu_epi32(c + i * ldc, m, acc[i]);
}

#elif defined(__AVX2__)

constexpr int64_t kMr = 6;
constexpr int kActBytes = 2, kWBytes = 2;
constexpr int64_t kGroup = 2;

template <int R>
void body(int64_t nc, int64_t segs, int64_t groups, const void* const* rows, const void* w,
          int32_t* c, int64_t ldc) {
  __m256i lo[R], hi[R];
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
  for (int i = 0; i < R; ++i) {
    alignas(32) int32_t t[16];
    _mm256_store_si256(reinterpret_cast<__m256i*>(t), lo[i]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(t + 8), hi[i]);
    std::memcpy(c + i * ldc, t, size_t(nc) * sizeof(int32_t));
  }
}

#endif

#if defined(__AVX2__) || defined(__AVX512F__)
template <int R>
void rows_up_to(int64_t mr, int64_t nc, int64_t segs, int64_t groups, const void* const* rows,
                const void* w, int32_t* c, int64_t ldc) {
  if constexpr (R > 1) {
    if (mr < R) return rows_up_to<R - 1>(mr, nc, segs, groups, rows, w, c, ldc);
  }
  body<R>(nc, segs, groups, rows, w, c, ldc);
}

void ukernel(int64_t mr, int64_t nc, int64_t segs, int64_t groups, const void* const* rows,
             const void* w, int32_t* c, int64_t ldc) {
  rows_up_to<int(kMr)>(mr, nc, segs, groups, rows, w, c, ldc);
}
#else

constexpr int64_t kMr = 4;
constexpr int kActBytes = 1, kWBytes = 1;
constexpr int64_t kGroup = 4;

void ukernel(int64_t mr, int64_t nc, int64_t segs, int64_t groups, const void* const* rows,
             const void* w, int32_t* c, int64_t ldc) {
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
  for (int64_t i = 0; i < mr; ++i) std::memcpy(c + i * ldc, acc[i], size_t(nc) * sizeof(int32_t));
}

#endif

const QGemmKernels kTable = {PTERON_QGEMM_STR_(PTERON_OPT_ISA), kMr, kActBytes, kWBytes, kGroup,
                             &ukernel};

}  // namespace

const QGemmKernels* qgemm_kernels() { return &kTable; }

}  // namespace PTERON_QGEMM_CAT_(isa_, PTERON_OPT_ISA)
}  // namespace pteron_opt
