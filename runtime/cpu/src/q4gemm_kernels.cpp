// SPDX-License-Identifier: BSD-3-Clause
// q4gemm_kernels.cpp - q4gemm.h's microkernels, compiled once per ISA level (CMakeLists.txt:
// the baseline, avx2 and avx512 objects, and the avx512vnni one), each in its own namespace
// with internal linkage but for its table getter (isa_kernels.cpp's ODR rule).
//
// Per panel of 16 output channels and per group: the int32 dot products of the rows' int8
// activations with the 4-bit codes u (low and high nibbles of each 64-byte block, see
// Q4Weights), and the codes' own sum over the group (the same instructions against ones), give
//   D = dot - xcorr[row, group] - xzp[row] * sum(u)
// (q4gemm.h's D: the weight is u - 8); then acc += float(D) * wscale, and at the end
// y = clamp(acc * xscale + bias, lo, hi).
#include <cstdint>
#include <cstring>

#include "pteron_cpu/q4gemm.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#ifndef PTERON_CPU_ISA
#error "PTERON_CPU_ISA must name the ISA level"
#endif
#define PTERON_Q4_CAT2_(a, b) a##b
#define PTERON_Q4_CAT_(a, b) PTERON_Q4_CAT2_(a, b)
#define PTERON_Q4_STR2_(x) #x
#define PTERON_Q4_STR_(x) PTERON_Q4_STR2_(x)

namespace pteron_cpu {
namespace PTERON_Q4_CAT_(isa_, PTERON_CPU_ISA) {
namespace {

inline float clampf(float v, float lo, float hi) {  // NaN passes through
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

inline int32_t load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// y[row, j0 .. j0 + nc) from 16 accumulated columns acc (before the row's scale).
inline void store_row(const Q4Args& a, int64_t row, int64_t j0, int64_t nc, const float* acc) {
  float* y = a.y + row * a.ldy + j0;
  const float s = a.xscale[row];
  for (int64_t c = 0; c < nc; ++c)
    y[c] = clampf(acc[c] * s + (a.bias ? a.bias[j0 + c] : 0.0f), a.lo, a.hi);
}

#if defined(PTERON_QGEMM_VNNI)  // the avx512vnni object (MSVC: its /arch:AVX512 build)

constexpr int64_t kMr = 4;
const char* const kName = "avx512vnni";

// 16 scales of a group: float32, or bfloat16 widened (exact)
template <bool BF16>
inline __m512 scales16(const Q4Weights& w, int64_t p, int64_t g) {
  if (BF16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.scales16(p) + g * kQ4Nr));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  return _mm512_loadu_ps(w.scales(p) + g * kQ4Nr);
}

template <int MR, bool BF16>
void panel_rows(const Q4Args& a, int64_t i0, int64_t p) {
  const Q4Weights& w = *a.w;
  const int64_t G = w.groups(), gs = w.group_size(), blocks = gs / 8;
  const __m512i mask = _mm512_set1_epi8(0x0F), ones = _mm512_set1_epi8(1);
  const uint8_t* wp = w.panel(p);
  const int8_t* xr[MR];
  __m512 accf[MR];
  for (int r = 0; r < MR; ++r) {
    xr[r] = a.x + (i0 + r) * a.ldx;
    accf[r] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < G; ++g) {
    __m512i acc[MR], wsum = _mm512_setzero_si512();
    for (int r = 0; r < MR; ++r) acc[r] = _mm512_setzero_si512();
    for (int64_t b = 0; b < blocks; ++b, wp += 64) {
      const __m512i v = _mm512_loadu_si512(wp);
      const __m512i lo = _mm512_and_si512(v, mask);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
      wsum = _mm512_dpbusd_epi32(wsum, lo, ones);
      wsum = _mm512_dpbusd_epi32(wsum, hi, ones);
      const int64_t at = g * gs + 8 * b;
      for (int r = 0; r < MR; ++r) {
        acc[r] = _mm512_dpbusd_epi32(acc[r], lo, _mm512_set1_epi32(load4(xr[r] + at)));
        acc[r] = _mm512_dpbusd_epi32(acc[r], hi, _mm512_set1_epi32(load4(xr[r] + at + 4)));
      }
    }
    const __m512 sc = scales16<BF16>(w, p, g);
    for (int r = 0; r < MR; ++r) {
      __m512i t = _mm512_sub_epi32(acc[r], _mm512_set1_epi32(a.xcorr[(i0 + r) * G + g]));
      t = _mm512_sub_epi32(t, _mm512_mullo_epi32(wsum, _mm512_set1_epi32(a.xzp[i0 + r])));
      accf[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), sc, accf[r]);
    }
  }
  const int64_t j0 = p * kQ4Nr, nc = w.n() - j0 < kQ4Nr ? w.n() - j0 : kQ4Nr;
  alignas(64) float tmp[kQ4Nr];
  for (int r = 0; r < MR; ++r) {
    _mm512_store_ps(tmp, accf[r]);
    store_row(a, i0 + r, j0, nc, tmp);
  }
}

#elif defined(__AVX2__)

constexpr int64_t kMr = 2;
const char* const kName = PTERON_Q4_STR_(PTERON_CPU_ISA);

// One half panel (8 columns: bytes 32h .. 32h + 31 of each block).
// 8 scales of a group (half h of the panel): float32, or bfloat16 widened (exact)
template <bool BF16>
inline __m256 scales8(const Q4Weights& w, int64_t p, int64_t g, int h) {
  if (BF16) {
    const __m128i b =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales16(p) + g * kQ4Nr + 8 * h));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
  }
  return _mm256_loadu_ps(w.scales(p) + g * kQ4Nr + 8 * h);
}

template <int MR, bool BF16>
void half_rows(const Q4Args& a, int64_t i0, int64_t p, int h, float (*out)[kQ4Nr]) {
  const Q4Weights& w = *a.w;
  const int64_t G = w.groups(), gs = w.group_size(), blocks = gs / 8;
  const __m256i mask = _mm256_set1_epi8(0x0F), ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const uint8_t* wp = w.panel(p) + 32 * h;
  const int8_t* xr[MR];
  __m256 accf[MR];
  for (int r = 0; r < MR; ++r) {
    xr[r] = a.x + (i0 + r) * a.ldx;
    accf[r] = _mm256_setzero_ps();
  }
  for (int64_t g = 0; g < G; ++g) {
    __m256i acc[MR], wsum = _mm256_setzero_si256();
    for (int r = 0; r < MR; ++r) acc[r] = _mm256_setzero_si256();
    for (int64_t b = 0; b < blocks; ++b, wp += 64) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp));
      const __m256i lo = _mm256_and_si256(v, mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
      wsum = _mm256_add_epi32(
          wsum, _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(lo, ones8),
                                                   _mm256_maddubs_epi16(hi, ones8)),
                                  ones16));
      const int64_t at = g * gs + 8 * b;
      for (int r = 0; r < MR; ++r) {
        // u <= 15 and |x| <= 128: each pair sum is at most 3840, the two at most 7680 (no
        // int16 saturation)
        const __m256i s = _mm256_add_epi16(
            _mm256_maddubs_epi16(lo, _mm256_set1_epi32(load4(xr[r] + at))),
            _mm256_maddubs_epi16(hi, _mm256_set1_epi32(load4(xr[r] + at + 4))));
        acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(s, ones16));
      }
    }
    const __m256 sc = scales8<BF16>(w, p, g, h);
    for (int r = 0; r < MR; ++r) {
      __m256i t = _mm256_sub_epi32(acc[r], _mm256_set1_epi32(a.xcorr[(i0 + r) * G + g]));
      t = _mm256_sub_epi32(t, _mm256_mullo_epi32(wsum, _mm256_set1_epi32(a.xzp[i0 + r])));
      accf[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), sc, accf[r]);
    }
  }
  for (int r = 0; r < MR; ++r) _mm256_storeu_ps(out[r] + 8 * h, accf[r]);
}

template <int MR, bool BF16>
void panel_rows(const Q4Args& a, int64_t i0, int64_t p) {
  alignas(32) float tmp[MR][kQ4Nr];
  half_rows<MR, BF16>(a, i0, p, 0, tmp);
  half_rows<MR, BF16>(a, i0, p, 1, tmp);
  const int64_t j0 = p * kQ4Nr, nc = a.w->n() - j0 < kQ4Nr ? a.w->n() - j0 : kQ4Nr;
  for (int r = 0; r < MR; ++r) store_row(a, i0 + r, j0, nc, tmp[r]);
}

#else

constexpr int64_t kMr = 1;
const char* const kName = PTERON_Q4_STR_(PTERON_CPU_ISA);

template <int MR, bool BF16>
void panel_rows(const Q4Args& a, int64_t i0, int64_t p) {
  const Q4Weights& w = *a.w;
  const int64_t G = w.groups(), gs = w.group_size(), blocks = gs / 8;
  for (int r = 0; r < MR; ++r) {
    const int8_t* x = a.x + (i0 + r) * a.ldx;
    float acc[kQ4Nr] = {};
    const uint8_t* wp = w.panel(p);
    for (int64_t g = 0; g < G; ++g) {
      int32_t dot[kQ4Nr] = {}, usum[kQ4Nr] = {};
      for (int64_t b = 0; b < blocks; ++b, wp += 64) {
        const int8_t* xb = x + g * gs + 8 * b;
        for (int c = 0; c < kQ4Nr; ++c)
          for (int t = 0; t < 4; ++t) {
            const int32_t lo = wp[4 * c + t] & 15, hi = wp[4 * c + t] >> 4;
            dot[c] += lo * xb[t] + hi * xb[4 + t];
            usum[c] += lo + hi;
          }
      }
      for (int c = 0; c < kQ4Nr; ++c) {
        const int32_t d = dot[c] - a.xcorr[(i0 + r) * G + g] - a.xzp[i0 + r] * usum[c];
        float sc;
        if (BF16) {
          const uint32_t u = uint32_t(w.scales16(p)[g * kQ4Nr + c]) << 16;
          std::memcpy(&sc, &u, 4);
        } else {
          sc = w.scales(p)[g * kQ4Nr + c];
        }
        acc[c] += float(d) * sc;
      }
    }
    const int64_t j0 = p * kQ4Nr, nc = w.n() - j0 < kQ4Nr ? w.n() - j0 : kQ4Nr;
    store_row(a, i0 + r, j0, nc, acc);
  }
}

#endif

template <bool BF16>
void rows_panels(const Q4Args& a, int64_t i0, int64_t mr, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    int64_t i = i0;
    const int64_t end = i0 + mr;
    for (; i + kMr <= end; i += kMr) panel_rows<int(kMr), BF16>(a, i, p);
    for (; i < end; ++i) panel_rows<1, BF16>(a, i, p);
  }
}

void ukernel(const Q4Args& a, int64_t i0, int64_t mr, int64_t p0, int64_t p1) {
  if (a.w->scales_bf16())
    rows_panels<true>(a, i0, mr, p0, p1);
  else
    rows_panels<false>(a, i0, mr, p0, p1);
}

const Q4Kernels kTable = {kName, kMr, ukernel};

}  // namespace

const Q4Kernels* q4gemm_kernels() { return &kTable; }

}  // namespace PTERON_Q4_CAT_(isa_, PTERON_CPU_ISA)
}  // namespace pteron_cpu
