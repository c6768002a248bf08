// SPDX-License-Identifier: BSD-3-Clause
// isa.h - the boundary between kernels_optimized's operator code (compiled
// once, at the library's baseline ISA) and its hot loops (isa_kernels.cpp,
// compiled once per ISA level: baseline, AVX2+FMA, AVX-512).
//
// Only plain structs and function pointers cross it, so the operator code
// never instantiates an inline function or template that an ISA object also
// instantiates: nothing compiled with wide instructions can be picked by the
// linker for baseline code (see CMakeLists.txt and tests/test_optimized.py,
// which checks the built library for exactly that).
//
// Every function here works on float32, never fails except where it returns
// bool (an allocation failure inside Eigen), never throws, and is
// single-threaded: the caller splits the work with pteron_parallel_for.
#pragma once

#include <cstdint>

namespace pteron_cpu {

// C = alpha * A * B + (C pre-filled with beta * bias, or with zeros).
//  A is m x k, B is k x n, C is m x n with unit column stride.
//  An operand with trans == false is row-major: element (i, j) at
//  p[i * ld + j]; with trans == true it is column-major: (i, j) at
//  p[j * ld + i].
//  bias (nullable): element (i, j) at bias[i * bias_rs + j * bias_cs]
//  (a stride of 0 broadcasts). beta == 0 ignores bias entirely, so NaN in
//  an ignored bias does not propagate (PyTorch's rule).
struct Gemm {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  bool a_trans = false;
  const float* b = nullptr;
  int64_t ldb = 0;
  bool b_trans = false;
  float* c = nullptr;
  int64_t ldc = 0;
  float alpha = 1.0f;
  const float* bias = nullptr;
  int64_t bias_rs = 0, bias_cs = 0;
  float beta = 0.0f;
};

// Element-wise binary operators (Div: true division, IEEE results for 0 and NaN).
enum class Binary : int32_t { Add, Mul, Div };

// Element-wise unary float32 functions (IsaOps::unary). Accuracy: Exp,
// Sigmoid, Tanh and GeluErf use Eigen's vectorised exp / tanh / erf (a few
// ulp from the libm result, bench/kernels/README.md has the measured error);
// the others are exact up to float32 rounding. NaN in gives NaN out.
//   Exp       e^x
//   Sigmoid   1 / (1 + e^-x)
//   Tanh      tanh(x)
//   GeluErf   x / 2 * (1 + erf(x / sqrt(2)))
//   GeluTanh  x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
//   Clamp     min(max(x, p0), p1); NaN x stays NaN (NaN bounds: the caller's job)
//   Neg       -x
//   Sqrt      sqrt(x)
//   Rsqrt     1 / sqrt(x)
//   Square    x * x                (pow(x, 2): the same correctly rounded value)
//   Recip     1 / x                (pow(x, -1))
//   Pow       pow(x, p0), libm's powf element by element
enum class Unary : int32_t {
  Exp,
  Sigmoid,
  Tanh,
  GeluErf,
  GeluTanh,
  Clamp,
  Neg,
  Sqrt,
  Rsqrt,
  Square,
  Recip,
  Pow
};

// One 2-D max-pooling plane. Input element (h, w) at in[h * is_h + w * is_w],
// output (oh, ow) at out[oh * os_h + ow * os_w], its index at
// idx[oh * xs_h + ow * xs_w] (h * W + w, ATen's; H * W must fit int32).
// Window: kh x kw taps, stride sh/sw, padding ph/pw, dilation dh/dw.
struct PoolPlane {
  const float* in = nullptr;
  int64_t H = 0, W = 0, is_h = 0, is_w = 0;
  float* out = nullptr;
  int64_t Ho = 0, Wo = 0, os_h = 0, os_w = 0;
  int64_t* idx = nullptr;
  int64_t xs_h = 0, xs_w = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

// One bilinear plane: out(oh, ow) = wx0[ow] * col(x0[ow]) + wx1[ow] *
// col(x1[ow]), col(x) = (1 - ly[oh]) * in(y0[oh], x) + ly[oh] * in(y1[oh], x);
// input element (y, x) at in[y * is_h + x * is_w]; y0/y1/ly are arrays of
// Ho, x0/x1 (column indices < W) and wx0/wx1 of Wo; tmp: W floats of scratch.
struct BilinearPlane {
  const float* in = nullptr;
  int64_t W = 0, is_h = 0, is_w = 0;
  float* tmp = nullptr;
  float* out = nullptr;
  int64_t Ho = 0, Wo = 0, os_h = 0, os_w = 0;
  const int64_t *y0 = nullptr, *y1 = nullptr, *x0 = nullptr, *x1 = nullptr;
  const float *ly = nullptr, *wx0 = nullptr, *wx1 = nullptr;
};

// One direct depthwise plane: out(oh, ow) = bias + sum over (kh, kw) of
// w(kh, kw) * in(oh * sh - ph + kh * dh, ow * sw - pw + kw * dw), taps that
// fall in the padding contribute nothing. Any strides (elements).
struct DwPlane {
  const float* in = nullptr;
  int64_t ih = 0, iw = 0, is_h = 0, is_w = 0;
  const float* w = nullptr;
  int64_t kh = 0, kw = 0, ws_h = 0, ws_w = 0;
  float bias = 0.0f;
  float* out = nullptr;
  int64_t oh = 0, ow = 0, os_h = 0, os_w = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};

// Keys per block of an attention tile (AttnTile): the scores of one block are rows x
// kAttnKeyBlock floats of scratch.
constexpr int64_t kAttnKeyBlock = 256;

// One tile of fused scaled dot-product attention (kernels_llm's llama::custom_sdpa family):
// `rows` query rows against keys [0, keys), never materialising the rows x keys score matrix.
// For each row r:
//   s[n]    = scale * dot(q_r, k_n) + mask[r][n]          n < visible[r], else -inf
//   out_r   = sum over n of softmax(s)[n] * v_n
// computed block by block of kAttnKeyBlock keys with the running (online) softmax: each block's
// scores are one small GEMM (Eigen), their exponentials are Eigen's vectorised exp, and the
// accumulator is rescaled by exp(old max - new max) when a block raises a row's maximum. Keys a
// row cannot see cost nothing past the last block any row sees. A row that sees no finite
// score gives NaN (as PyTorch's softmax over all -inf does).
//  q      query row r at q[r * ldq], d floats
//  k, v   key / value n at k[n * ldk], v[n * ldv], d floats each
//  visible  row r sees keys [0, visible[r]), each <= keys (the causal limit); null: all keys
//  mask   additive float mask, row r at mask[r * ldm], `keys` floats; null: none
//  out    row r at out[r * ldo], d floats
//  scratch  rows * (kAttnKeyBlock + d + 2) floats, not overlapping anything else
// float32 throughout; never fails; single-threaded (the caller splits tiles over threads).
struct AttnTile {
  int64_t rows = 0, d = 0, keys = 0;
  const float* q = nullptr;
  int64_t ldq = 0;
  const float* k = nullptr;
  int64_t ldk = 0;
  const float* v = nullptr;
  int64_t ldv = 0;
  const int64_t* visible = nullptr;
  const float* mask = nullptr;
  int64_t ldm = 0;
  float scale = 1.0f;
  float* out = nullptr;
  int64_t ldo = 0;
  float* scratch = nullptr;
};

// The hot loops of one ISA level.
struct IsaOps {
  const char* name;  // "baseline", "avx2" or "avx512"
  // false only if Eigen could not allocate its packing buffers.
  bool (*sgemm)(const Gemm& g);
  // out[i] = a[i * sa] (+|*) alpha * b[i * sb], i < n (alpha only for Add);
  // sa, sb are element strides (0 broadcasts one value).
  void (*binary)(Binary op, const float* a, int64_t sa, const float* b, int64_t sb, float alpha,
                 float* out, int64_t n);
  // out[i] = max(x[i], 0), NaN passes through.
  void (*relu)(const float* x, float* out, int64_t n);
  // Softmax (or log-softmax) of `rows` contiguous rows of `len` elements.
  void (*softmax_rows)(const float* x, float* y, int64_t rows, int64_t len, bool log);
  // Layer norm of `rows` contiguous rows of `len` elements; w / b nullable
  // (len elements each); mean / rstd receive one value per row.
  void (*layer_norm_rows)(const float* x, float* y, int64_t rows, int64_t len, const float* w,
                          const float* b, float eps, float* mean, float* rstd);
  void (*depthwise_plane)(const DwPlane& p);
  // out[i] = f(x[i]), i < n, contiguous; out may alias x. p0, p1: Clamp's
  // bounds (ignored by the others).
  void (*unary)(Unary op, const float* x, float* out, int64_t n, float p0, float p1);
  // y[i] = x[i] * scale + shift (one batch-norm plane); y may alias x.
  void (*affine)(const float* x, float* y, int64_t n, float scale, float shift);
  // y[i] = x[i] * scale[i] + shift[i] (one channels-last pixel).
  void (*affine_vec)(const float* x, float* y, int64_t n, const float* scale, const float* shift);
  // The sum of n contiguous floats and (sumsq non-null) the sum of their
  // squared deviations from the mean, in two passes, accumulated in double.
  void (*moments)(const float* x, int64_t n, double* sum, double* sumsq);
  void (*max_pool_plane)(const PoolPlane& p);
  void (*bilinear_plane)(const BilinearPlane& p);
  void (*attention_tile)(const AttnTile& t);
};

// One table per ISA level, defined in isa_kernels.cpp. The wide ones exist
// only in x86-64 builds (PTERON_CPU_HAVE_X86_ISAS).
const IsaOps* isa_ops_baseline();
#if defined(PTERON_CPU_HAVE_X86_ISAS)
const IsaOps* isa_ops_avx2();
const IsaOps* isa_ops_avx512();
#endif

// The table chosen for this process (dispatch.cpp): the widest level the CPU
// and OS support, lowered by PTERON_ISA=baseline|avx2|avx512 if set. Chosen
// once, on first use; never wider than the CPU supports.
const IsaOps& ops();

// The level that choice made: 0 baseline, 1 AVX2+FMA, 2 AVX-512. The other
// per-level tables of this library (gemm.h, nhwc.h) follow it.
int isa_level();

// [lo, hi): the output positions o (of `out`) whose input position
// o * s + shift lies in [0, in), for a convolution or pooling window tap
// with stride s. Used by the operator code (conv.cpp) and by the ISA
// objects (isa_kernels.cpp): internal linkage (an unnamed namespace), so
// each object keeps its own copy, compiled for its own ISA, and the linker
// never picks one object's copy for another.
namespace {
inline void valid_range(int64_t out, int64_t in, int64_t s, int64_t shift, int64_t* lo,
                        int64_t* hi) {
  int64_t l = 0;
  if (shift < 0) l = (-shift + s - 1) / s;
  int64_t h = in - shift <= 0 ? 0 : (in - shift - 1) / s + 1;
  if (h > out) h = out;
  *lo = l;
  *hi = h < l ? l : h;
}
}  // namespace

}  // namespace pteron_cpu
