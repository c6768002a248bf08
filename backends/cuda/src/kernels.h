// SPDX-License-Identifier: BSD-3-Clause
// kernels.h - PteronCudaBackend's kernel table: each kernel's parameters and
// its body (per output element, or per phase of a tile), as __host__ __device__ functions that also
// compile as plain C++. The device code (kernels.cu: one __global__ wrapper
// per kernel) and the CPU reference runner
// (backends/cuda/test/cpu_reference.cpp, a test target that is not shipped)
// call the same bodies over the same index space, so the kernels' logic is
// tested where there is no GPU; a GPU run then confirms the launches.
//
// Element-wise kernels run one thread per output element (a grid-stride loop
// over [0, numel)); gemm_f32 is tiled (below).
//
// Parameter structs cross to the device as kernel arguments: fixed-width
// types only (a MinGW `long` is 4 bytes, a Linux device `long` 8), no
// pointers inside. Tensors are float32, row-major and contiguous; shapes have
// at most kMaxRank dimensions. Indices are int64.
//
// The blob names a kernel by string (Node.kernel), with Node.ints / floats:
//   gemm_f32     ints {mode}: 0 mm      out[M,N]    = A[M,K] @ B[K,N]            inputs A, B
//                            1 addmm   out[M,N]    = bias + A[M,K] @ B[K,N]     inputs bias, A, B
//                                      (bias broadcast to [M,N]: [N], [1,N], [M,1], [M,N] or a scalar)
//                            2 bmm     out[S,M,N]  = A[S,M,K] @ B[S,K,N]        inputs A, B
//   binary_f32   ints {op}: 0 add, 1 sub, 2 mul, 3 div; out = a op b with
//                PyTorch broadcasting (shapes aligned at the last dimension)
//   unary_f32    ints {op, gelu_tanh}: 0 relu, 1 sigmoid, 2 tanh, 3 gelu (erf, or the
//                tanh approximation when gelu_tanh is 1), 4 silu, 5 hardswish, 6 exp,
//                7 rsqrt, 8 neg, 9 sqrt, 10 abs, 11 clamp (floats {lo, hi}: hardtanh, clamp),
//                12 pow (floats {exponent}: pow.Tensor_Scalar)
//   strided_f32  ints {offset, stride per output dim...}: out[i0..] = x[offset + sum i_d stride_d]
//                (permute, transpose, slice, select, expand: element strides >= 0, every
//                index inside x)
//   copy_f32     a reshape (view_copy): out = the input's elements in order
//   softmax_f32  ints {dim, log}: softmax (log_softmax when log is 1) along dim
//   layer_norm_f32  inputs x[, weight][, bias]; ints {dims, has_weight, has_bias}, floats {eps}:
//                normalised over the last `dims` dimensions (biased variance)
//   reduce_f32   ints {op, dims...}: op 0 sum, 1 mean over the listed dims (output keeps the
//                others, in order; keepdim only changes the shape)
//   conv2d_f32   inputs x[N,C,H,W], w[OC,C/groups,KH,KW][, b[OC]]; ints {stride_h, stride_w,
//                pad_h, pad_w, dilation_h, dilation_w, groups, has_bias}
//   pool2d_f32   ints {op, kh, kw, sh, sw, ph, pw, dh, dw, count_include_pad, divisor}: op 0 max
//                (padding never wins), 1 avg (divisor 0: the window's size, with or without
//                the padding per count_include_pad)
//   cat_f32      inputs 1..8 tensors; ints {dim}: concatenated along dim
#pragma once

#include <stdint.h>

#include <math.h>  // expf, INFINITY ...: nvcc maps them to the device's functions

#if defined(__CUDACC__)
#define PTERON_HD __host__ __device__ __forceinline__
#else
#define PTERON_HD inline
#endif

namespace pteron {
namespace cuda {
namespace k {

constexpr int32_t kMaxRank = 8;

// ---- gemm_f32 ------------------------------------------------------------------
//
// Tiled: a block of kGemmThreadsX x kGemmThreadsY threads computes a
// kGemmTileM x kGemmTileN tile of one batch's output, each thread a
// kGemmMicro x kGemmMicro micro-tile, stepping through K in slices of
// kGemmTileK that the block first stages into its shared memory (GemmStage).
// Grid: (ceil(n / kGemmTileN), ceil(m / kGemmTileM), batch). Each block runs,
// per K slice, gemm_stage for every thread, a barrier, gemm_accumulate for
// every thread, a barrier; then gemm_store. The CPU reference runs exactly
// these phases thread by thread. Products are summed in K order from 0.

constexpr int32_t kGemmTileM = 64, kGemmTileN = 64, kGemmTileK = 16;
constexpr int32_t kGemmThreadsX = 16, kGemmThreadsY = 16, kGemmMicro = 4;
constexpr int32_t kGemmThreads = kGemmThreadsX * kGemmThreadsY;
static_assert(kGemmThreadsX * kGemmMicro == kGemmTileN && kGemmThreadsY * kGemmMicro == kGemmTileM,
              "the threads' micro-tiles cover the tile");

struct GemmParams {
  int64_t batch, m, n, k;   // bmm: batch S; mm and addmm: 1
  int64_t bias_rs, bias_cs; // addmm: the bias's strides for row and column (0 = broadcast)
  int32_t mode;             // 0 mm, 1 addmm, 2 bmm
  int32_t pad_;
};

// The block's shared memory: one K slice of A (stored K-major) and of B.
struct GemmStage {
  float a[kGemmTileK][kGemmTileM];
  float b[kGemmTileK][kGemmTileN];
};

// Thread `tid` (0 .. kGemmThreads) stages its share of the K slice at k0 for
// the tile at (m0, n0) of batch s; entries past m, n or k are zero.
PTERON_HD void gemm_stage(const GemmParams& p, const float* a, const float* b, int64_t s,
                          int64_t m0, int64_t n0, int64_t k0, int32_t tid, GemmStage& st) {
  for (int32_t e = tid; e < kGemmTileM * kGemmTileK; e += kGemmThreads) {
    const int32_t r = e / kGemmTileK, c = e % kGemmTileK;
    const int64_t gr = m0 + r, gc = k0 + c;
    st.a[c][r] = (gr < p.m && gc < p.k) ? a[(s * p.m + gr) * p.k + gc] : 0.0f;
  }
  for (int32_t e = tid; e < kGemmTileK * kGemmTileN; e += kGemmThreads) {
    const int32_t r = e / kGemmTileN, c = e % kGemmTileN;
    const int64_t gr = k0 + r, gc = n0 + c;
    st.b[r][c] = (gr < p.k && gc < p.n) ? b[(s * p.k + gr) * p.n + gc] : 0.0f;
  }
}

// Thread (tx, ty) adds the staged slice's products to its micro-tile.
PTERON_HD void gemm_accumulate(const GemmStage& st, int32_t tx, int32_t ty,
                               float acc[kGemmMicro][kGemmMicro]) {
  for (int32_t kk = 0; kk < kGemmTileK; ++kk) {
    float av[kGemmMicro], bv[kGemmMicro];
    for (int32_t i = 0; i < kGemmMicro; ++i) av[i] = st.a[kk][ty * kGemmMicro + i];
    for (int32_t j = 0; j < kGemmMicro; ++j) bv[j] = st.b[kk][tx * kGemmMicro + j];
    for (int32_t i = 0; i < kGemmMicro; ++i)
      for (int32_t j = 0; j < kGemmMicro; ++j) acc[i][j] += av[i] * bv[j];
  }
}

// Thread (tx, ty) writes its micro-tile (with addmm's bias), inside m and n.
PTERON_HD void gemm_store(const GemmParams& p, const float* bias, float* out, int64_t s, int64_t m0,
                          int64_t n0, int32_t tx, int32_t ty,
                          const float acc[kGemmMicro][kGemmMicro]) {
  for (int32_t i = 0; i < kGemmMicro; ++i) {
    const int64_t row = m0 + ty * kGemmMicro + i;
    if (row >= p.m) break;
    for (int32_t j = 0; j < kGemmMicro; ++j) {
      const int64_t col = n0 + tx * kGemmMicro + j;
      if (col >= p.n) break;
      float v = acc[i][j];
      if (p.mode == 1) v += bias[row * p.bias_rs + col * p.bias_cs];
      out[(s * p.m + row) * p.n + col] = v;
    }
  }
}

// ---- binary_f32 ------------------------------------------------------------------

struct BinaryParams {
  int64_t numel;
  int64_t out_sizes[kMaxRank];
  int64_t a_strides[kMaxRank];  // 0 along a broadcast dimension
  int64_t b_strides[kMaxRank];
  int32_t rank, op;             // op: 0 add, 1 sub, 2 mul, 3 div
};

PTERON_HD float binary_op(int32_t op, float x, float y) {
  switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    default: return x / y;
  }
}

PTERON_HD void binary_element(const BinaryParams& p, const float* a, const float* b, float* out,
                              int64_t i) {
  int64_t rest = i, ia = 0, ib = 0;
  for (int32_t d = p.rank - 1; d >= 0; --d) {
    const int64_t idx = rest % p.out_sizes[d];
    rest /= p.out_sizes[d];
    ia += idx * p.a_strides[d];
    ib += idx * p.b_strides[d];
  }
  out[i] = binary_op(p.op, a[ia], b[ib]);
}

// ---- unary_f32 -------------------------------------------------------------------

struct UnaryParams {
  int64_t numel;
  int32_t op, gelu_tanh;  // op: 0 relu, 1 sigmoid, 2 tanh, 3 gelu, 4 silu, 5 hardswish, 6 exp,
                          // 7 rsqrt, 8 neg, 9 sqrt, 10 abs, 11 clamp to [lo, hi],
                          // 12 pow(x, lo)
  float lo, hi;
};

PTERON_HD float unary_op(int32_t op, int32_t gelu_tanh, float lo, float hi, float x) {
  switch (op) {
    case 0: return x > 0.0f ? x : (x == x ? 0.0f : x);  // NaN stays NaN, as torch.relu
    case 1: return 1.0f / (1.0f + expf(-x));
    case 2: return tanhf(x);
    case 3:
      if (gelu_tanh) {
        const float c = 0.7978845608028654f;  // sqrt(2 / pi)
        return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
      }
      return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case 4: return x / (1.0f + expf(-x));
    case 5: {
      const float r = x + 3.0f;
      const float c = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
      return x * c / 6.0f;
    }
    case 6: return expf(x);
    case 7: return 1.0f / sqrtf(x);
    case 8: return -x;
    case 9: return sqrtf(x);
    case 10: return fabsf(x);
    case 11: return x != x ? x : (x < lo ? lo : (x > hi ? hi : x));  // NaN stays NaN
    default: return lo == 2.0f ? x * x : powf(x, lo);                  // pow(x, lo)
  }
}

PTERON_HD void unary_element(const UnaryParams& p, const float* x, float* out, int64_t i) {
  out[i] = unary_op(p.op, p.gelu_tanh, p.lo, p.hi, x[i]);
}

// ---- strided_f32 and copy_f32 -----------------------------------------------------

struct StridedParams {
  int64_t numel;
  int64_t offset;                // the input element of output index 0
  int64_t out_sizes[kMaxRank];
  int64_t in_strides[kMaxRank];  // input elements per step of output dim d (0: broadcast)
  int32_t rank, pad_;
};

PTERON_HD void strided_element(const StridedParams& p, const float* x, float* out, int64_t i) {
  int64_t rest = i, src = p.offset;
  for (int32_t d = p.rank - 1; d >= 0; --d) {
    src += (rest % p.out_sizes[d]) * p.in_strides[d];
    rest /= p.out_sizes[d];
  }
  out[i] = x[src];
}

struct CopyParams {
  int64_t numel;
};

PTERON_HD void copy_element(const CopyParams&, const float* x, float* out, int64_t i) { out[i] = x[i]; }

// ---- softmax_f32 (one thread per row: outer x inner rows of `len` elements) -------

struct SoftmaxParams {
  int64_t outer, len, inner;  // the dim's size is len; rows = outer * inner
  int32_t log, pad_;
};

PTERON_HD void softmax_row(const SoftmaxParams& p, const float* x, float* out, int64_t row) {
  const int64_t o = row / p.inner, in = row % p.inner;
  const int64_t base = o * p.len * p.inner + in;
  float m = x[base];
  for (int64_t j = 1; j < p.len; ++j) {
    const float v = x[base + j * p.inner];
    m = v > m || v != v ? v : m;  // a NaN propagates, as torch's softmax
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < p.len; ++j) sum += expf(x[base + j * p.inner] - m);
  if (p.log) {
    const float lse = m + logf(sum);
    for (int64_t j = 0; j < p.len; ++j) out[base + j * p.inner] = x[base + j * p.inner] - lse;
  } else {
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < p.len; ++j) out[base + j * p.inner] = expf(x[base + j * p.inner] - m) * inv;
  }
}

// ---- layer_norm_f32 (one thread per row of `len` elements) ------------------------

struct LayerNormParams {
  int64_t rows, len;
  float eps;
  int32_t has_weight, has_bias, pad_;
};

PTERON_HD void layer_norm_row(const LayerNormParams& p, const float* x, const float* w,
                              const float* b, float* out, int64_t row) {
  const float* r = x + row * p.len;
  float mean = 0.0f;
  for (int64_t j = 0; j < p.len; ++j) mean += r[j];
  mean /= float(p.len);
  float var = 0.0f;
  for (int64_t j = 0; j < p.len; ++j) var += (r[j] - mean) * (r[j] - mean);
  const float rstd = 1.0f / sqrtf(var / float(p.len) + p.eps);
  float* o = out + row * p.len;
  for (int64_t j = 0; j < p.len; ++j) {
    float v = (r[j] - mean) * rstd;
    if (p.has_weight) v *= w[j];
    if (p.has_bias) v += b[j];
    o[j] = v;
  }
}

// ---- reduce_f32 (one thread per output element) -------------------------------------

struct ReduceParams {
  int64_t numel;                  // output elements
  int64_t count;                  // elements reduced into each
  int64_t keep_sizes[kMaxRank];   // the kept dims' sizes, in order
  int64_t keep_strides[kMaxRank]; // their input strides
  int64_t red_sizes[kMaxRank];    // the reduced dims' sizes
  int64_t red_strides[kMaxRank];  // their input strides
  int32_t keep_rank, red_rank, op, pad_;  // op 0 sum, 1 mean
};

PTERON_HD void reduce_element(const ReduceParams& p, const float* x, float* out, int64_t i) {
  int64_t rest = i, base = 0;
  for (int32_t d = p.keep_rank - 1; d >= 0; --d) {
    base += (rest % p.keep_sizes[d]) * p.keep_strides[d];
    rest /= p.keep_sizes[d];
  }
  float acc = 0.0f;
  for (int64_t j = 0; j < p.count; ++j) {
    int64_t r = j, off = base;
    for (int32_t d = p.red_rank - 1; d >= 0; --d) {
      off += (r % p.red_sizes[d]) * p.red_strides[d];
      r /= p.red_sizes[d];
    }
    acc += x[off];
  }
  out[i] = p.op == 1 ? acc / float(p.count) : acc;
}

// ---- conv2d_f32 (one thread per output element) ------------------------------------

struct ConvParams {
  int64_t n, c, h, w, oc, oh, ow, kh, kw;
  int32_t sh, sw, ph, pw, dh, dw, groups, has_bias;
};

PTERON_HD void conv2d_element(const ConvParams& p, const float* x, const float* wt, const float* b,
                              float* out, int64_t i) {
  const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, oc = (i / (p.ow * p.oh)) % p.oc;
  const int64_t n = i / (p.ow * p.oh * p.oc);
  const int64_t cg = p.c / p.groups, ocg = p.oc / p.groups, g = oc / ocg;
  float acc = p.has_bias ? b[oc] : 0.0f;
  for (int64_t ci = 0; ci < cg; ++ci) {
    const float* xc = x + ((n * p.c) + g * cg + ci) * p.h * p.w;
    const float* wc = wt + (oc * cg + ci) * p.kh * p.kw;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + ky * p.dh;
      if (iy < 0 || iy >= p.h) continue;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const int64_t ix = ox * p.sw - p.pw + kx * p.dw;
        if (ix < 0 || ix >= p.w) continue;
        acc += xc[iy * p.w + ix] * wc[ky * p.kw + kx];
      }
    }
  }
  out[i] = acc;
}

// ---- pool2d_f32 (one thread per output element) ------------------------------------

struct PoolParams {
  int64_t n, c, h, w, oh, ow;
  int32_t kh, kw, sh, sw, ph, pw, dh, dw, op, count_include_pad, divisor, pad_;
};

PTERON_HD void pool2d_element(const PoolParams& p, const float* x, float* out, int64_t i) {
  const int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
  const float* xc = x + nc * p.h * p.w;
  float acc = p.op == 0 ? -INFINITY : 0.0f;
  int64_t inside = 0, window = 0;
  for (int32_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = oy * p.sh - p.ph + int64_t(ky) * p.dh;
    for (int32_t kx = 0; kx < p.kw; ++kx) {
      const int64_t ix = ox * p.sw - p.pw + int64_t(kx) * p.dw;
      // avg: the window as PyTorch counts it, clipped to the padded input
      if (iy < p.h + p.ph && ix < p.w + p.pw) ++window;
      if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
      const float v = xc[iy * p.w + ix];
      ++inside;
      if (p.op == 0)
        acc = v > acc || v != v ? v : acc;
      else
        acc += v;
    }
  }
  if (p.op == 1) {
    const int64_t d = p.divisor ? p.divisor : (p.count_include_pad ? window : inside);
    acc = d ? acc / float(d) : 0.0f;
  }
  out[i] = acc;
}

// ---- cat_f32 (one thread per output element) ----------------------------------------

constexpr int32_t kMaxCatInputs = 8;

struct CatParams {
  int64_t numel;
  int64_t out_span;                 // output elements per outer index: sum of the spans
  int64_t span[kMaxCatInputs];      // input k's elements per outer index (its dim size x inner)
  int32_t count, pad_;
};

struct CatInputs {
  const float* x[kMaxCatInputs];
};

PTERON_HD void cat_element(const CatParams& p, const CatInputs& in, float* out, int64_t i) {
  const int64_t outer = i / p.out_span;
  int64_t j = i % p.out_span;
  int32_t k = 0;
  while (k + 1 < p.count && j >= p.span[k]) j -= p.span[k++];
  out[i] = in.x[k][outer * p.span[k] + j];
}

}  // namespace k
}  // namespace cuda
}  // namespace pteron
