// SPDX-License-Identifier: BSD-3-Clause
// isa_kernels.cpp - kernels_optimized's hot loops, compiled once per ISA
// level (CMakeLists.txt builds this file three times on x86-64):
//
//   PTERON_CPU_ISA=baseline  the library's baseline (x86-64-v2 on x86-64)
//   PTERON_CPU_ISA=avx2      -mavx2 -mfma
//   PTERON_CPU_ISA=avx512    -mavx512f -mavx512bw -mavx512dq -mavx512vl
//
// The ODR rule this file lives by: every function it defines has internal
// linkage (in pteron_cpu::isa_<level>) except the one table getter
// isa_ops_<level>(), whose name differs per level, and every template it
// instantiates belongs to Eigen, which the build renames per level
// (-DEigen=pteron_eigen_<level>). So no two objects
// of the library define the same inline function or template instance, and
// the linker can never keep an AVX-512 copy of something baseline code
// calls. It includes nothing of pteron but isa.h (plain structs).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>  // the vectorised erf (GeluErf)

#include "pteron_cpu/isa.h"

#ifndef PTERON_CPU_ISA
#error "PTERON_CPU_ISA must name the ISA level (baseline, avx2 or avx512)"
#endif

#define PTERON_OPT_STR2_(x) #x
#define PTERON_OPT_STR_(x) PTERON_OPT_STR2_(x)
#define PTERON_OPT_CAT2_(a, b) a##b
#define PTERON_OPT_CAT_(a, b) PTERON_OPT_CAT2_(a, b)

namespace pteron_cpu {
// Internal functions live in a namespace named after the level too, so a
// disassembly of the library can attribute every function to its ISA object
// (tests/test_optimized.py does).
#define PTERON_CPU_ISA_NAMESPACE PTERON_OPT_CAT_(isa_, PTERON_CPU_ISA)
namespace PTERON_CPU_ISA_NAMESPACE {
namespace {

using Eigen::Dynamic;
using Eigen::Map;
using Eigen::OuterStride;
using Eigen::Unaligned;
using RowMat = Eigen::Matrix<float, Dynamic, Dynamic, Eigen::RowMajor>;
using ColMat = Eigen::Matrix<float, Dynamic, Dynamic, Eigen::ColMajor>;
using Arr = Eigen::Array<float, Dynamic, 1>;

// ---- GEMM -----------------------------------------------------------------

template <typename AMat, typename BMat>
void gemm_eigen(const Gemm& g) {
  Map<const AMat, Unaligned, OuterStride<>> a(g.a, g.m, g.k, OuterStride<>(g.lda));
  Map<const BMat, Unaligned, OuterStride<>> b(g.b, g.k, g.n, OuterStride<>(g.ldb));
  Map<RowMat, Unaligned, OuterStride<>> c(g.c, g.m, g.n, OuterStride<>(g.ldc));
  c.noalias() += g.alpha * a * b;
}

void fill_c(const Gemm& g) {
  const bool use_bias = g.bias != nullptr && g.beta != 0.0f;
  for (int64_t i = 0; i < g.m; ++i) {
    float* row = g.c + i * g.ldc;
    if (!use_bias) {
      for (int64_t j = 0; j < g.n; ++j) row[j] = 0.0f;
      continue;
    }
    const float* br = g.bias + i * g.bias_rs;
    const float beta = g.beta;
    if (g.bias_cs == 1) {
      if (beta == 1.0f)
        std::memcpy(row, br, static_cast<size_t>(g.n) * sizeof(float));
      else
        for (int64_t j = 0; j < g.n; ++j) row[j] = beta * br[j];
    } else if (g.bias_cs == 0) {
      const float v = beta * br[0];
      for (int64_t j = 0; j < g.n; ++j) row[j] = v;
    } else {
      for (int64_t j = 0; j < g.n; ++j) row[j] = beta * br[j * g.bias_cs];
    }
  }
}

bool sgemm(const Gemm& g) {
  if (g.m <= 0 || g.n <= 0) return true;
  fill_c(g);
  if (g.k <= 0) return true;
  try {
    if (!g.a_trans && !g.b_trans)
      gemm_eigen<RowMat, RowMat>(g);
    else if (!g.a_trans && g.b_trans)
      gemm_eigen<RowMat, ColMat>(g);
    else if (g.a_trans && !g.b_trans)
      gemm_eigen<ColMat, RowMat>(g);
    else
      gemm_eigen<ColMat, ColMat>(g);
  } catch (...) {  // Eigen's packing buffers: std::bad_alloc
    return false;
  }
  return true;
}

// ---- element-wise ---------------------------------------------------------

template <Binary Op>
inline float apply(float a, float b, float alpha) {
  if constexpr (Op == Binary::Add)
    return a + alpha * b;
  else if constexpr (Op == Binary::Mul)
    return a * b;
  else
    return a / b;
}

template <Binary Op>
void binary_typed(const float* a, int64_t sa, const float* b, int64_t sb, float alpha, float* out,
                  int64_t n) {
  if (sa == 1 && sb == 1) {
    if (Op == Binary::Add && alpha == 1.0f) {
      for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = apply<Op>(a[i], b[i], alpha);
    }
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = apply<Op>(a[i], bv, alpha);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = apply<Op>(av, b[i], alpha);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = apply<Op>(a[i * sa], b[i * sb], alpha);
  }
}

void binary(Binary op, const float* a, int64_t sa, const float* b, int64_t sb, float alpha,
            float* out, int64_t n) {
  if (op == Binary::Add)
    binary_typed<Binary::Add>(a, sa, b, sb, alpha, out, n);
  else if (op == Binary::Mul)
    binary_typed<Binary::Mul>(a, sa, b, sb, alpha, out, n);
  else
    binary_typed<Binary::Div>(a, sa, b, sb, alpha, out, n);
}

// ---- element-wise unary -----------------------------------------------------

void unary(Unary op, const float* x, float* out, int64_t n, float p0, float p1) {
  if (n <= 0) return;
  Map<const Arr> a(x, n);
  Map<Arr> y(out, n);
  switch (op) {
    case Unary::Exp: y = a.exp(); break;
    case Unary::Sigmoid: y = ((-a).exp() + 1.0f).inverse(); break;
    case Unary::Tanh: y = a.tanh(); break;
    case Unary::GeluErf: y = 0.5f * a * ((a * 0.70710678118654752440f).erf() + 1.0f); break;
    case Unary::GeluTanh:
      y = 0.5f * a * ((0.79788456080286535588f * (a + 0.044715f * a * a * a)).tanh() + 1.0f);
      break;
    case Unary::Clamp:
      for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        v = p0 > v ? p0 : v;  // NaN x: both comparisons false, NaN stays
        out[i] = v > p1 ? p1 : v;
      }
      break;
    case Unary::Neg:
      for (int64_t i = 0; i < n; ++i) out[i] = -x[i];
      break;
    // Not Eigen's sqrt: under EIGEN_FAST_MATH it is rsqrt-based and gives
    // NaN for +inf. std::sqrt vectorises (sqrtps) with -fno-math-errno.
    case Unary::Sqrt:
      for (int64_t i = 0; i < n; ++i) out[i] = std::sqrt(x[i]);
      break;
    case Unary::Rsqrt:
      for (int64_t i = 0; i < n; ++i) out[i] = 1.0f / std::sqrt(x[i]);
      break;
    case Unary::Square:
      for (int64_t i = 0; i < n; ++i) out[i] = x[i] * x[i];
      break;
    case Unary::Recip:
      for (int64_t i = 0; i < n; ++i) out[i] = 1.0f / x[i];
      break;
    case Unary::Pow:
      for (int64_t i = 0; i < n; ++i) out[i] = std::pow(x[i], p0);
      break;
  }
}

// ---- batch / group norm -------------------------------------------------------

void affine(const float* x, float* y, int64_t n, float scale, float shift) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale + shift;
}

void affine_vec(const float* x, float* y, int64_t n, const float* scale, const float* shift) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale[i] + shift[i];
}

// Two passes (mean, then the mean square deviation), each summed in float
// over blocks of 1024 and the block sums in double.
void moments(const float* x, int64_t n, double* sum, double* sumsq) {
  constexpr int64_t kBlock = 1024;
  double s = 0;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t len = n - i < kBlock ? n - i : kBlock;
    s += static_cast<double>(Map<const Arr>(x + i, len).sum());
  }
  *sum = s;
  if (!sumsq) return;
  const float mu = n > 0 ? static_cast<float>(s / static_cast<double>(n)) : 0.0f;
  double q = 0;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t len = n - i < kBlock ? n - i : kBlock;
    q += static_cast<double>((Map<const Arr>(x + i, len) - mu).square().sum());
  }
  *sumsq = q;  // the sum of squared deviations from the mean
}

// ---- pooling ------------------------------------------------------------------

constexpr int64_t kPoolBlock = 256;

// Max pooling, tap-outer: for each output row, the taps (kh, kw) in order,
// each a loop over a block of output columns (vectorisable), so every
// window sees its taps in ATen's order (h, then w) with ATen's rule: a
// later value wins if greater or NaN; the first valid tap always starts.
void max_pool_plane(const PoolPlane& p) {
  float best[kPoolBlock];
  int32_t bi[kPoolBlock];
  for (int64_t oh = 0; oh < p.Ho; ++oh) {
    for (int64_t ob = 0; ob < p.Wo; ob += kPoolBlock) {
      const int64_t oe = p.Wo - ob < kPoolBlock ? p.Wo : ob + kPoolBlock;
      const int64_t cnt = oe - ob;
      // A window of padding only keeps -inf (ATen's start value).
      for (int64_t j = 0; j < cnt; ++j) bi[j] = -1, best[j] = -std::numeric_limits<float>::infinity();
      for (int64_t kh = 0; kh < p.kh; ++kh) {
        const int64_t h = oh * p.sh - p.ph + kh * p.dh;
        if (h < 0 || h >= p.H) continue;
        const float* row = p.in + h * p.is_h;
        for (int64_t kw = 0; kw < p.kw; ++kw) {
          const int64_t shift = kw * p.dw - p.pw;
          int64_t lo, hi;
          valid_range(oe, p.W, p.sw, shift, &lo, &hi);
          if (lo < ob) lo = ob;
          const int32_t base = static_cast<int32_t>(h * p.W + shift);
          const int32_t sw = static_cast<int32_t>(p.sw);
          if (p.is_w == 1) {
            for (int64_t o = lo; o < hi; ++o) {
              const float v = row[o * p.sw + shift];
              const int64_t j = o - ob;
              const bool take = bi[j] < 0 || v > best[j] || v != v;
              best[j] = take ? v : best[j];
              bi[j] = take ? base + static_cast<int32_t>(o) * sw : bi[j];
            }
          } else {
            for (int64_t o = lo; o < hi; ++o) {
              const float v = row[(o * p.sw + shift) * p.is_w];
              const int64_t j = o - ob;
              const bool take = bi[j] < 0 || v > best[j] || v != v;
              best[j] = take ? v : best[j];
              bi[j] = take ? base + static_cast<int32_t>(o) * sw : bi[j];
            }
          }
        }
      }
      float* orow = p.out + oh * p.os_h;
      int64_t* irow = p.idx + oh * p.xs_h;
      for (int64_t j = 0; j < cnt; ++j) {
        int64_t index = bi[j];
        if (index < 0) {  // padding only: ATen's index, the window's first in-range tap
          int64_t h0 = oh * p.sh - p.ph, w0 = (ob + j) * p.sw - p.pw;
          while (h0 < 0) h0 += p.dh;
          while (w0 < 0) w0 += p.dw;
          index = h0 * p.W + w0;
        }
        orow[(ob + j) * p.os_w] = best[j];
        irow[(ob + j) * p.xs_w] = index;
      }
    }
  }
}

// ---- bilinear -------------------------------------------------------------------

// Vertical blend of the two source rows into tmp (W values), then the
// horizontal two-tap gather from tmp.
void bilinear_plane(const BilinearPlane& p) {
  for (int64_t oh = 0; oh < p.Ho; ++oh) {
    const float* r0 = p.in + p.y0[oh] * p.is_h;
    const float* r1 = p.in + p.y1[oh] * p.is_h;
    const float l1 = p.ly[oh], l0 = 1.0f - l1;
    float* t = p.tmp;
    if (p.is_w == 1) {
      for (int64_t x = 0; x < p.W; ++x) t[x] = l0 * r0[x] + l1 * r1[x];
    } else {
      for (int64_t x = 0; x < p.W; ++x) t[x] = l0 * r0[x * p.is_w] + l1 * r1[x * p.is_w];
    }
    float* orow = p.out + oh * p.os_h;
    if (p.os_w == 1) {
      for (int64_t ow = 0; ow < p.Wo; ++ow)
        orow[ow] = p.wx0[ow] * t[p.x0[ow]] + p.wx1[ow] * t[p.x1[ow]];
    } else {
      for (int64_t ow = 0; ow < p.Wo; ++ow)
        orow[ow * p.os_w] = p.wx0[ow] * t[p.x0[ow]] + p.wx1[ow] * t[p.x1[ow]];
    }
  }
}

void relu(const float* x, float* out, int64_t n) {
  // x < 0 is false for NaN, so NaN passes through (PyTorch's relu).
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] < 0.0f ? 0.0f : x[i];
}

// ---- softmax / layer norm -------------------------------------------------

void softmax_rows(const float* x, float* y, int64_t rows, int64_t len, bool log) {
  if (len <= 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    Map<const Arr> xr(x + r * len, len);
    Map<Arr> yr(y + r * len, len);
    // NaN anywhere makes the row NaN, as in PyTorch.
    const float mx = xr.template maxCoeff<Eigen::PropagateNaN>();
    // (y may alias x: each path reads a row completely before writing it.)
    if (log) {
      const float ls = std::log((xr - mx).exp().sum());
      yr = (xr - mx) - ls;
    } else {
      yr = (xr - mx).exp();
      yr *= 1.0f / yr.sum();
    }
  }
}

void layer_norm_rows(const float* x, float* y, int64_t rows, int64_t len, const float* w,
                     const float* b, float eps, float* mean, float* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    if (len <= 0) {
      mean[r] = 0.0f;
      rstd[r] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    Map<const Arr> xr(x + r * len, len);
    Map<Arr> yr(y + r * len, len);
    const float mu = xr.sum() / static_cast<float>(len);
    const float var = (xr - mu).square().sum() / static_cast<float>(len);
    const float rs = 1.0f / std::sqrt(var + eps);
    yr = (xr - mu) * rs;
    if (w) yr *= Map<const Arr>(w, len);
    if (b) yr += Map<const Arr>(b, len);
    mean[r] = mu;
    rstd[r] = rs;
  }
}

// ---- depthwise convolution ------------------------------------------------

void depthwise_plane(const DwPlane& p) {
  for (int64_t oh = 0; oh < p.oh; ++oh) {
    float* orow = p.out + oh * p.os_h;
    if (p.os_w == 1) {
      for (int64_t ow = 0; ow < p.ow; ++ow) orow[ow] = p.bias;
    } else {
      for (int64_t ow = 0; ow < p.ow; ++ow) orow[ow * p.os_w] = p.bias;
    }
    for (int64_t kh = 0; kh < p.kh; ++kh) {
      const int64_t ih = oh * p.sh - p.ph + kh * p.dh;
      if (ih < 0 || ih >= p.ih) continue;
      const float* irow = p.in + ih * p.is_h;
      for (int64_t kw = 0; kw < p.kw; ++kw) {
        const float wv = p.w[kh * p.ws_h + kw * p.ws_w];
        const int64_t shift = kw * p.dw - p.pw;
        int64_t lo, hi;
        valid_range(p.ow, p.iw, p.sw, shift, &lo, &hi);
        if (p.os_w == 1 && p.is_w == 1 && p.sw == 1) {
          const float* src = irow + shift;
          for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * src[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow)
            orow[ow * p.os_w] += wv * irow[(ow * p.sw + shift) * p.is_w];
        }
      }
    }
  }
}

// ---- attention --------------------------------------------------------------

void attention_tile(const AttnTile& t) {
  const int64_t rows = t.rows, d = t.d, kb_max = kAttnKeyBlock;
  if (rows <= 0 || d <= 0) return;
  float* s = t.scratch;            // rows x kAttnKeyBlock scores
  float* acc = s + rows * kb_max;  // rows x d: the unnormalised output
  float* mx = acc + rows * d;      // rows: the running maximum
  float* sum = mx + rows;          // rows: the running sum of exponentials
  const float ninf = -std::numeric_limits<float>::infinity();
  int64_t last = 0;  // keys past the last one any row sees are never read
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t vis = t.visible ? std::min(t.visible[r], t.keys) : t.keys;
    last = std::max(last, vis);
    mx[r] = ninf;
    sum[r] = 0.0f;
  }
  Map<const RowMat, Unaligned, OuterStride<>> q(t.q, rows, d, OuterStride<>(t.ldq));
  Map<RowMat, Unaligned, OuterStride<>> a(acc, rows, d, OuterStride<>(d));
  a.setZero();
  for (int64_t n0 = 0; n0 < last; n0 += kb_max) {
    const int64_t kb = std::min(kb_max, last - n0);
    Map<const RowMat, Unaligned, OuterStride<>> k(t.k + n0 * t.ldk, kb, d, OuterStride<>(t.ldk));
    Map<const RowMat, Unaligned, OuterStride<>> v(t.v + n0 * t.ldv, kb, d, OuterStride<>(t.ldv));
    Map<RowMat, Unaligned, OuterStride<>> sc(s, rows, kb, OuterStride<>(kb_max));
    sc.noalias() = q * k.transpose();
    for (int64_t r = 0; r < rows; ++r) {
      float* row = s + r * kb_max;
      const int64_t vis = t.visible ? std::min(t.visible[r], t.keys) : t.keys;
      const int64_t live = std::max<int64_t>(0, std::min(kb, vis - n0));
      Map<Arr> sr(row, live);
      sr *= t.scale;
      if (t.mask) sr += Map<const Arr>(t.mask + r * t.ldm + n0, live);
      for (int64_t j = live; j < kb; ++j) row[j] = ninf;
      float m = mx[r];
      if (live > 0) {
        const float bm = sr.template maxCoeff<Eigen::PropagateNaN>();
        m = bm != bm ? bm : std::max(m, bm);  // NaN anywhere makes the row NaN
      }
      const float c = std::exp(mx[r] - m);  // exp(-inf) = 0 on the first block
      Map<Arr> all(row, kb);
      all = (all - m).exp();
      sum[r] = sum[r] * c + all.sum();
      if (n0 > 0) a.row(r) *= c;
      mx[r] = m;
    }
    a.noalias() += sc * v;
  }
  for (int64_t r = 0; r < rows; ++r) {
    Map<Arr> o(t.out + r * t.ldo, d);
    if (last == 0) {  // no key at all: softmax over nothing
      o.setConstant(std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    o = a.row(r).transpose().array() * (1.0f / sum[r]);
  }
}

const IsaOps kOps = {
    PTERON_OPT_STR_(PTERON_CPU_ISA),
    sgemm,
    binary,
    relu,
    softmax_rows,
    layer_norm_rows,
    depthwise_plane,
    unary,
    affine,
    affine_vec,
    moments,
    max_pool_plane,
    bilinear_plane,
    attention_tile,
};

}  // namespace
}  // namespace PTERON_CPU_ISA_NAMESPACE

const IsaOps* PTERON_OPT_CAT_(isa_ops_, PTERON_CPU_ISA)() {
  return &PTERON_OPT_CAT_(isa_, PTERON_CPU_ISA)::kOps;
}

}  // namespace pteron_cpu
