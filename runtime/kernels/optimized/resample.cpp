// SPDX-License-Identifier: BSD-3-Clause
// resample.cpp - optimized float32 aten::upsample_bilinear2d.vec_out and
// aten::upsample_nearest2d.vec_out on (N, C, H, W) inputs in any dim order.
// (_adaptive_avg_pool2d stays kernels_portable's: to 1 x 1 it exports as
// mean.dim, reduce.cpp; other sizes showed no gain, bench/kernels/README.md.)
//
// Checks, output sizes and index rules: resample_checks.h (kernels_portable's,
// which are ATen's). Bilinear: the source rows, columns and weights are
// computed once per call, then each plane blends its two source rows into
// one row (vectorised) and gathers two taps per output column from it.
// Nearest: one gathered row per distinct source row, repeated rows copied.
// Planes split over the thread pool.
#include <cstdint>
#include <cstring>

#include "opt_util.h"
#include "arg_reading.h"
#include "resample_checks.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

template <typename F>
void for_planes(const ResamplePlanes& P, int64_t work_per_plane, F&& f) {
  const int64_t grain =
      work_per_plane >= 32768 ? 1 : 32768 / (work_per_plane > 0 ? work_per_plane : 1);
  parallel_for(0, P.N * P.C, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) f(p / P.C, p % P.C);
  });
}

// Registered for float32 (PTERON_OPT_KEY); every other dtype is portable's.
bool float32_only(int32_t dt) { return dt == PTERON_DTYPE_FLOAT32; }

// ---- bilinear -------------------------------------------------------------------

// Plain bilinear source index and weights along one axis, in float (ATen's
// CPU rule, as in kernels_portable's bilinear_taps<float>).
void taps(int64_t in, int64_t out, bool align_corners, double scale, int64_t* i0s, int64_t* i1s,
          float* w0s, float* w1s) {
  const float step = source_step<float>(in, out, align_corners, scale);
  for (int64_t i = 0; i < out; ++i) {
    float src =
        align_corners ? step * static_cast<float>(i) : step * (static_cast<float>(i) + 0.5f) - 0.5f;
    if (!align_corners && src < 0.0f) src = 0.0f;
    int64_t i0 = static_cast<int64_t>(src);
    if (i0 > in - 1) i0 = in - 1;
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    float l1 = src - static_cast<float>(i0);
    if (l1 > 1.0f) l1 = 1.0f;
    i0s[i] = i0;
    i1s[i] = i1;
    // One tap at the last pixel: its weight is 1 and the second is unused.
    w0s[i] = i1 > i0 ? 1.0f - l1 : 1.0f;
    w1s[i] = i1 > i0 ? l1 : 0.0f;
  }
}

int32_t upsample_bilinear2d_vec_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                    size_t n) {
  Args a{ctx, args, n, "aten::upsample_bilinear2d.vec_out"};
  VecResample r;
  PTERON_CHECK_OK(read_vec_resample(a, true, float32_only, &r));
  const pteron_tensor* in = r.in;
  pteron_tensor* out = r.out;
  ResamplePlanes& P = r.P;
  const bool align_corners = r.align_corners;
  const double* scales = r.scales;
  PTERON_CHECK_OK(resize_planes(a, out, &P));
  if (P.N == 0 || P.C == 0) return PTERON_OK;
  const int64_t threads = pteron_parallel_threads() > 0 ? pteron_parallel_threads() : 1;
  ScratchPlan plan;
  // int64 index arrays are carved as float regions of twice the count.
  const size_t iy0 = plan.add(2 * P.Ho), iy1 = plan.add(2 * P.Ho), ix0 = plan.add(2 * P.Wo),
               ix1 = plan.add(2 * P.Wo), ily = plan.add(P.Ho), iw0 = plan.add(P.Wo),
               iw1 = plan.add(P.Wo), itmp = plan.add(P.W * threads);
  if (!plan.acquire(ctx)) return PTERON_ERROR_OUT_OF_MEMORY;
  int64_t* y0 = reinterpret_cast<int64_t*>(plan.get(iy0));
  int64_t* y1 = reinterpret_cast<int64_t*>(plan.get(iy1));
  int64_t* x0 = reinterpret_cast<int64_t*>(plan.get(ix0));
  int64_t* x1 = reinterpret_cast<int64_t*>(plan.get(ix1));
  float* ly = plan.get(ily);
  float* wx0 = plan.get(iw0);
  float* wx1 = plan.get(iw1);
  float* tmp = plan.get(itmp);
  // Rows: y0 / y1 / ly (the row weights' complement is recomputed in the
  // ISA loop; wx0 holds it until the columns overwrite it); columns: x0 /
  // x1 / wx0 / wx1.
  taps(P.H, P.Ho, align_corners, scales[0], y0, y1, wx0, ly);
  taps(P.W, P.Wo, align_corners, scales[1], x0, x1, wx0, wx1);
  const float* xd = static_cast<const float*>(in->data);
  float* yd = static_cast<float*>(out->data);
  const IsaOps& isa = ops();
  BilinearPlane base;
  base.W = P.W;
  base.is_h = P.is[2];
  base.is_w = P.is[3];
  base.Ho = P.Ho;
  base.Wo = P.Wo;
  base.os_h = P.os[2];
  base.os_w = P.os[3];
  base.y0 = y0;
  base.y1 = y1;
  base.x0 = x0;
  base.x1 = x1;
  base.ly = ly;
  base.wx0 = wx0;
  base.wx1 = wx1;
  // One tmp row per task slot: tasks are split into at most `threads` ranges.
  const int64_t planes = P.N * P.C;
  const int64_t per = ceil_div(planes, threads);
  parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      BilinearPlane q = base;
      q.tmp = tmp + t * P.W;
      const int64_t e = (t + 1) * per < planes ? (t + 1) * per : planes;
      for (int64_t p = t * per; p < e; ++p) {
        const int64_t b = p / P.C, c = p % P.C;
        q.in = xd + b * P.is[0] + c * P.is[1];
        q.out = yd + b * P.os[0] + c * P.os[1];
        isa.bilinear_plane(q);
      }
    }
  });
  return PTERON_OK;
}

// ---- nearest --------------------------------------------------------------------

int32_t upsample_nearest2d_vec_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                   size_t n) {
  Args a{ctx, args, n, "aten::upsample_nearest2d.vec_out"};
  VecResample r;
  PTERON_CHECK_OK(read_vec_resample(a, false, float32_only, &r));
  const pteron_tensor* in = r.in;
  pteron_tensor* out = r.out;
  ResamplePlanes& P = r.P;
  const double* scales = r.scales;
  PTERON_CHECK_OK(resize_planes(a, out, &P));
  if (P.N == 0 || P.C == 0) return PTERON_OK;
  ScratchPlan plan;
  const size_t ih = plan.add(2 * P.Ho), iw = plan.add(2 * P.Wo);
  if (!plan.acquire(ctx)) return PTERON_ERROR_OUT_OF_MEMORY;
  int64_t* hs = reinterpret_cast<int64_t*>(plan.get(ih));
  int64_t* ws = reinterpret_cast<int64_t*>(plan.get(iw));
  for (int64_t i = 0; i < P.Ho; ++i) hs[i] = nearest_source(i, P.H, P.Ho, scales[0]);
  for (int64_t i = 0; i < P.Wo; ++i) ws[i] = nearest_source(i, P.W, P.Wo, scales[1]) * P.is[3];
  const float* xd = static_cast<const float*>(in->data);
  float* yd = static_cast<float*>(out->data);
  const int64_t osh = P.os[2], osw = P.os[3];
  for_planes(P, P.Ho * P.Wo, [&](int64_t b, int64_t c) {
    const float* xp = xd + b * P.is[0] + c * P.is[1];
    float* yp = yd + b * P.os[0] + c * P.os[1];
    for (int64_t h = 0; h < P.Ho; ++h) {
      float* row = yp + h * osh;
      if (osw == 1 && h > 0 && hs[h] == hs[h - 1]) {
        std::memcpy(row, row - osh, static_cast<size_t>(P.Wo) * sizeof(float));
        continue;
      }
      const float* src = xp + hs[h] * P.is[2];
      if (osw == 1) {
        for (int64_t w = 0; w < P.Wo; ++w) row[w] = src[ws[w]];
      } else {
        for (int64_t w = 0; w < P.Wo; ++w) row[w * osw] = src[ws[w]];
      }
    }
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::upsample_bilinear2d", "vec_out", PTERON_OPT_KEY,
                         upsample_bilinear2d_vec_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::upsample_nearest2d", "vec_out", PTERON_OPT_KEY,
                         upsample_nearest2d_vec_out, PTERON_KERNEL_PRIORITY, 0})
