// SPDX-License-Identifier: BSD-3-Clause
// conv.cpp - the NHWC convolution driver of conv.h: filter packing, the indirect rows, the split
// over pteron_parallel_for. Compiled at the baseline ISA; the microkernels are gemm.h's.
#include "pteron_cpu/conv.h"

#include <algorithm>
#include <cstring>

#include "pteron/kernel.h"
#include "pteron/types.h"

namespace pteron_cpu {

bool ConvNhwc::prepare(const ConvNhwcShape& s, const float* filter, const float* bias) {
  s_ = s;
  ind_x_ = nullptr;
  const int64_t kg = s.kh * s.kw * s.cin_g;
  try {
    zeros_.assign(size_t(std::max(s.kw, s.groups) * s.cin_g), 0.0f);
    w_.clear();
    w_.resize(size_t(s.groups));
  } catch (...) {
    return false;
  }
  for (int64_t gi = 0; gi < s.groups; ++gi)
    if (!w_[size_t(gi)].pack(kg, s.cout_g, filter + gi * s.cout_g * kg, kg, true,
                             bias ? bias + gi * s.cout_g : nullptr))
      return false;
  return true;
}

bool ConvNhwc::direct(int64_t h, int64_t w, int64_t oh, int64_t ow) const {
  return s_.kh == 1 && s_.kw == 1 && s_.sh == 1 && s_.sw == 1 && s_.pt == 0 && s_.pl == 0 &&
         oh == h && ow == w;
}

bool ConvNhwc::build_indirection(const float* x, int64_t bsz, int64_t ih, int64_t iw, int64_t oh,
                                 int64_t ow) {
  const int64_t ic = s_.groups * s_.cin_g, kh = s_.kh, kw = s_.kw;
  const int64_t m = bsz * oh * ow, sg = segs(), sl = seglen();
  const bool rows_form = per_filter_row();
  ind_x_ = nullptr;
  try {
    ind_.assign(size_t(m * sg), nullptr);
    row_edges_.assign(size_t(m + 1), 0);
    edges_.clear();
    std::vector<int64_t> at(rows_form ? size_t(m * sg) : 0, -1);  // pad offset of an edge
    int64_t r = 0;
    for (int64_t b = 0; b < bsz; ++b)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox, ++r) {
          row_edges_[size_t(r)] = int64_t(edges_.size());
          const int64_t ix0 = ox * s_.sw - s_.pl;
          const bool inside_x = ix0 >= 0 && ix0 + kw <= iw;
          const float** row = ind_.data() + r * sg;
          for (int64_t i = 0, iy = oy * s_.sh - s_.pt; i < kh; ++i, iy += s_.dh) {
            const bool inside_y = iy >= 0 && iy < ih;
            const float* line = inside_y ? x + (b * ih + iy) * iw * ic : nullptr;
            if (!rows_form) {
              for (int64_t j = 0, ix = ix0; j < kw; ++j, ix += s_.dw)
                row[i * kw + j] = inside_y && ix >= 0 && ix < iw ? line + ix * ic : zeros_.data();
            } else if (!inside_y) {
              row[i] = zeros_.data();
            } else if (inside_x) {
              row[i] = line + ix0 * ic;
            } else {
              at[size_t(r * sg + i)] = int64_t(edges_.size()) * sl;
              edges_.push_back({int64_t(edges_.size()) * sl, (b * ih + iy) * iw * ic, ix0});
            }
          }
        }
    row_edges_[size_t(m)] = int64_t(edges_.size());
    pad_.assign(edges_.size() * size_t(sl), 0.0f);  // taps outside stay zero
    for (size_t e = 0; e < at.size(); ++e)
      if (at[e] >= 0) ind_[e] = pad_.data() + at[e];
  } catch (...) {
    return false;
  }
  ind_x_ = x;
  const int64_t shape[5] = {bsz, ih, iw, oh, ow};
  std::copy(shape, shape + 5, ind_shape_);
  return true;
}

// The edge copies of output pixels [pix0, pix1) refreshed from input x (per filter row form).
void ConvNhwc::refresh_edges(const float* x, int64_t iw, int64_t ic, int64_t pix0, int64_t pix1) {
  const int64_t cin = s_.cin_g;
  for (int64_t e = row_edges_[size_t(pix0)]; e < row_edges_[size_t(pix1)]; ++e) {
    const Edge& ed = edges_[size_t(e)];
    float* d = pad_.data() + ed.pad;
    for (int64_t j = 0; j < s_.kw; ++j) {
      const int64_t ix = ed.ix0 + j;
      if (ix >= 0 && ix < iw)  // taps outside stay zero (build_indirection)
        std::memcpy(d + j * cin, x + ed.base + ix * ic, sizeof(float) * size_t(cin));
    }
  }
}

namespace {

struct ConvTasks {
  ConvNhwc* conv;
  const float* x;
  int64_t w, c;
  int64_t rows, rows_per_task;
  int64_t gsplit;  // 1: an item is a task of every group; groups: one group's part of a task
  float* out;
  int64_t ldc;
  float lo, hi;
  GemmAct act;
};

}  // namespace

// Items [begin, end): output pixels [task * rows_per_task, ...) (task = item / gsplit): their
// edge copies refreshed, then their GEMM for every group or for group item % gsplit, while
// their input is in cache.
void ConvNhwc::tasks(void* user, int64_t begin, int64_t end) {
  const ConvTasks& t = *static_cast<const ConvTasks*>(user);
  ConvNhwc& s = *t.conv;
  const ConvNhwcShape& p = s.s_;
  const int64_t sg = s.segs(), sl = s.seglen();
  for (int64_t item = begin; item < end; ++item) {
    const int64_t task = item / t.gsplit;
    const int64_t r0 = task * t.rows_per_task, r1 = std::min(t.rows, r0 + t.rows_per_task);
    const int64_t g0 = t.gsplit == 1 ? 0 : item % t.gsplit;
    const int64_t g1 = t.gsplit == 1 ? p.groups : g0 + 1;
    if (t.gsplit == 1) s.refresh_edges(t.x, t.w, t.c, r0, r1);  // groups > 1: none
    GemmAct act = t.act;  // a residual (one group only) from the task's first row
    if (act.res) act.res += r0 * act.ldr;
    for (int64_t gi = g0; gi < g1; ++gi)
      gemm_packed_indirect_serial(r1 - r0, sg, sl, s.ind_.data() + r0 * sg, gi * p.cin_g,
                                  s.w_[size_t(gi)], t.out + r0 * t.ldc + gi * p.cout_g, t.ldc,
                                  t.lo, t.hi, act);
  }
}

bool ConvNhwc::run(const float* x, int64_t bsz, int64_t h, int64_t w, int64_t oh, int64_t ow,
                   float* out, int64_t ldc, float lo, float hi, const GemmAct& act) {
  const int64_t m = bsz * oh * ow, c = s_.groups * s_.cin_g;
  if (m == 0 || s_.groups * s_.cout_g == 0) return true;
  if (direct(h, w, oh, ow)) {  // 1x1, stride 1, no padding: the input is the GEMM's A
    for (int64_t gi = 0; gi < s_.groups; ++gi)
      gemm_packed(m, x + gi * s_.cin_g, c, w_[size_t(gi)], out + gi * s_.cout_g, ldc, lo, hi,
                  act);
    return true;
  }
  const int64_t shape[5] = {bsz, h, w, oh, ow};
  if ((ind_x_ != x || !std::equal(shape, shape + 5, ind_shape_)) &&
      !build_indirection(x, bsz, h, w, oh, ow))
    return false;
  // One dispatch: tasks of 8 row blocks, each refreshing its own rows' edge copies and
  // multiplying them at once, when there are enough of them for every thread, and always with
  // groups (then an item per task and group). Otherwise (one group, few output pixels: the late
  // layers of a CNN) the edges first, then a GEMM that splits N too.
  const int64_t threads = std::max<int32_t>(1, pteron_parallel_threads());
  const int64_t rows_per_task = 8 * gemm_rows_per_block();
  const int64_t ntasks = (m + rows_per_task - 1) / rows_per_task;
  if (s_.groups > 1 || threads == 1 || ntasks >= 4 * threads) {
    ConvTasks t{this, x, w, c, m, rows_per_task, s_.groups, out, ldc, lo, hi, act};
    pteron_parallel_for(0, ntasks * s_.groups, 1, &ConvNhwc::tasks, &t);
    return true;
  }
  refresh_edges(x, w, c, 0, m);
  gemm_packed_indirect(m, segs(), seglen(), ind_.data(), 0, w_[0], out, ldc, lo, hi, act);
  return true;
}

}  // namespace pteron_cpu
