// SPDX-License-Identifier: BSD-3-Clause
// q4gemm.h - pteron_cpu's GEMM of int8 activations (dynamically quantized per row) and 4-bit
// groupwise weights: the "8da4w" linear layers of upstream's LLM exports (torchao's 4-bit
// groupwise weights, lowered to XNNPACK as QBInt4 with ChannelGroupQuant), read as 4-bit
// weights all the way into the microkernels: a decoded token reads half a byte per weight.
//
// What it computes, for rows i < m and output channels j < n (K = groups * gs):
//
//   y[i, j] = clamp(xscale[i] * sum over g of wscale[j, g] * D(i, j, g) + bias[j], lo, hi)
//   D(i, j, g) = sum over k in group g of (x[i, k] - xzp[i]) * (u[j, k] - 8)      (int32, exact)
//
// x: int8 activations [m, K] row-major (ldx elements between rows), with each row's zero point
// xzp[i] and scale xscale[i] (upstream's per-token dynamic quantization); u: the weights' 4-bit
// codes in [0, 15], weight = u - 8 (torchao's layout: [N, K] row-major, two per byte, element
// 2t in the low nibble); wscale: float32 [N, groups]. The group sums are exact in int32; the
// sum over groups is float32 (FMA where the level has it), in group order.
//
// Levels (chosen with qgemm.h's: isa_level() and isa_vnni(), PTERON_ISA lowers them):
//   baseline    scalar loops;
//   avx2        vpmaddubsw + vpmaddwd on 8 columns x 4 taps, 2 rows per call;
//   avx512      the same on 16 columns;
//   avx512vnni  vpdpbusd on 16 columns x 4 taps, 4 rows per call.
// Group sizes: multiples of 8. Everything else is refused at pack (callers keep another path).
#pragma once
#include <cstddef>
#include <cstdint>

namespace pteron_cpu {

constexpr int64_t kQ4Nr = 16;  // output channels per packed panel

// Packed 4-bit weights: per panel of 16 output channels and per group, gs / 8 blocks of 64
// bytes; block b holds taps 8b..8b+3 of the group in its low nibbles and 8b+4..8b+7 in its high
// ones, byte 4 * c + t for channel c and tap t (vpdpbusd's layout). Scales per panel and group,
// 16 values: bfloat16 (their upper 16 bits) when every scale is one exactly (torchao's scales,
// as upstream's lowering stores them: a decoded token then reads 32 bytes of scales per 256 of
// weights instead of 64), else float32. Channels past n are zeros. Owns its memory; not
// copyable.
class Q4Weights {
 public:
  Q4Weights() = default;
  Q4Weights(const Q4Weights&) = delete;
  Q4Weights& operator=(const Q4Weights&) = delete;
  ~Q4Weights();
  // nibbles: [n, k] codes, two per byte (element 2t low); scales [n, k / gs]. False for a
  // group size that is not a positive multiple of 8 dividing k, or without memory.
  bool pack(int64_t n, int64_t k, int64_t gs, const uint8_t* nibbles, const float* scales);
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  int64_t group_size() const { return gs_; }
  int64_t groups() const { return k_ / gs_; }
  int64_t panels() const { return (n_ + kQ4Nr - 1) / kQ4Nr; }
  const uint8_t* panel(int64_t p) const { return data_ + p * panel_bytes(); }
  int64_t panel_bytes() const { return k_ / 2 * kQ4Nr; }
  bool scales_bf16() const { return bf16_; }
  // Panel p's scales: float32 (scales_bf16() false) or bfloat16 bits, groups x 16.
  const float* scales(int64_t p) const { return scales_ + p * groups() * kQ4Nr; }
  const uint16_t* scales16(int64_t p) const { return scales16_ + p * groups() * kQ4Nr; }

 private:
  int64_t n_ = 0, k_ = 0, gs_ = 0;
  bool bf16_ = false;
  uint8_t* data_ = nullptr;
  float* scales_ = nullptr;
  uint16_t* scales16_ = nullptr;
};

// One call's operands (see the top of this file). xcorr: per row and group,
// 8 * (sum of the group's x - xzp * gs), int32 [m, groups] (q4gemm fills it).
struct Q4Args {
  int64_t m = 0;
  const int8_t* x = nullptr;
  int64_t ldx = 0;
  const int32_t* xzp = nullptr;
  const float* xscale = nullptr;
  const int32_t* xcorr = nullptr;
  const Q4Weights* w = nullptr;
  const float* bias = nullptr;  // n values, or null
  float* y = nullptr;
  int64_t ldy = 0;
  float lo = 0, hi = 0;
};

// Rows [i0, i0 + mr) (mr <= the level's rows) times panels [p0, p1).
using Q4Ukernel = void (*)(const Q4Args& a, int64_t i0, int64_t mr, int64_t p0, int64_t p1);
struct Q4Kernels {
  const char* name;
  int64_t mr;  // rows per call
  Q4Ukernel ukernel;
};

// y for all m rows, split over pteron_parallel_for (panels, then rows); returns false only
// without memory for the row sums.
bool q4gemm(int64_t m, const int8_t* x, int64_t ldx, const int32_t* xzp, const float* xscale,
            const Q4Weights& w, const float* bias, float* y, int64_t ldy, float lo, float hi);
// The level of this process.
const Q4Kernels& q4gemm_kernels();

namespace isa_baseline {
const Q4Kernels* q4gemm_kernels();
}
#if defined(PTERON_CPU_HAVE_X86_ISAS)
namespace isa_avx2 {
const Q4Kernels* q4gemm_kernels();
}
namespace isa_avx512 {
const Q4Kernels* q4gemm_kernels();
}
namespace isa_avx512vnni {
const Q4Kernels* q4gemm_kernels();
}
#endif

}  // namespace pteron_cpu
