// SPDX-License-Identifier: BSD-3-Clause
// isa_kernels.cpp - kernels_optimized's hot loops, compiled once per ISA
// level (CMakeLists.txt builds this file three times on x86-64):
//
//   PTERON_OPT_ISA=baseline  the library's baseline (x86-64-v2 on x86-64)
//   PTERON_OPT_ISA=avx2      -mavx2 -mfma
//   PTERON_OPT_ISA=avx512    -mavx512f -mavx512bw -mavx512dq -mavx512vl
//
// The ODR rule this file lives by: every function it defines has internal
// linkage (in pteron_opt::isa_<level>) except the one table getter
// isa_ops_<level>(), whose name differs per level, and every template it
// instantiates belongs to Eigen, which the build renames per level
// (-DEigen=pteron_eigen_<level>). So no two objects
// of the library define the same inline function or template instance, and
// the linker can never keep an AVX-512 copy of something baseline code
// calls. It includes nothing of pteron but isa.h (plain structs).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <Eigen/Core>

#include "isa.h"

#ifndef PTERON_OPT_ISA
#error "PTERON_OPT_ISA must name the ISA level (baseline, avx2 or avx512)"
#endif

#define PTERON_OPT_STR2_(x) #x
#define PTERON_OPT_STR_(x) PTERON_OPT_STR2_(x)
#define PTERON_OPT_CAT2_(a, b) a##b
#define PTERON_OPT_CAT_(a, b) PTERON_OPT_CAT2_(a, b)

namespace pteron_opt {
// Internal functions live in a namespace named after the level too, so a
// disassembly of the library can attribute every function to its ISA object
// (tests/test_optimized.py does).
#define PTERON_OPT_ISA_NAMESPACE PTERON_OPT_CAT_(isa_, PTERON_OPT_ISA)
namespace PTERON_OPT_ISA_NAMESPACE {
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
  else
    return a * b;
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
  else
    binary_typed<Binary::Mul>(a, sa, b, sb, alpha, out, n);
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

const IsaOps kOps = {
    PTERON_OPT_STR_(PTERON_OPT_ISA),
    sgemm,
    binary,
    relu,
    softmax_rows,
    layer_norm_rows,
    depthwise_plane,
};

}  // namespace
}  // namespace PTERON_OPT_ISA_NAMESPACE

const IsaOps* PTERON_OPT_CAT_(isa_ops_, PTERON_OPT_ISA)() {
  return &PTERON_OPT_CAT_(isa_, PTERON_OPT_ISA)::kOps;
}

}  // namespace pteron_opt
