// SPDX-License-Identifier: BSD-3-Clause
// pool_checks.h - the shared argument reading of 2-D pooling
// (aten::max_pool2d_with_indices.out, aten::avg_pool2d.out): input rank,
// kernel / stride / padding / dilation lists, ATen's output-size rule
// (pooling_output_shape, with ceil_mode) and the resize of the outs
// (header-only, private to the kernel libraries). kernels_portable's pool.cpp
// and kernels_optimized's pool.cpp both read their arguments through it, so
// they accept the same programs and report the same errors.
#pragma once

#include <cstdint>

#include "arg_reading.h"
#include "kernel_util.h"
#include "tensor_checks.h"

namespace pteron::kern {

// A (C, H, W) or (N, C, H, W) input: sizes, the output plane and the
// input's element strides (is_n 0 when unbatched).
struct PoolGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0, Ho = 0, Wo = 0;
  int64_t k[2], s[2], p[2], d[2];
  int64_t is_n = 0, is_c = 0, is_h = 0, is_w = 0;
  bool batched = false;
};

inline int64_t pool_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// ATen's pooling_output_shape.
inline int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil,
                           bool ceil_mode) {
  int64_t out =
      pool_floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Parses the common arguments. `dilation_index` < 0: no dilation argument.
inline int32_t parse_pool(const Args& a, const pteron_tensor* self, size_t ks_i, size_t stride_i,
                          size_t pad_i, int64_t dilation_index, bool ceil_mode, PoolGeometry* P) {
  if (self->dim != 3 && self->dim != 4)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: expected a 3-D or 4-D (batch mode) input, got rank %d", a.op, (int)self->dim);
  P->batched = self->dim == 4;
  const int32_t o = P->batched ? 1 : 0;
  P->N = P->batched ? self->sizes[0] : 1;
  P->C = self->sizes[o];
  P->H = self->sizes[o + 1];
  P->W = self->sizes[o + 2];
  if (P->C == 0 || P->H == 0 || P->W == 0)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: input may be empty only in its batch dim, got sizes "
                "C=%lld H=%lld W=%lld",
                a.op, (long long)P->C, (long long)P->H, (long long)P->W);
  P->is_n = P->batched ? self->strides[0] : 0;
  P->is_c = self->strides[o];
  P->is_h = self->strides[o + 1];
  P->is_w = self->strides[o + 2];

  PTERON_CHECK_OK(spatial_params(a, ks_i, "kernel_size", 2, 1, P->k));
  {
    const int64_t* sd = nullptr;
    size_t sn = 0;
    PTERON_CHECK_OK(a.int_list(stride_i, "stride", &sd, &sn));
    if (sn == 0) {
      P->s[0] = P->k[0];
      P->s[1] = P->k[1];
    } else {
      PTERON_CHECK_OK(spatial_params(a, stride_i, "stride", 2, 1, P->s));
    }
  }
  PTERON_CHECK_OK(spatial_params(a, pad_i, "padding", 2, 0, P->p));
  if (dilation_index >= 0) {
    PTERON_CHECK_OK(spatial_params(a, static_cast<size_t>(dilation_index), "dilation", 2, 1, P->d));
  } else {
    P->d[0] = P->d[1] = 1;
  }
  for (int i = 0; i < 2; ++i)
    if (P->p[i] > P->k[i] / 2)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: pad should be at most half of kernel size, but got "
                  "pad=%lld and kernel_size=%lld",
                  a.op, (long long)P->p[i], (long long)P->k[i]);
  P->Ho = pooled_size(P->H, P->k[0], P->p[0], P->s[0], P->d[0], ceil_mode);
  P->Wo = pooled_size(P->W, P->k[1], P->p[1], P->s[1], P->d[1], ceil_mode);
  if (P->Ho < 1 || P->Wo < 1)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: given input size %lldx%lldx%lld, the calculated output "
                "size %lldx%lldx%lld is too small",
                a.op, (long long)P->C, (long long)P->H, (long long)P->W, (long long)P->C,
                (long long)P->Ho, (long long)P->Wo);
  return PTERON_OK;
}

inline int32_t resize_pooled(const Args& a, pteron_tensor* t, const char* name,
                             const PoolGeometry& P) {
  int64_t sizes[4];
  int32_t k = 0;
  if (P.batched) sizes[k++] = P.N;
  sizes[k++] = P.C;
  sizes[k++] = P.Ho;
  sizes[k++] = P.Wo;
  return resize_out(a.ctx, a.op, name, t, sizes, k);
}

// max_pool2d_with_indices.out(Tensor self, int[2] kernel_size,
//   int[2] stride=[], int[2] padding=0, int[2] dilation=1,
//   bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices):
// reads and checks the arguments (self of a supported dtype but bool, or
// float32 alone when float32_only; out of self's dtype; indices int64) and
// resizes out and indices.
struct MaxPoolOperands {
  pteron_tensor *self = nullptr, *out = nullptr, *indices = nullptr;
  PoolGeometry P;
};

inline int32_t read_max_pool2d(const Args& a, bool float32_only, MaxPoolOperands* m) {
  PTERON_CHECK_OK(a.arity(8));
  bool ceil_mode = false;
  PTERON_CHECK_OK(tensor_arg(a, 0, "self", &m->self));
  PTERON_CHECK_OK(a.boolean(5, "ceil_mode", &ceil_mode));
  PTERON_CHECK_OK(a.tensor(6, "out", &m->out));
  PTERON_CHECK_OK(a.tensor(7, "indices", &m->indices));
  const int32_t dt = m->self->dtype;
  if (float32_only ? dt != PTERON_DTYPE_FLOAT32
                   : (!is_supported_half(dt) || dt == PTERON_DTYPE_BOOL))
    return unsupported_dtype(a.ctx, a.op, "self", dt);
  if (m->out->dtype != dt)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out dtype %s differs from self dtype %s",
                a.op, dtype_name(m->out->dtype), dtype_name(dt));
  if (m->indices->dtype != PTERON_DTYPE_INT64)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: indices must be int64, got %s", a.op,
                dtype_name(m->indices->dtype));
  PTERON_CHECK_OK(parse_pool(a, m->self, 1, 2, 3, 4, ceil_mode, &m->P));
  PTERON_CHECK_OK(resize_pooled(a, m->out, "out", m->P));
  return resize_pooled(a, m->indices, "indices", m->P);
}

struct PoolOutStrides {
  int64_t n = 0, c = 0, h = 0, w = 0;
};
inline PoolOutStrides pool_out_strides(const pteron_tensor* t, bool batched) {
  const int32_t o = batched ? 1 : 0;
  return {batched ? t->strides[0] : 0, t->strides[o], t->strides[o + 1], t->strides[o + 2]};
}

}  // namespace pteron::kern
