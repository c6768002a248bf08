// SPDX-License-Identifier: BSD-3-Clause
// nhwc_kernels.cpp - the hot loops of nhwc.h, compiled once per ISA level
// (PTERON_OPT_ISA, as isa_kernels.cpp, whose ODR rule this file follows:
// everything has internal linkage inside pteron_opt::isa_<level> except the
// table getter nhwc_ops_<level>(); the only templates it instantiates are
// its own (internal) and Eigen's, which the build renames per level).
//
// The depthwise rows use explicit vectors of the level (SSE 4 lanes,
// AVX2+FMA 8, AVX-512 16; one lane elsewhere), channels in the lanes: for
// each block of channels the kh * kw weight vectors stay in registers while
// the row's output pixels are computed, the interior columns without any
// test and the border columns with one per tap. The other loops are written
// over the channels (or elements), contiguous, so the compiler vectorises
// them at the level's width.
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

#include "nhwc.h"

#ifndef PTERON_OPT_ISA
#error "PTERON_OPT_ISA must name the ISA level (baseline, avx2 or avx512)"
#endif

#define PTERON_NHWC_STR2_(x) #x
#define PTERON_NHWC_STR_(x) PTERON_NHWC_STR2_(x)
#define PTERON_NHWC_CAT2_(a, b) a##b
#define PTERON_NHWC_CAT_(a, b) PTERON_NHWC_CAT2_(a, b)

namespace pteron_opt {
namespace PTERON_NHWC_CAT_(isa_, PTERON_OPT_ISA) {
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
#elif defined(__AVX2__) && defined(__FMA__)
  constexpr int64_t L = 8;
  using V = __m256;
  inline V vload(const float* p) { return _mm256_loadu_ps(p); }
  inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
  inline V vfma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
  alignas(32) const int32_t kLaneMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                             0,  0,  0,  0,  0,  0,  0,  0};
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

  // One output pixel, every channel, with a test per tap (borders, generic windows).
  void dw_pixel(const DwRow& r, int64_t ox) {
    const int64_t c = r.c;
    const V lo = vset(r.lo), hi = vset(r.hi);
    float* o = r.out + ox * c;
    for (int64_t c0 = 0; c0 < c; c0 += L) {
      const int64_t n = imin(L, c - c0);
      const bool full = n == L;
      V acc = full ? vload(r.bias + c0) : vloadp(r.bias + c0, n);
      for (int64_t ky = 0; ky < r.kh; ++ky) {
        const float* row = r.rows[ky];
        for (int64_t kx = 0; kx < r.kw; ++kx) {
          const int64_t ix = ox * r.sw - r.pl + kx * r.dw;
          if (ix < 0 || ix >= r.iw) continue;
          const float* wp = r.w + (ky * r.kw + kx) * c + c0;
          const float* ip = row + ix * c + c0;
          acc = full ? vfma(vload(wp), vload(ip), acc) : vfma(vloadp(wp, n), vloadp(ip, n), acc);
        }
      }
      if (r.clamp) acc = vclamp(acc, lo, hi);
      if (full)
        vstore(o + c0, acc);
      else
        vstorep(o + c0, acc, n);
    }
  }

  // Interior columns of a K x K window at stride S (dilation 1), one channel block: the K * K
  // weight vectors are loaded once, two accumulators per pixel.
  template <int K, int S, bool Full>
  inline void dw_block_fixed(const DwRow& r, int64_t c0, int64_t n, int64_t lo, int64_t hi) {
    const int64_t c = r.c;
    V w[K * K];
    for (int t = 0; t < K * K; ++t)
      w[t] = Full ? vload(r.w + t * c + c0) : vloadp(r.w + t * c + c0, n);
    const V b = Full ? vload(r.bias + c0) : vloadp(r.bias + c0, n);
    const V vlo = vset(r.lo), vhi = vset(r.hi);
    const float* rp[K];
    for (int ky = 0; ky < K; ++ky) rp[ky] = r.rows[ky] + c0;
    float* o = r.out + c0;
    for (int64_t ox = lo; ox < hi; ++ox) {
      const int64_t ix = (ox * S - r.pl) * c;
      V acc0 = b;
      V acc1 = vset(0.0f);
      for (int ky = 0; ky < K; ++ky) {
        const float* ip = rp[ky] + ix;
        for (int kx = 0; kx < K; ++kx) {
          const V x = Full ? vload(ip + kx * c) : vloadp(ip + kx * c, n);
          if ((ky * K + kx) & 1)
            acc1 = vfma(w[ky * K + kx], x, acc1);
          else
            acc0 = vfma(w[ky * K + kx], x, acc0);
        }
      }
      V acc = vadd(acc0, acc1);
      if (r.clamp) acc = vclamp(acc, vlo, vhi);
      if (Full)
        vstore(o + ox * c, acc);
      else
        vstorep(o + ox * c, acc, n);
    }
  }

  template <int K, int S>
  void dw_row_fixed(const DwRow& r) {
    int64_t lo, hi;
    interior(r, &lo, &hi);
    for (int64_t ox = 0; ox < lo; ++ox) dw_pixel(r, ox);
    const int64_t c = r.c;
    int64_t c0 = 0;
    for (; c0 + L <= c; c0 += L) dw_block_fixed<K, S, true>(r, c0, L, lo, hi);
    if (c0 < c) dw_block_fixed<K, S, false>(r, c0, c - c0, lo, hi);
    for (int64_t ox = hi; ox < r.ow; ++ox) dw_pixel(r, ox);
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

  void dw_row(const DwRow& r) {
    if (r.kh == r.kw && r.dw == 1) {
      if (r.kh == 3 && r.sw == 1) return dw_row_fixed<3, 1>(r);
      if (r.kh == 3 && r.sw == 2) return dw_row_fixed<3, 2>(r);
      if (r.kh == 5 && r.sw == 1) return dw_row_fixed<5, 1>(r);
      if (r.kh == 5 && r.sw == 2) return dw_row_fixed<5, 2>(r);
    }
    dw_row_generic(r);
  }

  // ---- pooling ----------------------------------------------------------------------------------

  void max_pool_row(const PoolRow& r) {
    const int64_t c = r.c;
    const float ninf = -std::numeric_limits<float>::infinity();
    for (int64_t ox = 0; ox < r.ow; ++ox) {
      float* __restrict o = r.out + ox * c;
      for (int64_t j = 0; j < c; ++j) o[j] = ninf;
      for (int64_t ky = 0; ky < r.kh; ++ky) {
        if (!r.rows[ky]) continue;
        for (int64_t kx = 0; kx < r.kw; ++kx) {
          const int64_t ix = ox * r.sw - r.pl + kx * r.dw;
          if (ix < 0 || ix >= r.iw) continue;
          const float* __restrict s = r.rows[ky] + ix * c;
          for (int64_t j = 0; j < c; ++j) {
            const float a = o[j], v = s[j];
            o[j] = (v > a || v != v) ? v : a;  // NaN propagates (PyTorch's)
          }
        }
      }
      if (r.clamp)
        for (int64_t j = 0; j < c; ++j) o[j] = clampf(o[j], r.lo, r.hi);
    }
  }

  void avg_pool_row(const PoolRow& r) {
    const int64_t c = r.c;
    int64_t rows = 0;
    for (int64_t ky = 0; ky < r.kh; ++ky) rows += r.rows[ky] != nullptr;
    for (int64_t ox = 0; ox < r.ow; ++ox) {
      float* __restrict o = r.out + ox * c;
      for (int64_t j = 0; j < c; ++j) o[j] = 0.0f;
      int64_t cols = 0;
      for (int64_t kx = 0; kx < r.kw; ++kx) {
        const int64_t ix = ox * r.sw - r.pl + kx * r.dw;
        cols += ix >= 0 && ix < r.iw;
      }
      for (int64_t ky = 0; ky < r.kh; ++ky) {
        if (!r.rows[ky]) continue;
        for (int64_t kx = 0; kx < r.kw; ++kx) {
          const int64_t ix = ox * r.sw - r.pl + kx * r.dw;
          if (ix < 0 || ix >= r.iw) continue;
          const float* __restrict s = r.rows[ky] + ix * c;
          for (int64_t j = 0; j < c; ++j) o[j] += s[j];
        }
      }
      const int64_t count = rows * cols;
      const float scale = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
      for (int64_t j = 0; j < c; ++j) o[j] *= scale;
      if (r.clamp)
        for (int64_t j = 0; j < c; ++j) o[j] = clampf(o[j], r.lo, r.hi);
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

  void binary(NBinary op, NMode mode, const float* a, const float* b, float* out, int64_t n,
              float lo, float hi, bool clamp) {
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
        case NUnary::Sigmoid: y = ((-a).exp() + 1.0f).inverse(); break;
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
      case NUnary::Sigmoid:
      case NUnary::Tanh:
      case NUnary::Gelu: unary_eigen(op, x, out, n); break;
      case NUnary::Hardswish:
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[i];
          float t = v + 3.0f;
          t = t < 0.0f ? 0.0f : t;
          t = t > 6.0f ? 6.0f : t;
          out[i] = v * t / 6.0f;
        }
        break;
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

  const NhwcOps kNhwcOps = {
      PTERON_NHWC_STR_(PTERON_OPT_ISA),
      dw_row,
      max_pool_row,
      avg_pool_row,
      sum_pixels,
      bilinear_row,
      binary,
      prelu,
      unary,
      clamp,
  };

  }  // namespace
}  // namespace )

const NhwcOps* PTERON_NHWC_CAT_(nhwc_ops_, PTERON_OPT_ISA)() {
  return &PTERON_NHWC_CAT_(isa_, PTERON_OPT_ISA)::kNhwcOps;
}

}  // namespace pteron_opt
