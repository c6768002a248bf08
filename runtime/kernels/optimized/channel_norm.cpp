// SPDX-License-Identifier: BSD-3-Clause
// channel_norm.cpp - optimized float32
// aten::_native_batch_norm_legit_no_training.out (inference batch norm) and
// aten::native_group_norm.out.
//
// Checks: channel_norm_checks.h, the same as kernels_portable's. Batch norm
// folds each channel into y = x * scale + shift (scale = weight /
// sqrt(running_var + eps), shift = bias - running_mean * scale, computed in
// double and rounded once) and runs it as one vectorised loop per (n, c)
// plane of a contiguous NCHW tensor, or per pixel (a vector of C channels)
// of a channels-last one. Group norm takes each group's mean and variance in
// two vectorised passes (block sums in double) over its contiguous channels,
// then the same per-plane affine loop. Any other dim order runs a strided
// loop with the same arithmetic. Planes, pixels and groups split over the
// thread pool.
#include <cmath>
#include <cstdint>

#include "opt_util.h"
#include "arg_reading.h"
#include "channel_norm_checks.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

constexpr int64_t kGrain = 16384;  // elements per task, at least

float value_at(const pteron_tensor* t, int64_t c) {
  return static_cast<const float*>(t->data)[c * t->strides[0]];
}

// Dims [2, dim) of t as one run: *hw elements with element stride *st.
bool spatial_run(const pteron_tensor* t, int64_t* hw, int64_t* st) {
  return collapse(t, 2, t->dim, hw, st);
}

// y[n, c, ...] = x[n, c, ...] * scale + shift for any strides.
void affine_strided(const pteron_tensor* x, pteron_tensor* y, int64_t n, int64_t c, float scale,
                    float shift) {
  const View src = sub_view(x, 2, n * x->strides[0] + c * x->strides[1]);
  const View dst = sub_view(y, 2, n * y->strides[0] + c * y->strides[1]);
  const float* px = static_cast<const float*>(x->data);
  float* py = static_cast<float*>(y->data);
  zip_offsets(src, dst, [&](int64_t s, int64_t d) { py[d] = px[s] * scale + shift; });
}

// Applies per-channel scale / shift (C floats each) to every element.
void apply_channels(const pteron_tensor* input, pteron_tensor* out, const float* scale,
                    const float* shift) {
  const int64_t N = input->sizes[0], C = input->sizes[1];
  const float* x = static_cast<const float*>(input->data);
  float* y = static_cast<float*>(out->data);
  const IsaOps& isa = ops();
  int64_t hw = 0, xs = 0, hw2 = 0, ys = 0;
  const bool runs = spatial_run(input, &hw, &xs) && spatial_run(out, &hw2, &ys);
  const int64_t x0 = input->strides[0], x1 = input->strides[1];
  const int64_t y0 = out->strides[0], y1 = out->strides[1];
  if (runs && hw > 1 && xs == 1 && ys == 1) {
    // NCHW: one contiguous plane per (n, c).
    const int64_t grain = hw >= kGrain ? 1 : kGrain / hw;
    parallel_for(0, N * C, grain, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n = p / C, c = p % C;
        isa.affine(x + n * x0 + c * x1, y + n * y0 + c * y1, hw, scale[c], shift[c]);
      }
    });
    return;
  }
  if (runs && (C <= 1 || (x1 == 1 && y1 == 1)) && (hw <= 1 || (xs == C && ys == C))) {
    // Channels-last (or no spatial dims): one vector of C channels per pixel.
    const int64_t px = N * hw;
    const int64_t grain = C >= kGrain ? 1 : kGrain / C;
    parallel_for(0, px, grain, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n = p / hw, s = p % hw;
        isa.affine_vec(x + n * x0 + s * xs, y + n * y0 + s * ys, C, scale, shift);
      }
    });
    return;
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) affine_strided(input, out, n, c, scale[c], shift[c]);
}

int32_t batch_norm_no_training_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                   size_t n) {
  Args a{ctx, args, n, "aten::_native_batch_norm_legit_no_training.out"};
  ChannelNormOperands p;
  PTERON_CHECK_OK(read_batch_norm_no_training(a, &p));
  // Registered for float32 (PTERON_OPT_KEY); float64 is portable's.
  if (p.input->dtype != PTERON_DTYPE_FLOAT32)
    return unsupported_dtype(ctx, a.op, "input", p.input->dtype);
  if (numel(p.input) == 0) return PTERON_OK;
  ScratchPlan plan;
  const size_t is = plan.add(p.C), ih = plan.add(p.C);
  if (!plan.acquire(ctx)) return PTERON_ERROR_OUT_OF_MEMORY;
  float* scale = plan.get(is);
  float* shift = plan.get(ih);
  for (int64_t c = 0; c < p.C; ++c) {
    const double invstd = 1.0 / std::sqrt(static_cast<double>(value_at(p.var, c)) + p.eps);
    const double w = p.weight ? value_at(p.weight, c) : 1.0;
    const double b = p.bias ? value_at(p.bias, c) : 0.0;
    const double sc = invstd * w;
    scale[c] = static_cast<float>(sc);
    shift[c] = static_cast<float>(b - static_cast<double>(value_at(p.mean, c)) * sc);
  }
  apply_channels(p.input, p.out0, scale, shift);
  return PTERON_OK;
}

// ---- group norm ----------------------------------------------------------------

int32_t group_norm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::native_group_norm.out"};
  ChannelNormOperands p;
  PTERON_CHECK_OK(read_group_norm(a, &p));
  pteron_tensor *input = p.input, *out0 = p.out0;
  if (input->dtype != PTERON_DTYPE_FLOAT32)
    return unsupported_dtype(ctx, a.op, "input", input->dtype);
  const int64_t N = p.N, C = p.C, G = p.group, D = C / G, HxW = p.HxW;
  if (N == 0) return PTERON_OK;
  float* mean_out = static_cast<float*>(p.out1->data);
  float* rstd_out = static_cast<float*>(p.out2->data);
  const int64_t m0 = p.out1->strides[0], m1 = p.out1->strides[1];
  const int64_t r0 = p.out2->strides[0], r1 = p.out2->strides[1];
  const float* x = static_cast<const float*>(input->data);
  float* y = static_cast<float*>(out0->data);
  const IsaOps& isa = ops();
  int64_t hw = 0, xs = 0, hw2 = 0, ys = 0;
  // Contiguous NCHW-like: each group's D channels are one run of D * HxW.
  const bool dense = spatial_run(input, &hw, &xs) && spatial_run(out0, &hw2, &ys) &&
                     (HxW <= 1 || (xs == 1 && ys == 1)) &&
                     (D <= 1 || (input->strides[1] == HxW && out0->strides[1] == HxW));
  const int64_t cnt = D * HxW;
  auto channel_affine = [&](int64_t b, int64_t g, double mean, double rstd, bool fast) {
    for (int64_t c = g * D; c < (g + 1) * D; ++c) {
      const double w = p.weight ? value_at(p.weight, c) : 1.0;
      const double bb = p.bias ? value_at(p.bias, c) : 0.0;
      const float sc = static_cast<float>(rstd * w);
      const float sh = static_cast<float>(bb - mean * rstd * w);
      if (fast)
        isa.affine(x + b * input->strides[0] + c * input->strides[1],
                   y + b * out0->strides[0] + c * out0->strides[1], HxW, sc, sh);
      else
        affine_strided(input, out0, b, c, sc, sh);
    }
  };
  const int64_t grain = cnt >= kGrain ? 1 : (cnt > 0 ? kGrain / cnt : N * G);
  parallel_for(0, N * G, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / G, g = t % G;
      double sum = 0, m2 = 0;
      if (dense) {
        isa.moments(x + b * input->strides[0] + g * D * input->strides[1], cnt, &sum, &m2);
      } else {
        for (int64_t c = g * D; c < (g + 1) * D; ++c)
          for_each_offset(sub_view(input, 2, b * input->strides[0] + c * input->strides[1]),
                          [&](int64_t off) { sum += x[off]; });
        const double mu = cnt ? sum / static_cast<double>(cnt) : 0.0;
        for (int64_t c = g * D; c < (g + 1) * D; ++c)
          for_each_offset(sub_view(input, 2, b * input->strides[0] + c * input->strides[1]),
                          [&](int64_t off) {
                            const double d = x[off] - mu;
                            m2 += d * d;
                          });
      }
      const double mean = cnt ? sum / static_cast<double>(cnt) : 0.0;
      const double var = cnt ? m2 / static_cast<double>(cnt) : 0.0;
      const double rstd = 1.0 / std::sqrt(var + p.eps);
      channel_affine(b, g, mean, rstd, dense);
      mean_out[b * m0 + g * m1] = static_cast<float>(mean);
      rstd_out[b * r0 + g * r1] = static_cast<float>(rstd);
    }
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::_native_batch_norm_legit_no_training", "out", PTERON_OPT_KEY,
                         batch_norm_no_training_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::native_group_norm", "out", PTERON_OPT_KEY, group_norm_out,
                         PTERON_KERNEL_PRIORITY, 0})
