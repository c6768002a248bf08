// SPDX-License-Identifier: BSD-3-Clause
// qgemm.h - the int8 GEMM of pteron_cpu: 8-bit activation codes times int8 weights, summed
// exactly in int32, on indirect rows (a fully connected layer: one segment per row; a
// convolution without im2col: one segment per filter tap). Weight packing, microkernels per
// ISA level (qgemm_kernels.cpp), the parallel driver (qgemm.cpp). Used by backend_xnnpack's
// quantized fully connected and convolution nodes.
//
// What it computes (sizes in elements):
//
//   C[i, j] = sum over s < segs, p < seglen of A_s[i][p] * W[j, s * seglen + p]     (int32)
//
// scaled to float32, clamped and (optionally) rounded onto a quantization grid on the way out
// (QGemmOut), while the tile is in registers.
//
// for i < M, j < N. A_s[i] (row i's segment s) is at rows[i * segs + s]: seglen activation
// codes in [0, 255], each stored as one uint8 or one int16 (QGemmKernels::act_bytes of the
// chosen level). A segment may be read up to kQGemmPad - 1 elements past seglen (the packed
// weights there are zero, so whatever is read adds nothing, but the storage must exist: callers
// allocate kQGemmPad elements more than they use). W is N x K int8 (K = segs * seglen), row j
// at w + j * K.
//
// An affine int8 quantization q = round(x / s) + zp maps to codes u = q + 128 (int8 values) or
// u = q (uint8 values) with offset o = zp + 128 or zp: sum (q - zp) w = C - o * colsum(w), where
// QPackedWeights::colsum(j) = sum over K of W[j, :] (the callers' epilogue).
//
// K is at most kQGemmMaxK (pack() refuses more): then neither C nor o * colsum(j), o <= 383,
// leaves int32, so callers may subtract them in int32.
//
// Levels (pteron_cpu::qgemm_kernels(), chosen once per process like isa.h's tables):
//   baseline    scalar loops, uint8 codes, weights as 16 columns x 4 taps per row of a panel;
//   avx2        int16 codes and weights, vpmaddwd: 6 rows x 16 columns;
//   avx512      the same with 16-lane vectors: 12 rows x 16 columns;
//   avx512vnni  uint8 codes, int8 weights, vpdpbusd (AVX512-VNNI): 8 rows x 32 columns (two
//               panels per call).
// avx512vnni runs where the CPU has AVX512-VNNI and isa_level() is AVX-512;
// PTERON_ISA=avx512 (or lower) turns it off, as it lowers the other tables.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pteron_cpu {

constexpr int64_t kQGemmNr = 16;  // columns per packed panel (all levels)
constexpr int64_t kQGemmPad = 4;  // elements a segment may be read past its end
constexpr int64_t kQGemmMaxK = 16384;

// Where C goes: each C[i, j] becomes the float32
//   v = float(C[i, j] - corr) * (row_scale[i] * col_scale[j]) + bias[j]
// with corr = col_corr[j] where col_corr is set (a zero point offset that is one for every row,
// times colsum(j), computed once), else row_off[i] * colsum[j] (the int32 difference is exact:
// see kQGemmMaxK); a null row_scale is 1. Without requant it is clamped to [lo, hi]; with
// requant it is rounded onto a quantization grid,
//   t = clamp(round(v * o_inv), lo, hi),  v = t * o_scale
// (lo / hi then in grid units: quant_min / quant_max minus the zero point, the output range
// folded in; round half to even). Stored at y[i * ldy + j]; or, with requant and yc set, as
// the 8-bit code t + code_add at yc[i * ldy + j] (code_add: the zero point plus 128 for int8
// values, plus 0 for uint8: the activation codes a following int8 node reads as they are).
struct QGemmOut {
  float* y = nullptr;
  int64_t ldy = 0;
  const int32_t* colsum = nullptr;    // per column (QPackedWeights::colsums())
  // per column, or null; col_corr, like colsum, padded with zeros to whole panels (kQGemmNr)
  const int32_t* col_corr = nullptr;
  const float* col_scale = nullptr;   // per column: the weight's scale (times the input's)
  const float* bias = nullptr;        // per column
  const int32_t* row_off = nullptr;   // per row: the activation codes' zero point offset
  const float* row_scale = nullptr;   // per row: the activation's scale, or null
  float lo = 0, hi = 0;
  int requant = 0;
  float o_inv = 1, o_scale = 1;
  uint8_t* yc = nullptr;  // with requant: codes out instead of y
  float code_add = 0;
};

// One microkernel call: rows i < mr (1 <= mr <= QGemmKernels::mr), columns j < nc
// (1 <= nc <= kQGemmNr * QGemmKernels::panels) of the output, from row segments
// rows[i * segs + s], each `groups` groups of QGemmKernels::k_group codes (the segment length
// rounded up), packed panels w, w + wstride, ... (bytes; as many as nc needs); the rows are rows
// i0 + i and the columns j0 + j of `out`.
using QGemmUkernel = void (*)(int64_t mr, int64_t nc, int64_t segs, int64_t groups,
                              const void* const* rows, const void* w, int64_t wstride,
                              const QGemmOut& out, int64_t i0, int64_t j0);

// Activation codes of n floats x (act_bytes each, into out):
//   code = clamp(round(clamp(x * inv + a, lo - b - 1, hi - b + 1)) + b, lo, hi) + shift
// with a = zp, b = 0 when zp_before_round (quantize per token: round(x / s + zp)), else a = 0,
// b = zp (per tensor: round(x / s) + zp); round half to even, NaN gives lo. lo, hi: quant_min,
// quant_max; shift: 128 for int8 values, 0 for uint8.
using QGemmEncode = void (*)(const float* x, int64_t n, float inv, float zp, float lo, float hi,
                             float shift, int zp_before_round, void* out);

// The smallest and the largest of n > 0 floats, NaN for both when one is NaN (torch.amin /
// amax): the per-token range of dynamic quantization.
using QGemmMinMax = void (*)(const float* x, int64_t n, float* mn, float* mx);

// Rounds n floats onto a quantization grid in place: x = clamp(round(x * inv), lo, hi) * scale
// (lo / hi: quant_min / quant_max minus the zero point; round half to even; NaN gives lo): a
// quantized value's quantize and dequantize, for the nodes that compute in float32.
using QGemmRequant = void (*)(float* x, int64_t n, float inv, float lo, float hi, float scale);

// Where a kernel that rounds onto a quantization grid puts each grid value t (QGemmOut's
// t: an integer in [lo, hi]): the code t + code_add (yc set), else the float32 t * scale.
struct QCodesOut {
  float* y = nullptr;
  uint8_t* yc = nullptr;
  float inv = 1, lo = 0, hi = 0, scale = 1, code_add = 0;
};

// A depthwise convolution (channel multiplier 1) of 8-bit activation codes, NHWC, in float32:
//   v[b, oy, ox, c] = bias[c] + sum over ky < kh, kx < kw (taps inside the input) of
//                     (x[b, iy, ix, c] - in_off) * w[(ky * kw + kx) * c_total + c]
//   iy = oy * sh - pt + ky * dh, ix = ox * sw - pl + kx * dw
// w: the filter's dequantized values times the input's scale, tap-major [kh * kw][c]; then
// each v rounded onto the output's grid (out: t = clamp(round(v * inv), lo, hi)). Output
// rows [row_begin, row_end) of the n * oh rows. Taps outside the input add nothing (the zero
// padding of a quantized input is its zero point).
struct QDwConv {
  int64_t n = 0, ih = 0, iw = 0, c = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  const float* w = nullptr;
  const float* bias = nullptr;
  // bias[c] - in_off * sum over taps of w[tap, c]: the same sum as codes times w, for the pixels
  // whose taps are all inside the input (the kernels' fast path reads codes as they are)
  const float* bias_full = nullptr;
  float in_off = 0;
  QCodesOut out;
};
using QDwConvFn = void (*)(const QDwConv& p, const uint8_t* x, int64_t row_begin,
                           int64_t row_end);

// The sum of two quantized tensors of n elements, element by element, from their codes:
//   v = (a - a_off) * a_scale + (b - b_off) * b_scale
// rounded onto the output's grid (out, from element `at` on: y + at, yc + at).
struct QAdd {
  float a_off = 0, a_scale = 1, b_off = 0, b_scale = 1;
  QCodesOut out;
};
using QAddFn = void (*)(const QAdd& p, const uint8_t* a, const uint8_t* b, int64_t n,
                        int64_t at);

struct QGemmKernels {
  const char* name;   // "baseline", "avx2", "avx512" or "avx512vnni"
  int64_t mr;         // rows per microkernel call
  int act_bytes;      // 1: uint8 codes; 2: int16 codes
  int w_bytes;        // 1: int8 weights, panel rows of 16 columns x 4 taps; 2: int16, x 2 taps
  int64_t k_group;    // taps per panel row (4 or 2)
  int64_t panels;     // panels per microkernel call, at most
  QGemmUkernel ukernel;
  QGemmEncode encode;
  QGemmMinMax minmax;
  QGemmRequant requant;
  QDwConvFn dwconv;
  QAddFn add;
};

// The level of this process (qgemm.cpp).
const QGemmKernels& qgemm_kernels();

// Packed W (N x K, int8) for the chosen level: per panel of kQGemmNr columns and per segment,
// seglen rounded up to a multiple of 4 taps, zeros past seglen and past N. Owns its memory.
class QPackedWeights {
 public:
  QPackedWeights() = default;
  QPackedWeights(const QPackedWeights&) = delete;
  QPackedWeights& operator=(const QPackedWeights&) = delete;
  ~QPackedWeights();

  // False when K is too large for int32 sums or memory cannot be had.
  bool pack(int64_t n, int64_t segs, int64_t seglen, const int8_t* w);

  int64_t n() const { return n_; }
  int64_t segs() const { return segs_; }
  int64_t seglen() const { return seglen_; }
  int64_t groups() const { return groups_; }  // per segment
  const void* panel(int64_t q) const;
  int64_t panel_bytes() const { return panel_bytes_; }
  int32_t colsum(int64_t j) const { return colsum_[j]; }
  const int32_t* colsums() const { return colsum_; }

 private:
  int64_t n_ = 0, segs_ = 0, seglen_ = 0, groups_ = 0, panel_bytes_ = 0;
  void* data_ = nullptr;
  int32_t* colsum_ = nullptr;
};

// The output (QGemmOut) of `m` rows given as segment pointers (rows[i * segs + s]), split in
// tiles over pteron_parallel_for. Never fails.
void qgemm_indirect(int64_t m, const void* const* rows, const QPackedWeights& w,
                    const QGemmOut& out);

// The depthwise convolution and the sum above over all their rows / elements, split over
// pteron_parallel_for. Never fail.
void qdwconv(const QDwConv& p, const uint8_t* x);
void qadd(const QAdd& p, const uint8_t* a, const uint8_t* b, int64_t n);

// One table per level, each defined in its own object of qgemm_kernels.cpp (the ODR rule of
// isa_kernels.cpp).
namespace isa_baseline {
const QGemmKernels* qgemm_kernels();
}
#if defined(PTERON_CPU_HAVE_X86_ISAS)
namespace isa_avx2 {
const QGemmKernels* qgemm_kernels();
}
namespace isa_avx512 {
const QGemmKernels* qgemm_kernels();
}
namespace isa_avx512vnni {
const QGemmKernels* qgemm_kernels();
}
// Whether the CPU and the PTERON_ISA setting allow the avx512vnni level (dispatch.cpp).
bool isa_vnni();
#endif

}  // namespace pteron_cpu
