// SPDX-License-Identifier: BSD-3-Clause
// resample_checks.h - the shared argument reading and index rules of 2-D
// resampling (aten::upsample_nearest2d.vec_out,
// aten::upsample_bilinear2d.vec_out; read_planes also for
// aten::_adaptive_avg_pool2d.out): the
// input planes, output_size / scale_factors, ATen's source step
// (area_pixel_compute_scale) and nearest source index (header-only, private
// to the kernel libraries). kernels_portable's upsample.cpp and
// kernels_optimized's resample.cpp both read their arguments through it, so
// they accept the same programs and report the same errors.
#pragma once

#include <cmath>
#include <cstdint>

#include "arg_reading.h"
#include "kernel_util.h"
#include "tensor_checks.h"

namespace pteron::kern {

// A 4-D (or 3-D, N = 1) input and output as sizes plus element strides.
struct ResamplePlanes {
  int64_t N = 1, C = 0, H = 0, W = 0, Ho = 0, Wo = 0;
  int64_t is[4] = {0, 0, 0, 0};  // n, c, h, w strides of the input
  int64_t os[4] = {0, 0, 0, 0};  // of the output
  bool batched = true;
};

inline int32_t read_planes(const Args& a, const pteron_tensor* in, bool allow_3d,
                           ResamplePlanes* P) {
  if (in->dim != 4 && !(allow_3d && in->dim == 3))
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: expected a %s input, got rank %d", a.op,
                allow_3d ? "3-D or 4-D" : "4-D (N, C, H, W)", (int)in->dim);
  P->batched = in->dim == 4;
  const int32_t o = P->batched ? 1 : 0;
  P->N = P->batched ? in->sizes[0] : 1;
  P->C = in->sizes[o];
  P->H = in->sizes[o + 1];
  P->W = in->sizes[o + 2];
  P->is[0] = P->batched ? in->strides[0] : 0;
  for (int k = 0; k < 3; ++k) P->is[k + 1] = in->strides[o + k];
  return PTERON_OK;
}

inline int32_t resize_planes(const Args& a, pteron_tensor* out, ResamplePlanes* P) {
  if (P->Ho > (int64_t{1} << 31) || P->Wo > (int64_t{1} << 31))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: output size %lldx%lld is too large",
                a.op, (long long)P->Ho, (long long)P->Wo);
  int64_t sizes[4];
  int32_t k = 0;
  if (P->batched) sizes[k++] = P->N;
  sizes[k++] = P->C;
  sizes[k++] = P->Ho;
  sizes[k++] = P->Wo;
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out", out, sizes, k));
  const int32_t o = P->batched ? 1 : 0;
  P->os[0] = P->batched ? out->strides[0] : 0;
  for (int j = 0; j < 3; ++j) P->os[j + 1] = out->strides[o + j];
  return PTERON_OK;
}

inline int32_t same_dtype_out(const Args& a, const pteron_tensor* in, const pteron_tensor* out) {
  if (out->dtype != in->dtype)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: out dtype %s differs from input dtype %s", a.op, dtype_name(out->dtype),
                dtype_name(in->dtype));
  return PTERON_OK;
}

// The input / out pair of a resampling operator: input's dtype one the
// kernel computes in (`accepted`), out of the same dtype and not input.
inline int32_t check_resample_io(const Args& a, const pteron_tensor* in, const pteron_tensor* out,
                                 bool accepted) {
  if (!accepted) return unsupported_dtype(a.ctx, a.op, "input", in->dtype);
  PTERON_CHECK_OK(same_dtype_out(a, in, out));
  return reject_alias(a.ctx, a.op, "out", out, in);
}

// float[]? argument: *present false for None; else exactly `count` values.
inline int32_t opt_double_list(const Args& a, size_t i, const char* name, size_t count, double* out,
                               bool* present) {
  if (a.is_none(i)) {
    *present = false;
    return PTERON_OK;
  }
  if (i >= a.n || a.v[i]->tag != PTERON_VALUE_DOUBLE_LIST)
    return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: argument %zu ('%s') is not a float list or None", a.op, i, name);
  const size_t sz = a.v[i]->u.double_list.size;
  if (sz != count || !a.v[i]->u.double_list.data)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: %s must have %zu values, got %zu", a.op,
                name, count, sz);
  for (size_t k = 0; k < count; ++k) out[k] = a.v[i]->u.double_list.data[k];
  *present = true;
  return PTERON_OK;
}

// float? argument: *present false for None.
inline int32_t opt_double(const Args& a, size_t i, const char* name, double* out, bool* present) {
  *present = !a.is_none(i);
  if (!*present) return PTERON_OK;
  return a.real(i, name, out);
}

// The (output_size, scale_factors) pair of the .vec overloads: exactly one
// is given. Sets P->Ho/Wo and scales[] (0 where no scale factor applies).
inline int32_t vec_output_size(const Args& a, size_t size_i, size_t scale_i, ResamplePlanes* P,
                               double scales[2]) {
  const int64_t* os = nullptr;
  size_t on = 0;
  bool has_size = false, has_scales = false;
  PTERON_CHECK_OK(opt_int_list(a, size_i, "output_size", &os, &on, &has_size));
  PTERON_CHECK_OK(opt_double_list(a, scale_i, "scale_factors", 2, scales, &has_scales));
  if (has_size == has_scales)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: must specify exactly one of output_size and scale_factors", a.op);
  if (has_size) {
    if (on != 2 || !os)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: output_size must have 2 values, got %zu", a.op, on);
    P->Ho = os[0];
    P->Wo = os[1];
    scales[0] = scales[1] = 0;
  } else {
    const int64_t in[2] = {P->H, P->W};
    int64_t out[2];
    for (int k = 0; k < 2; ++k) {
      const double v = static_cast<double>(in[k]) * scales[k];
      if (!(scales[k] > 0) || !(v < 2147483648.0))
        return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: scale_factors[%d] = %g is not a usable positive scale", a.op, k,
                    scales[k]);
      out[k] = static_cast<int64_t>(v);
    }
    P->Ho = out[0];
    P->Wo = out[1];
  }
  if (P->Ho <= 0 || P->Wo <= 0)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: output size %lldx%lld should be greater than 0", a.op, (long long)P->Ho,
                (long long)P->Wo);
  if (P->H <= 0 || P->W <= 0)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: input spatial size %lldx%lld should be greater than 0", a.op, (long long)P->H,
                (long long)P->W);
  return PTERON_OK;
}

// ATen's area_pixel_compute_scale: source step per output pixel.
template <typename A>
inline A source_step(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? static_cast<A>(in - 1) / static_cast<A>(out - 1) : A(0);
  if (scale > 0) return static_cast<A>(1.0 / scale);
  return static_cast<A>(in) / static_cast<A>(out);
}

// ATen's nearest source index (floor(dst * step), computed in float).
inline int64_t nearest_source(int64_t dst, int64_t in, int64_t out, double scale) {
  if (in == out) return dst;
  if (out == 2 * in) return dst >> 1;
  const float step = scale > 0 ? static_cast<float>(1.0 / scale)
                               : static_cast<float>(in) / static_cast<float>(out);
  const int64_t s = static_cast<int64_t>(std::floor(static_cast<float>(dst) * step));
  return s < in - 1 ? s : in - 1;
}

// The arguments of upsample_nearest2d.vec_out(Tensor input,
// SymInt[]? output_size, float[]? scale_factors, *, Tensor(a!) out) and
// upsample_bilinear2d.vec_out(Tensor input, SymInt[]? output_size,
// bool align_corners, float[]? scale_factors, *, Tensor(a!) out).
struct VecResample {
  pteron_tensor *in = nullptr, *out = nullptr;
  bool align_corners = false;  // bilinear only
  ResamplePlanes P;
  double scales[2] = {0, 0};  // 0 where no scale factor applies
};

// Reads and checks them: a 4-D input of a dtype `accepts` takes
// (check_resample_io), exactly one of output_size and scale_factors
// (vec_output_size). out is left to the caller to resize (resize_planes).
inline int32_t read_vec_resample(const Args& a, bool bilinear, bool (*accepts)(int32_t),
                                 VecResample* r) {
  PTERON_CHECK_OK(a.arity(bilinear ? 5 : 4));
  PTERON_CHECK_OK(tensor_arg(a, 0, "input", &r->in));
  if (bilinear) PTERON_CHECK_OK(a.boolean(2, "align_corners", &r->align_corners));
  PTERON_CHECK_OK(a.tensor(bilinear ? 4 : 3, "out", &r->out));
  PTERON_CHECK_OK(check_resample_io(a, r->in, r->out, accepts(r->in->dtype)));
  PTERON_CHECK_OK(read_planes(a, r->in, false, &r->P));
  return vec_output_size(a, 1, bilinear ? 3 : 2, &r->P, r->scales);
}

}  // namespace pteron::kern
