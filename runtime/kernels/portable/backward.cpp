// SPDX-License-Identifier: BSD-3-Clause
// backward.cpp - portable gradients: aten::max_pool2d_with_indices_backward
// .grad_input and convolution_backward.out (non-transposed, 1-3 spatial
// dims). float32 and float64, accumulated in double, any dim order.
//
// max pooling: each grad_output element is added to the input position its
// index names (h * W + w within the plane). convolution: every
// (output position, kernel tap) pair that lands inside the input adds
// grad_output * weight to grad_input, grad_output * input to grad_weight,
// and grad_output to grad_bias; output_mask picks which outs are written.
#include <cmath>
#include <cstdint>

#include "kernel_util.h"
#include "arg_reading.h"
#include "strided_views.h"
#include "tensor_checks.h"

#include "real_access.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

// float32 or float64 only, computed in double (real_access.h).
using pteron::kern::real::is_float_dtype;
using pteron::kern::real::load;
using pteron::kern::real::store;

// Sets every element of t to zero (any dim order).
void zero(pteron_tensor* t) {
  kern::for_each_offset(kern::view_of(t), [&](int64_t off) { store(t, off, 0.0); });
}

bool same_shape(const pteron_tensor* a, const pteron_tensor* b) {
  if (a->dim != b->dim) return false;
  for (int32_t i = 0; i < a->dim; ++i)
    if (a->sizes[i] != b->sizes[i]) return false;
  return true;
}

// ---- max_pool2d_with_indices_backward.grad_input(Tensor grad_output,
//   Tensor self, int[2] kernel_size, int[2] stride, int[2] padding,
//   int[2] dilation, bool ceil_mode, Tensor indices, *,
//   Tensor(a!) grad_input) ----------------------------------------------------

int32_t max_pool2d_backward(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::max_pool2d_with_indices_backward.grad_input"};
  PTERON_CHECK_OK(a.arity(9));
  pteron_tensor *go = nullptr, *self = nullptr, *indices = nullptr, *gi = nullptr;
  bool ceil_mode = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "grad_output", &go));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "self", &self));
  int64_t k[2], s[2], p[2], d[2];
  PTERON_CHECK_OK(kern::spatial_params(a, 2, "kernel_size", 2, 1, k));
  {
    const int64_t* sd = nullptr;
    size_t sn = 0;
    PTERON_CHECK_OK(a.int_list(3, "stride", &sd, &sn));
    if (sn == 0) {
      s[0] = k[0];
      s[1] = k[1];
    } else {
      PTERON_CHECK_OK(kern::spatial_params(a, 3, "stride", 2, 1, s));
    }
  }
  PTERON_CHECK_OK(kern::spatial_params(a, 4, "padding", 2, 0, p));
  PTERON_CHECK_OK(kern::spatial_params(a, 5, "dilation", 2, 1, d));
  PTERON_CHECK_OK(a.boolean(6, "ceil_mode", &ceil_mode));
  PTERON_CHECK_OK(kern::tensor_arg(a, 7, "indices", &indices));
  PTERON_CHECK_OK(a.tensor(8, "grad_input", &gi));
  const int32_t dt = self->dtype;
  if (!is_float_dtype(dt)) return kern::unsupported_dtype(ctx, a.op, "self", dt);
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, go, "grad_output", dt));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, gi, "grad_input", dt));
  if (indices->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: indices must be int64, got %s", a.op,
                kern::dtype_name(indices->dtype));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "grad_input", gi, go, self, indices));
  if (self->dim != 3 && self->dim != 4)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: expected a 3-D or 4-D (batch mode) self, got rank %d", a.op, (int)self->dim);
  if (!same_shape(go, indices) || go->dim != self->dim)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: grad_output and indices must have the same shape and self's rank", a.op);
  const int32_t o = self->dim == 4 ? 1 : 0;
  for (int32_t i = 0; i <= o; ++i)
    if (go->sizes[i] != self->sizes[i])
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: grad_output size %lld at dim %d differs from self's %lld", a.op,
                  (long long)go->sizes[i], (int)i, (long long)self->sizes[i]);
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "grad_input", gi, self->sizes, self->dim));
  zero(gi);
  const int64_t N = o ? self->sizes[0] : 1, C = self->sizes[o];
  const int64_t H = self->sizes[o + 1], W = self->sizes[o + 2];
  const int64_t Ho = go->sizes[o + 1], Wo = go->sizes[o + 2];
  auto st = [&](const pteron_tensor* t, int32_t i) { return i < 0 ? 0 : t->strides[i]; };
  const int32_t nd = o ? 0 : -1;
  const int64_t* idx = static_cast<const int64_t*>(indices->data);
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < Ho; ++h)
        for (int64_t w = 0; w < Wo; ++w) {
          const int64_t gofs =
              b * st(go, nd) + c * go->strides[o] + h * go->strides[o + 1] + w * go->strides[o + 2];
          const int64_t iofs = b * st(indices, nd) + c * indices->strides[o] +
                               h * indices->strides[o + 1] + w * indices->strides[o + 2];
          const int64_t at = idx[iofs];
          if (at < 0 || at >= H * W)
            return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                        "%s: index %lld is outside the %lldx%lld input plane", a.op, (long long)at,
                        (long long)H, (long long)W);
          const int64_t dst = b * st(gi, nd) + c * gi->strides[o] + (at / W) * gi->strides[o + 1] +
                              (at % W) * gi->strides[o + 2];
          store(gi, dst, load(gi, dst) + load(go, gofs));
        }
  (void)ceil_mode;  // the indices already encode the windows
  return PTERON_OK;
}

// ---- convolution_backward.out(Tensor grad_output, Tensor input,
//   Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding,
//   SymInt[] dilation, bool transposed, SymInt[] output_padding,
//   SymInt groups, bool[3] output_mask, *, Tensor(a!) out0, Tensor(b!) out1,
//   Tensor(c!) out2) ------------------------------------------------------------

int32_t convolution_backward_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::convolution_backward.out"};
  PTERON_CHECK_OK(a.arity(14));
  pteron_tensor *go = nullptr, *x = nullptr, *wt = nullptr;
  pteron_tensor *gi = nullptr, *gw = nullptr, *gb = nullptr;
  bool transposed = false;
  int64_t groups = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "grad_output", &go));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "input", &x));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "weight", &wt));
  PTERON_CHECK_OK(a.boolean(7, "transposed", &transposed));
  PTERON_CHECK_OK(a.integer(9, "groups", &groups));
  if (a.n <= 10 || a.v[10]->tag != PTERON_VALUE_BOOL_LIST || a.v[10]->u.bool_list.size != 3 ||
      !a.v[10]->u.bool_list.data)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: argument 10 ('output_mask') is not a list of 3 bools", a.op);
  const uint8_t* mask = a.v[10]->u.bool_list.data;
  PTERON_CHECK_OK(a.tensor(11, "out0", &gi));
  PTERON_CHECK_OK(a.tensor(12, "out1", &gw));
  PTERON_CHECK_OK(a.tensor(13, "out2", &gb));
  if (transposed)
    return fail(ctx, PTERON_ERROR_NOT_SUPPORTED,
                "%s: the gradient of a transposed convolution is not supported", a.op);
  const int32_t dt = x->dtype;
  if (!is_float_dtype(dt)) return kern::unsupported_dtype(ctx, a.op, "input", dt);
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, go, "grad_output", dt));
  PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, wt, "weight", dt));
  if (mask[0]) PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, gi, "out0", dt));
  if (mask[1]) PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, gw, "out1", dt));
  if (mask[2]) PTERON_CHECK_OK(kern::expect_dtype(a.ctx, a.op, gb, "out2", dt));
  const int32_t rank = x->dim;
  if (rank < 3 || rank > 5 || wt->dim != rank || go->dim != rank)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: grad_output, input and weight must all have rank 3, 4 or 5", a.op);
  const int32_t S = rank - 2;
  int64_t stride[3], pad[3], dil[3];
  PTERON_CHECK_OK(kern::spatial_params(a, 4, "stride", S, 1, stride));
  PTERON_CHECK_OK(kern::spatial_params(a, 5, "padding", S, 0, pad));
  PTERON_CHECK_OK(kern::spatial_params(a, 6, "dilation", S, 1, dil));
  const int64_t N = x->sizes[0], C = x->sizes[1], Cout = wt->sizes[0], Cin_g = wt->sizes[1];
  if (groups <= 0 || Cout % groups != 0 || C != Cin_g * groups)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: groups=%lld does not fit input channels %lld and weight [%lld, %lld, ...]",
                a.op, (long long)groups, (long long)C, (long long)Cout, (long long)Cin_g);
  if (go->sizes[0] != N || go->sizes[1] != Cout)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: grad_output must be [N=%lld, Cout=%lld, ...]", a.op, (long long)N,
                (long long)Cout);
  // Spatial geometry padded to 3 dims (leading unused dims: size 1).
  int64_t in[3], k[3], out[3], st[3], pd[3], dl[3];
  int64_t xs[3], ws[3], gos[3], gis[3], gws[3];
  for (int32_t s = 0; s < 3; ++s) {
    const int32_t j = s - (3 - S);
    if (j < 0) {
      in[s] = k[s] = out[s] = st[s] = dl[s] = 1;
      pd[s] = 0;
      xs[s] = ws[s] = gos[s] = gis[s] = gws[s] = 0;
      continue;
    }
    in[s] = x->sizes[2 + j];
    k[s] = wt->sizes[2 + j];
    out[s] = go->sizes[2 + j];
    st[s] = stride[j];
    pd[s] = pad[j];
    dl[s] = dil[j];
    xs[s] = x->strides[2 + j];
    ws[s] = wt->strides[2 + j];
    gos[s] = go->strides[2 + j];
    const int64_t padded = in[s] + 2 * pd[s], extent = dl[s] * (k[s] - 1) + 1;
    const int64_t expect = padded < extent ? -1 : (padded - extent) / st[s] + 1;
    if (k[s] <= 0 || out[s] != expect)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: grad_output spatial size %lld in dim %d does not match the convolution's "
                  "output size %lld",
                  a.op, (long long)out[s], (int)j, (long long)expect);
  }
  if (mask[0]) {
    PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out0", gi, go, x, wt));
    PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out0", gi, x->sizes, rank));
    zero(gi);
  }
  if (mask[1]) {
    PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out1", gw, go, x, wt));
    PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out1", gw, wt->sizes, rank));
    zero(gw);
  }
  if (mask[2]) {
    PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out2", gb, go, x, wt));
    PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out2", gb, &Cout, 1));
    zero(gb);
  }
  for (int32_t s = 0; s < 3; ++s) {
    const int32_t j = s - (3 - S);
    gis[s] = j >= 0 && mask[0] ? gi->strides[2 + j] : 0;
    gws[s] = j >= 0 && mask[1] ? gw->strides[2 + j] : 0;
  }
  const int64_t Cout_g = Cout / groups;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t co = 0; co < Cout; ++co) {
      const int64_t grp = co / Cout_g;
      for (int64_t o0 = 0; o0 < out[0]; ++o0)
        for (int64_t o1 = 0; o1 < out[1]; ++o1)
          for (int64_t o2 = 0; o2 < out[2]; ++o2) {
            const double g = load(go, b * go->strides[0] + co * go->strides[1] + o0 * gos[0] +
                                          o1 * gos[1] + o2 * gos[2]);
            if (mask[2]) {
              const int64_t bo = co * gb->strides[0];
              store(gb, bo, load(gb, bo) + g);
            }
            if (!mask[0] && !mask[1]) continue;
            for (int64_t cg = 0; cg < Cin_g; ++cg) {
              const int64_t ci = grp * Cin_g + cg;
              for (int64_t k0 = 0; k0 < k[0]; ++k0) {
                const int64_t i0 = o0 * st[0] - pd[0] + k0 * dl[0];
                if (i0 < 0 || i0 >= in[0]) continue;
                for (int64_t k1 = 0; k1 < k[1]; ++k1) {
                  const int64_t i1 = o1 * st[1] - pd[1] + k1 * dl[1];
                  if (i1 < 0 || i1 >= in[1]) continue;
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    const int64_t i2 = o2 * st[2] - pd[2] + k2 * dl[2];
                    if (i2 < 0 || i2 >= in[2]) continue;
                    if (mask[0]) {
                      const int64_t wo = co * wt->strides[0] + cg * wt->strides[1] + k0 * ws[0] +
                                         k1 * ws[1] + k2 * ws[2];
                      const int64_t io = b * gi->strides[0] + ci * gi->strides[1] + i0 * gis[0] +
                                         i1 * gis[1] + i2 * gis[2];
                      store(gi, io, load(gi, io) + g * load(wt, wo));
                    }
                    if (mask[1]) {
                      const int64_t xo = b * x->strides[0] + ci * x->strides[1] + i0 * xs[0] +
                                         i1 * xs[1] + i2 * xs[2];
                      const int64_t wo = co * gw->strides[0] + cg * gw->strides[1] + k0 * gws[0] +
                                         k1 * gws[1] + k2 * gws[2];
                      store(gw, wo, load(gw, wo) + g * load(x, xo));
                    }
                  }
                }
              }
            }
          }
    }
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::max_pool2d_with_indices_backward", "grad_input", nullptr,
                         max_pool2d_backward, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::convolution_backward", "out", nullptr, convolution_backward_out,
                         PTERON_KERNEL_PRIORITY, 0})
