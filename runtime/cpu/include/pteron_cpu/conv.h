// SPDX-License-Identifier: BSD-3-Clause
// conv.h - float32 2-D convolution in NHWC on the packed-weight GEMM (gemm.h), without im2col:
// the driver shared by the XNNPACK delegate's Conv2d node (backends/xnnpack) and
// kernels_optimized's NHWC regions (runtime/kernels/optimized/graph_nhwc.cpp). Part of
// pteron_cpu, compiled at the baseline ISA (conv.cpp); the hot loops are gemm.h's.
//
// What it computes, all sizes in elements:
//   out[b, oy, ox, g * cout_g + o] = clamp(bias[g * cout_g + o] + sum over (ky, kx, i) of
//     filter[g * cout_g + o, ky, kx, i] * x[b, oy * sh - pt + ky * dh, ox * sw - pl + kx * dw,
//     g * cin_g + i], lo, hi), then GemmAct (activation, residual)
// with x [n, h, w, groups * cin_g] (dense), the filter OHWI [groups * cout_g, kh, kw, cin_g]
// (XNNPACK's layout), taps outside the input reading zeros, and out rows ldc floats apart
// (ldc >= groups * cout_g: a concatenation's row). oh and ow are the caller's (the bottom and
// right padding is implied by them).
#pragma once

#include <cstdint>
#include <vector>

#include "pteron_cpu/gemm.h"

namespace pteron_cpu {

// A convolution's parameters: window, stride, dilation, top and left padding, groups and the
// channels per group.
struct ConvNhwcShape {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  int64_t groups = 1, cin_g = 0, cout_g = 0;
};

// A convolution with its filter packed once (prepare) and its indirect rows built once per
// input address and shape (run): each output pixel's row of A is a list of pointers into the
// input, in one of two forms:
//  - per filter row (one group, dilation_w 1): kh segments of kw * cin contiguous input
//    values; a pixel whose taps leave the input at the left or right points at a zero-padded
//    copy (refreshed at every run);
//  - per tap (groups, or dilation_w > 1): kh * kw segments of cin_g values at the tap's input
//    pixel, each group's GEMM adding its first channel.
// Taps above or below the input (or, per tap, outside it) point at zeros. A 1x1 stride-1
// unpadded convolution whose output has the input's size reads the input as the GEMM's A.
class ConvNhwc {
 public:
  // Packs `filter` (OHWI, as above) and `bias` (groups * cout_g floats, or null for zeros).
  // False when memory cannot be had.
  bool prepare(const ConvNhwcShape& s, const float* filter, const float* bias);
  const ConvNhwcShape& shape() const { return s_; }
  const PackedWeights& weights(int64_t group) const { return w_[size_t(group)]; }
  // True for a 1x1, stride-1, unpadded convolution on an input of the output's size.
  bool direct(int64_t h, int64_t w, int64_t oh, int64_t ow) const;
  // out = the convolution of x [n, h, w, groups * cin_g], [n, oh, ow, ...] with rows ldc
  // apart, clamped to [lo, hi], then `act` (act.res: one group only, rows act.ldr apart).
  // Split over pteron_parallel_for. False, with out incomplete, when the indirect rows cannot
  // be allocated.
  bool run(const float* x, int64_t n, int64_t h, int64_t w, int64_t oh, int64_t ow, float* out,
           int64_t ldc, float lo, float hi, const GemmAct& act);

  struct Edge {
    int64_t pad;   // offset in pad_ (floats)
    int64_t base;  // offset in the input of the pixel (b, iy, 0)
    int64_t ix0;   // the first tap's input column (some taps outside [0, w))
  };

 private:
  bool per_filter_row() const { return s_.groups == 1 && s_.dw == 1; }
  int64_t segs() const { return per_filter_row() ? s_.kh : s_.kh * s_.kw; }
  int64_t seglen() const { return per_filter_row() ? s_.kw * s_.cin_g : s_.cin_g; }
  bool build_indirection(const float* x, int64_t n, int64_t h, int64_t w, int64_t oh,
                         int64_t ow);
  void refresh_edges(const float* x, int64_t iw, int64_t ic, int64_t pix0, int64_t pix1);
  static void tasks(void* user, int64_t begin, int64_t end);

  ConvNhwcShape s_;
  std::vector<PackedWeights> w_;  // per group: K = kh * kw * cin_g, N = cout_g
  std::vector<float> zeros_;      // max(kw, groups) * cin_g zeros
  const float* ind_x_ = nullptr;  // the input the indirect rows were built for, and its shape
  int64_t ind_shape_[5] = {-1, -1, -1, -1, -1};
  std::vector<const float*> ind_;  // [pixel][segment]
  std::vector<float> pad_;
  std::vector<Edge> edges_;  // edges of pixel r: [row_edges_[r], row_edges_[r + 1])
  std::vector<int64_t> row_edges_;
};

}  // namespace pteron_cpu
