// SPDX-License-Identifier: BSD-3-Clause
// nhwc.h - NHWC window and element-wise kernels (depthwise convolution, pooling, broadcasting
// binary, unary, softmax, resize) for backend_xnnpack's own nodes. Part of pteron_cpu
// (runtime/cpu/CMakeLists.txt); the per-ISA hot loops are in nhwc_kernels.cpp, the driver
// in nhwc.cpp.
//
// Every tensor is float32, dense and row-major; image tensors are NHWC ([N, H, W, C], C
// innermost), as XNNPACK lays them out. The semantics are those of the XNNPACK subgraph nodes
// the delegate reads (xnnpack.h documents each), except that NaN is kept where PyTorch keeps
// it: every output range [lo, hi] is applied as min(max(v, lo), hi) with NaN passing through.
//
// The drivers (the functions below the NhwcOps table) split their work with
// pteron_parallel_for (output rows, pixels or element ranges; a tensor too small to be worth a
// split runs on the calling thread), never fail and never allocate, except where a scratch
// buffer is passed in. The per-ISA functions (NhwcOps) are single-threaded.
#pragma once

#include <cstdint>

namespace pteron_cpu {

// ---- per-ISA row kernels (nhwc_kernels.cpp) -------------------------------------------------

// One output row of a depthwise convolution with depth multiplier 1:
//   out[ox][c] = bias[c] + sum over (ky, kx) of w[ky * kw + kx][c] *
//                rows[ky][(ox * sw - pl + kx * dw) * c_stride + c]   (columns outside [0, iw)
//                contribute nothing), then clamped to [lo, hi] when `clamp`.
// rows: kh pointers to input rows of iw pixels of `c` channels (a row above or below the image
// points at zeros); w: [kh * kw][c]; bias: [c]; out: ow pixels of c channels.
struct DwRow {
  const float* const* rows = nullptr;
  int64_t iw = 0, c = 0, ow = 0;
  int64_t kh = 1, kw = 1, sw = 1, dw = 1, pl = 0;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  float lo = 0.0f, hi = 0.0f;
  bool clamp = false;
};

// One output row of a max or average pooling (channels vectorised):
// rows: kh pointers to input rows of iw pixels of c channels, null for a row outside the
// image. Max: the largest valid tap, NaN if any valid tap is NaN (PyTorch's), -inf for a window
// without valid taps. Average: the sum of the valid taps over their count (XNNPACK's divisor:
// padding is excluded), 0 for a window without valid taps.
struct PoolRow {
  const float* const* rows = nullptr;
  int64_t iw = 0, c = 0, ow = 0;
  int64_t kh = 1, kw = 1, sw = 1, dw = 1, pl = 0;
  float* out = nullptr;
  float lo = 0.0f, hi = 0.0f;
  bool clamp = false;
};

// One output row of a bilinear resize: out[ox][c] = (1 - ly) * row0(ox) + ly * row1(ox),
// rowk(ox) = (1 - lx[ox]) * rk[x0[ox] * c + c'] + lx[ox] * rk[x1[ox] * c + c'].
struct BilinearRow {
  const float* r0 = nullptr;
  const float* r1 = nullptr;
  float ly = 0.0f;
  int64_t c = 0, ow = 0;
  const int64_t* x0 = nullptr;
  const int64_t* x1 = nullptr;
  const float* lx = nullptr;
  float* out = nullptr;
};

// Binary operators. Div: IEEE division. Min / Max: NaN if either operand is NaN (PyTorch's
// minimum / maximum).
enum class NBinary : int32_t { Add, Sub, Mul, Div, Min, Max };

// How a contiguous binary kernel reads its operands: both vectors, or one side one value.
enum class NMode : int32_t { VV, VS, SV };

// Unary functions (p0 / p1: the node's parameters).
//   Abs Neg Floor Ceil Square Sqrt Rsqrt (1 / sqrt) Exp Log Sin Cos, as libm up to a few ulp;
//   Sigmoid 1 / (1 + e^-x); Tanh; Gelu x / 2 * (1 + erf(x / sqrt 2));
//   Hardswish x * min(max(x + 3, 0), 6) / 6 (PyTorch's formula);
//   Elu x > 0 ? x : p0 * (e^x - 1) (alpha p0); LeakyRelu x > 0 ? x : p0 * x (slope p0);
//   Clamp min(max(x, p0), p1);
//   Silu x * Sigmoid(x), rounded as the two steps are (the Sigmoid, then the product): the
//   fused Sigmoid + Multiply of backend_xnnpack's fuse_elementwise.
// NaN in gives NaN out, for every function.
enum class NUnary : int32_t {
  Abs,
  Neg,
  Floor,
  Ceil,
  Square,
  Sqrt,
  Rsqrt,
  Exp,
  Log,
  Sin,
  Cos,
  Sigmoid,
  Tanh,
  Gelu,
  Hardswish,
  Elu,
  LeakyRelu,
  Clamp,
  Silu
};

// The hot loops of one ISA level.
struct NhwcOps {
  const char* name;  // "baseline", "avx2" or "avx512"
  // One depthwise output row; direct kernels for 3x3 and 5x5 at strides 1 and 2 (dilation 1),
  // a generic one for every other window.
  void (*dw_row)(const DwRow& r);
  void (*max_pool_row)(const PoolRow& r);
  void (*avg_pool_row)(const PoolRow& r);
  // acc[j] += sum over p < pixels of in[p * stride + j], j < c.
  void (*sum_pixels)(const float* in, int64_t pixels, int64_t stride, int64_t c, float* acc);
  void (*bilinear_row)(const BilinearRow& r);
  // out[i] = op(a[i or 0], b[i or 0]) for i < n (mode says which side is one value), clamped to
  // [lo, hi] when `clamp`. out may alias a vector operand.
  void (*binary)(NBinary op, NMode mode, const float* a, const float* b, float* out, int64_t n,
                 float lo, float hi, bool clamp);
  // binary over `rows` rows of `run` elements: row r reads a + r * a_rs and b + r * b_rs (a
  // row stride of 0 repeats one row, e.g. a per-channel vector) the way `mode` says, and writes
  // out + r * run.
  void (*binary_rows)(NBinary op, NMode mode, const float* a, int64_t a_rs, const float* b,
                      int64_t b_rs, float* out, int64_t rows, int64_t run, float lo, float hi,
                      bool clamp);
  // out[p][j] = x[p][j] > 0 ? x : x * slope[j] (PReLU), for `pixels` pixels of c channels.
  void (*prelu)(const float* x, const float* slope, float* out, int64_t pixels, int64_t c, float lo,
                float hi, bool clamp);
  // out[i] = f(x[i]), i < n; out may alias x.
  void (*unary)(NUnary op, const float* x, float* out, int64_t n, float p0, float p1);
  // x[i] = min(max(x[i], lo), hi), NaN kept.
  void (*clamp)(float* x, int64_t n, float lo, float hi);
  // out[c * out_rs + r] = in[r * in_rs + c] for r < rows, c < cols (a 2-D transpose between
  // strided row-major matrices; row strides in elements; out must not overlap in). 8 x 8 (AVX2)
  // and 4 x 4 (SSE) register blocks; 2 or 3 rows into a dense out (out_rs == rows, an RGB
  // image's NCHW -> NHWC) interleave 4 columns at a time.
  void (*transpose)(const float* in, int64_t in_rs, float* out, int64_t out_rs, int64_t rows,
                    int64_t cols);
  // Softmax of `rows` contiguous rows of `len` elements: y = e^(x - max) / sum, a NaN or +inf
  // in a row makes the row NaN (PyTorch's); y may alias x. e^t is a degree-6 polynomial
  // (nhwc_kernels.cpp, a few ulp), 0 below t = -87.
  void (*softmax_rows)(const float* x, float* y, int64_t rows, int64_t len);
};

const NhwcOps* nhwc_ops_baseline();
#if defined(PTERON_CPU_HAVE_X86_ISAS)
const NhwcOps* nhwc_ops_avx2();
const NhwcOps* nhwc_ops_avx512();
#endif

// The table of the level isa_level() (isa.h) chose for this process.
const NhwcOps& nhwc_ops();

// ---- drivers (nhwc.cpp) -----------------------------------------------------------------------

// Items per pteron_parallel_for chunk, for items of `work_per_item` multiply-adds (or
// elements) each: about 32 K a chunk, at least 1 (1 << 30 for no work, i.e. serial). The split
// of every node here, and of the int8 depthwise convolution (qgemm.cpp).
int64_t grain_for(int64_t work_per_item);

// The most window rows the row drivers below take (depthwise_conv2d, expand_depthwise_conv2d,
// max_pool2d, avg_pool2d): a caller checks it first (a taller window computes nothing, or only
// its first rows).
constexpr int64_t kMaxWindowRows = 64;

// Depthwise convolution, NHWC, XNNPACK's DepthwiseConv2d: input [n, ih, iw, ic], output
// [n, oh, ow, ic * m] where output channel o reads input channel o / m; filter w
// [kh][kw][ic * m] (XNNPACK's 1HWO); bias [ic * m] (never null); padding top pt / left pl (the
// bottom / right padding is implied by oh / ow). `zeros`: at least iw * ic zero floats (the
// rows in the padding read them). Output clamped to [lo, hi] (NaN kept); then, when `act`, the
// unary function `act_op` (without parameters: Sigmoid, Silu, Hardswish) applied to each output
// row right after it is computed (an activation fused into the convolution).
struct DwConv2d {
  int64_t n = 0, ih = 0, iw = 0, ic = 0, m = 1, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  const float* w = nullptr;
  const float* bias = nullptr;
  float lo = 0.0f, hi = 0.0f;
  bool act = false;
  NUnary act_op = NUnary::Abs;
};
void depthwise_conv2d(const DwConv2d& p, const float* in, float* out, const float* zeros);

// Max / average pooling, NHWC: input [n, ih, iw, c], output [n, oh, ow, c]; window kh x kw,
// stride sh / sw, dilation dh / dw (average: 1), padding top pt / left pl. See PoolRow.
struct Pool2d {
  int64_t n = 0, ih = 0, iw = 0, c = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  float lo = 0.0f, hi = 0.0f;
};
void max_pool2d(const Pool2d& p, const float* in, float* out);
void avg_pool2d(const Pool2d& p, const float* in, float* out);

// Global average pooling, NHWC: [n, h, w, c] -> [n, 1, 1, c], the mean over h * w pixels
// (summed in float), clamped to [lo, hi]; h * w == 0 gives NaN (0 / 0, as PyTorch's mean).
// A large image is summed in global_avg_pool2d_parts(hw, c) parts of consecutive pixels (each
// part's sums into `partial`, at least n * parts * c floats; then the parts added in order), so
// that each thread reads the rows it wrote in the node before; the parts depend on the shape
// only, so the result is the same at every thread count. One part: `partial` is not used.
int64_t global_avg_pool2d_parts(int64_t hw, int64_t c);
void global_avg_pool2d(int64_t n, int64_t hw, int64_t c, const float* in, float* out, float lo,
                       float hi, float* partial);

// Bilinear resize, NHWC: [n, ih, iw, c] -> [n, oh, ow, c], PyTorch's upsample_bilinear2d
// (align_corners, or half-pixel centres with the source index clamped at 0), which the
// XNNPACK node ResizeBilinear2d reproduces for the exporter's flags. `index`: scratch of at
// least 2 * ow int64 values; `weight`: at least ow floats.
void resize_bilinear(int64_t n, int64_t ih, int64_t iw, int64_t c, int64_t oh, int64_t ow,
                     bool align_corners, const float* in, float* out, int64_t* index,
                     float* weight);

// Binary operator with NumPy broadcasting from the right (XNNPACK's): a of shape as[0..ar),
// b of shape bs[0..br), out of the broadcast shape os[0..orank) (orank = max(ar, br), at most
// kMaxRank). Fast paths: same shape, one side one element, one side repeated along leading dims (a
// per-channel vector in NHWC); the rest walks the output rows.
constexpr int kMaxRank = 16;  // PTERON_MAX_DIM
void binary_broadcast(NBinary op, const float* a, const int64_t* as, int ar, const float* b,
                      const int64_t* bs, int br, float* out, const int64_t* os, int orank, float lo,
                      float hi);

// PReLU on `pixels` pixels of c channels (slope [c]).
void prelu(const float* x, const float* slope, float* out, int64_t pixels, int64_t c, float lo,
           float hi);

// Unary function on n contiguous elements, then the output range.
void unary(NUnary op, const float* x, float* out, int64_t n, float p0, float p1, float lo,
           float hi);

// Softmax over rows of `len` contiguous elements (a NaN in a row makes the row NaN), then the
// output range.
void softmax(const float* x, float* out, int64_t rows, int64_t len, float lo, float hi);

}  // namespace pteron_cpu
