// SPDX-License-Identifier: BSD-3-Clause
// upsample.cpp - portable 2-D resampling: upsample_nearest2d.vec_out,
// upsample_bilinear2d.vec_out, _upsample_bilinear2d_aa.out and
// _adaptive_avg_pool2d.out, on (N, C, H, W) inputs (adaptive pooling also
// takes (C, H, W)) in any dim order.
//
// Index and weight rules are ATen's CPU ones: an explicit scale factor
// gives the source step 1/scale (else in/out); nearest takes
// floor(dst * step) computed in float; bilinear maps dst to
// (dst + 0.5) * step - 0.5 clamped at 0 (or dst * (in-1)/(out-1) with
// align_corners); the anti-aliased variant widens the triangle filter by
// the step when downsampling; adaptive pooling averages
// [floor(o*in/out), ceil((o+1)*in/out)). float16 / bfloat16 compute their
// indices and weights in float (PyTorch's opmath type), accumulate in double
// and round once per output element.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernel_util.h"
#include "arg_reading.h"
#include "resample_checks.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

// The dtypes nearest-neighbour copies (the interpolating operators take
// float32 / float64 / float16 / bfloat16 through kern::dispatch_float_half).
template <typename F>
bool dispatch_resample(int32_t dt, F&& f) {
  switch (dt) {
    case PTERON_DTYPE_FLOAT32: f(float{}); return true;
    case PTERON_DTYPE_FLOAT64: f(double{}); return true;
    case PTERON_DTYPE_FLOAT16: f(kern::Half{}); return true;
    case PTERON_DTYPE_BFLOAT16: f(kern::BFloat16{}); return true;
    case PTERON_DTYPE_UINT8: f(uint8_t{}); return true;
    case PTERON_DTYPE_INT8: f(int8_t{}); return true;
    case PTERON_DTYPE_INT16: f(int16_t{}); return true;
    case PTERON_DTYPE_INT32: f(int32_t{}); return true;
    case PTERON_DTYPE_INT64: f(int64_t{}); return true;
    default: return false;
  }
}

// The shared reading and index rules (resample_checks.h).
using Planes = kern::ResamplePlanes;
using kern::nearest_source;
using kern::opt_double;
using kern::read_planes;
using kern::resize_planes;
using kern::same_dtype_out;
using kern::source_step;
using kern::vec_output_size;

// ---- upsample_nearest2d.vec_out(Tensor input, SymInt[]? output_size,
//   float[]? scale_factors, *, Tensor(a!) out) -------------------------------

int32_t upsample_nearest2d_vec_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                   size_t n) {
  Args a{ctx, args, n, "aten::upsample_nearest2d.vec_out"};
  kern::VecResample r;
  PTERON_CHECK_OK(kern::read_vec_resample(
      a, false, [](int32_t dt) { return dispatch_resample(dt, [](auto) {}); }, &r));
  const pteron_tensor* in = r.in;
  pteron_tensor* out = r.out;
  Planes& P = r.P;
  const double* scales = r.scales;
  PTERON_CHECK_OK(resize_planes(a, out, &P));
  if (P.N == 0 || P.C == 0) return PTERON_OK;
  int64_t* hs = static_cast<int64_t*>(pteron_kernel_scratch(ctx, sizeof(int64_t) * (P.Ho + P.Wo)));
  if (!hs) return fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: no scratch for the indices", a.op);
  int64_t* ws = hs + P.Ho;
  for (int64_t i = 0; i < P.Ho; ++i) hs[i] = nearest_source(i, P.H, P.Ho, scales[0]) * P.is[2];
  for (int64_t i = 0; i < P.Wo; ++i) ws[i] = nearest_source(i, P.W, P.Wo, scales[1]) * P.is[3];
  dispatch_resample(in->dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(in->data);
    T* y = static_cast<T*>(out->data);
    for (int64_t b = 0; b < P.N; ++b)
      for (int64_t c = 0; c < P.C; ++c) {
        const T* xp = x + b * P.is[0] + c * P.is[1];
        T* yp = y + b * P.os[0] + c * P.os[1];
        for (int64_t h = 0; h < P.Ho; ++h)
          for (int64_t w = 0; w < P.Wo; ++w) yp[h * P.os[2] + w * P.os[3]] = xp[hs[h] + ws[w]];
      }
  });
  return PTERON_OK;
}

// ---- bilinear: upsample_bilinear2d.vec_out(Tensor input,
//   SymInt[]? output_size, bool align_corners, float[]? scale_factors, *,
//   Tensor(a!) out) and _upsample_bilinear2d_aa.out(Tensor self,
//   SymInt[2] output_size, bool align_corners, float? scales_h=None,
//   float? scales_w=None, *, Tensor(a!) out) ---------------------------------

// Separable weights along one axis: output i reads `count` consecutive
// source pixels from first[i] (in input element offsets along the axis)
// with weights wt[i * max_count ...].
struct Taps {
  int64_t max_count = 0;
  int64_t* first = nullptr;
  int64_t* count = nullptr;
  double* wt = nullptr;
};

// Plain bilinear: two taps.
template <typename A>
void bilinear_taps(int64_t in, int64_t out, bool align_corners, double scale, Taps* t) {
  const A step = source_step<A>(in, out, align_corners, scale);
  for (int64_t i = 0; i < out; ++i) {
    A src = align_corners ? step * static_cast<A>(i)
                          : std::max(step * (static_cast<A>(i) + A(0.5)) - A(0.5), A(0));
    const int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
    const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    const A l1 = std::min(src - static_cast<A>(i0), A(1));
    t->first[i] = i0;
    t->count[i] = i1 > i0 ? 2 : 1;
    t->wt[i * 2] = i1 > i0 ? static_cast<double>(A(1) - l1) : 1.0;
    t->wt[i * 2 + 1] = static_cast<double>(l1);
  }
}

// Anti-aliased bilinear: the triangle filter stretched by the step when
// downsampling, weights normalised to sum 1.
template <typename A>
void aa_taps(int64_t in, int64_t out, bool align_corners, double scale, Taps* t) {
  const A step = source_step<A>(in, out, align_corners, scale);
  const A support = step >= A(1) ? step : A(1);
  const A inv = step >= A(1) ? A(1) / step : A(1);
  for (int64_t i = 0; i < out; ++i) {
    const A center = step * (static_cast<A>(i) + A(0.5));
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + A(0.5)), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + A(0.5)), in);
    const int64_t cnt = std::min<int64_t>(std::max<int64_t>(hi - lo, 0), t->max_count);
    A total = 0;
    A w[64];
    for (int64_t j = 0; j < cnt; ++j) {
      const A x = (static_cast<A>(j + lo) - center + A(0.5)) * inv;
      const A ax = x < 0 ? -x : x;
      w[j] = ax < A(1) ? A(1) - ax : A(0);
      total += w[j];
    }
    for (int64_t j = 0; j < cnt; ++j)
      t->wt[i * t->max_count + j] = static_cast<double>(total != A(0) ? w[j] / total : w[j]);
    t->first[i] = lo;
    t->count[i] = cnt;
  }
}

template <typename T>
void apply_taps(const Planes& P, const T* x, T* y, const Taps& th, const Taps& tw) {
  for (int64_t b = 0; b < P.N; ++b)
    for (int64_t c = 0; c < P.C; ++c) {
      const T* xp = x + b * P.is[0] + c * P.is[1];
      T* yp = y + b * P.os[0] + c * P.os[1];
      for (int64_t h = 0; h < P.Ho; ++h) {
        const double* wh = th.wt + h * th.max_count;
        for (int64_t w = 0; w < P.Wo; ++w) {
          const double* ww = tw.wt + w * tw.max_count;
          double acc = 0;
          for (int64_t i = 0; i < th.count[h]; ++i) {
            const T* row = xp + (th.first[h] + i) * P.is[2];
            double r = 0;
            for (int64_t j = 0; j < tw.count[w]; ++j)
              r += ww[j] * static_cast<double>(row[(tw.first[w] + j) * P.is[3]]);
            acc += wh[i] * r;
          }
          yp[h * P.os[2] + w * P.os[3]] = static_cast<T>(acc);
        }
      }
    }
}

int32_t bilinear_common(const Args& a, pteron_tensor* in, pteron_tensor* out, Planes& P,
                        bool align_corners, const double scales[2], bool antialias) {
  PTERON_CHECK_OK(resize_planes(a, out, &P));
  if (P.N == 0 || P.C == 0) return PTERON_OK;
  auto max_taps = [&](int64_t isz, int64_t osz, double sc) -> int64_t {
    if (!antialias) return 2;
    const double step = source_step<double>(isz, osz, align_corners, sc);
    const double support = step >= 1 ? step : 1;
    return static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  };
  const int64_t mh = max_taps(P.H, P.Ho, scales[0]), mw = max_taps(P.W, P.Wo, scales[1]);
  if (mh > 64 || mw > 64)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: downsampling %lldx%lld to %lldx%lld needs more than 64 filter taps", a.op,
                (long long)P.H, (long long)P.W, (long long)P.Ho, (long long)P.Wo);
  const size_t nint = static_cast<size_t>(2 * (P.Ho + P.Wo));
  const size_t ndbl = static_cast<size_t>(P.Ho * mh + P.Wo * mw);
  char* buf = static_cast<char*>(
      pteron_kernel_scratch(a.ctx, nint * sizeof(int64_t) + ndbl * sizeof(double)));
  if (!buf) return fail(a.ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: no scratch for the weights", a.op);
  int64_t* ib = reinterpret_cast<int64_t*>(buf);
  double* db = reinterpret_cast<double*>(buf + nint * sizeof(int64_t));
  Taps th{mh, ib, ib + P.Ho, db};
  Taps tw{mw, ib + 2 * P.Ho, ib + 2 * P.Ho + P.Wo, db + P.Ho * mh};
  kern::dispatch_float_half(in->dtype, [&](auto tag) {
    using T = decltype(tag);
    using A = kern::compute_type_t<T>;  // index math type: float for the 16-bit types
    if (antialias) {
      aa_taps<A>(P.H, P.Ho, align_corners, scales[0], &th);
      aa_taps<A>(P.W, P.Wo, align_corners, scales[1], &tw);
    } else {
      bilinear_taps<A>(P.H, P.Ho, align_corners, scales[0], &th);
      bilinear_taps<A>(P.W, P.Wo, align_corners, scales[1], &tw);
    }
    apply_taps<T>(P, static_cast<const T*>(in->data), static_cast<T*>(out->data), th, tw);
  });
  return PTERON_OK;
}

bool float_half(int32_t dt) { return kern::dispatch_float_half(dt, [](auto) {}); }

int32_t check_float_input(const Args& a, const pteron_tensor* in, const pteron_tensor* out) {
  return kern::check_resample_io(a, in, out, float_half(in->dtype));
}

int32_t upsample_bilinear2d_vec_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                    size_t n) {
  Args a{ctx, args, n, "aten::upsample_bilinear2d.vec_out"};
  kern::VecResample r;
  PTERON_CHECK_OK(kern::read_vec_resample(a, true, float_half, &r));
  return bilinear_common(a, r.in, r.out, r.P, r.align_corners, r.scales, false);
}

int32_t upsample_bilinear2d_aa_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                   size_t n) {
  Args a{ctx, args, n, "aten::_upsample_bilinear2d_aa.out"};
  PTERON_CHECK_OK(a.arity(6));
  pteron_tensor *in = nullptr, *out = nullptr;
  bool align_corners = false, has_h = false, has_w = false;
  double scales[2] = {0, 0};
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &in));
  PTERON_CHECK_OK(a.boolean(2, "align_corners", &align_corners));
  PTERON_CHECK_OK(opt_double(a, 3, "scales_h", &scales[0], &has_h));
  PTERON_CHECK_OK(opt_double(a, 4, "scales_w", &scales[1], &has_w));
  PTERON_CHECK_OK(a.tensor(5, "out", &out));
  PTERON_CHECK_OK(check_float_input(a, in, out));
  if (!has_h) scales[0] = 0;
  if (!has_w) scales[1] = 0;
  Planes P;
  PTERON_CHECK_OK(read_planes(a, in, false, &P));
  int64_t sz[2] = {0, 0};
  PTERON_CHECK_OK(kern::spatial_params(a, 1, "output_size", 2, 1, sz));
  P.Ho = sz[0];
  P.Wo = sz[1];
  if (P.H <= 0 || P.W <= 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: input spatial size %lldx%lld should be greater than 0", a.op, (long long)P.H,
                (long long)P.W);
  return bilinear_common(a, in, out, P, align_corners, scales, true);
}

// ---- _adaptive_avg_pool2d.out(Tensor self, SymInt[2] output_size, *,
//   Tensor(a!) out) -----------------------------------------------------------

int32_t adaptive_avg_pool2d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::_adaptive_avg_pool2d.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *in = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &in));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(check_float_input(a, in, out));
  Planes P;
  PTERON_CHECK_OK(read_planes(a, in, true, &P));
  int64_t sz[2] = {0, 0};
  PTERON_CHECK_OK(kern::spatial_params(a, 1, "output_size", 2, 0, sz));
  P.Ho = sz[0];
  P.Wo = sz[1];
  for (int32_t d = P.batched ? 1 : 0; d < in->dim; ++d)
    if (in->sizes[d] == 0)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: expected input to have non-zero size for non-batch dims, got size 0 at "
                  "dim %d",
                  a.op, (int)d);
  PTERON_CHECK_OK(resize_planes(a, out, &P));
  if (P.N == 0 || P.Ho == 0 || P.Wo == 0) return PTERON_OK;
  kern::dispatch_float_half(in->dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(in->data);
    T* y = static_cast<T*>(out->data);
    for (int64_t b = 0; b < P.N; ++b)
      for (int64_t c = 0; c < P.C; ++c) {
        const T* xp = x + b * P.is[0] + c * P.is[1];
        T* yp = y + b * P.os[0] + c * P.os[1];
        for (int64_t oh = 0; oh < P.Ho; ++oh) {
          const int64_t h0 = oh * P.H / P.Ho, h1 = ((oh + 1) * P.H + P.Ho - 1) / P.Ho;
          for (int64_t ow = 0; ow < P.Wo; ++ow) {
            const int64_t w0 = ow * P.W / P.Wo, w1 = ((ow + 1) * P.W + P.Wo - 1) / P.Wo;
            double sum = 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w)
                sum += static_cast<double>(xp[h * P.is[2] + w * P.is[3]]);
            yp[oh * P.os[2] + ow * P.os[3]] =
                static_cast<T>(sum / static_cast<double>((h1 - h0) * (w1 - w0)));
          }
        }
      }
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::upsample_nearest2d", "vec_out", nullptr, upsample_nearest2d_vec_out,
                         PTERON_KERNEL_PRIORITY, 0},
                        {"aten::upsample_bilinear2d", "vec_out", nullptr,
                         upsample_bilinear2d_vec_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::_upsample_bilinear2d_aa", "out", nullptr,
                         upsample_bilinear2d_aa_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::_adaptive_avg_pool2d", "out", nullptr, adaptive_avg_pool2d_out,
                         PTERON_KERNEL_PRIORITY, 0})
