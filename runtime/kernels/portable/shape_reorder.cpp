// SPDX-License-Identifier: BSD-3-Clause
// shape_reorder.cpp - portable kernels that move elements to other
// positions of the same tensor shape family: flip, roll, pixel_shuffle /
// pixel_unshuffle and tril (the lower triangle, zeros above it).
//
// Ops that only move bytes take every dtype with an element size; the
// others take the supported dtypes, float16 and bfloat16 included.
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "arg_reading.h"
#include "kernel_util.h"
#include "shape_util.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
using pteron::kern::wrap_dim;
namespace kern = pteron::kern;
namespace su = pteron::kern::shape_util;

// ---- flip.out(Tensor self, int[] dims, *, Tensor(a!) out) ------------------

int32_t flip_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::flip.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* dims = nullptr;
  size_t nd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "dims", &dims, &nd));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  bool seen[PTERON_MAX_DIM + 1] = {};
  kern::View v = kern::view_of(self);
  for (size_t i = 0; i < nd; ++i) {
    int64_t d = dims[i];
    if (!wrap_dim(d, self->dim)) return su::bad_dim(a, "dims entry", dims[i], self->dim);
    if (seen[d])
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: dim %lld appears multiple times in dims",
                  a.op, (long long)d);
    seen[d] = true;
    if (self->dim == 0 || v.sizes[d] == 0) continue;
    // A negative stride walks the dim backwards from its last element.
    v.offset += (v.sizes[d] - 1) * v.strides[d];
    v.strides[d] = -v.strides[d];
  }
  return su::copy_view_out(a, self, v, out, self->sizes, self->dim);
}

// ---- roll.out(Tensor self, SymInt[1] shifts, int[1] dims=[], *, out) -------

int32_t roll_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::roll.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t *shifts = nullptr, *dims = nullptr;
  size_t ns = 0, nd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "shifts", &shifts, &ns));
  PTERON_CHECK_OK(a.int_list(2, "dims", &dims, &nd));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  if (ns == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: shifts must not be empty", a.op);
  if (nd != 0 && nd != ns)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: shifts and dimensions must align (shifts: %zu, dims: %zu)", a.op, ns, nd);
  if (nd == 0 && ns != 1)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: without dims, shifts must have one entry, got %zu", a.op, ns);
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  const int64_t total = kern::numel(self);
  if (total == 0) return PTERON_OK;
  if (nd == 0) {
    // Roll of the flattened tensor: logical position p takes p - shift.
    const int64_t sh = ((shifts[0] % total) + total) % total;
    int64_t idx[PTERON_MAX_DIM];
    su::map_elements(self, out, nullptr, [&](const int64_t* oi) {
      int64_t p = 0;
      for (int32_t i = 0; i < self->dim; ++i) p = p * self->sizes[i] + oi[i];
      p = (p - sh + total) % total;
      for (int32_t i = self->dim - 1; i >= 0; --i) {
        idx[i] = p % self->sizes[i];
        p /= self->sizes[i];
      }
      return su::offset_of(self, idx);
    });
    return PTERON_OK;
  }
  int64_t shift[PTERON_MAX_DIM + 1] = {};
  for (size_t k = 0; k < nd; ++k) {
    int64_t d = dims[k];
    if (!wrap_dim(d, self->dim)) return su::bad_dim(a, "dims entry", dims[k], self->dim);
    if (self->dim == 0) continue;
    const int64_t s = self->sizes[d];
    shift[d] = (shift[d] + (shifts[k] % s) + s) % s;
  }
  su::map_elements(self, out, nullptr, [&](const int64_t* oi) {
    int64_t o = 0;
    for (int32_t i = 0; i < self->dim; ++i) {
      int64_t j = oi[i] - shift[i];
      if (j < 0) j += self->sizes[i];
      o += j * self->strides[i];
    }
    return o;
  });
  return PTERON_OK;
}

// ---- pixel_shuffle.out / pixel_unshuffle.out (Tensor self, int factor, *,
//                                               Tensor(a!) out) -------------

int32_t pixel_impl(const Args& a, bool shuffle) {
  PTERON_CHECK_OK(a.arity(3));
  const char* fname = shuffle ? "upscale_factor" : "downscale_factor";
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t r = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, fname, &r));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(a.ctx, a.op, "out", out, self));
  if (self->dim < 3 || self->dim + 2 > PTERON_MAX_DIM)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: self must have at least 3 dimensions (and at most %d), got %d", a.op,
                PTERON_MAX_DIM - 2, (int)self->dim);
  if (r <= 0 || r > (int64_t{1} << 20))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: %s must be positive, got %lld", a.op,
                fname, (long long)r);
  const int32_t lead = self->dim - 3;
  const int64_t C = self->sizes[lead], H = self->sizes[lead + 1], W = self->sizes[lead + 2];
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < lead; ++i) sizes[i] = self->sizes[i];
  if (shuffle) {
    if (C % (r * r) != 0)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: the channel dim of self (%lld) must be divisible by the square of "
                  "upscale_factor (%lld)",
                  a.op, (long long)C, (long long)(r * r));
    sizes[lead] = C / (r * r);
    sizes[lead + 1] = H * r;
    sizes[lead + 2] = W * r;
  } else {
    if (H % r != 0 || W % r != 0)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: the height (%lld) and width (%lld) of self must be divisible by "
                  "downscale_factor (%lld)",
                  a.op, (long long)H, (long long)W, (long long)r);
    sizes[lead] = C * r * r;
    sizes[lead + 1] = H / r;
    sizes[lead + 2] = W / r;
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, self->dim));
  // Both sides seen as [..., c, h, i, w, j] (shuffle) or [..., c, i, j, h, w]
  // (unshuffle), walked in the same logical order.
  const pteron_tensor* big = shuffle ? self : out;    // the [.., C*r*r, H, W] side
  const pteron_tensor* small = shuffle ? out : self;  // the [.., C, H*r, W*r] side
  const int64_t c = small->sizes[lead], h = big->sizes[lead + 1], w = big->sizes[lead + 2];
  const int64_t bc = big->strides[lead], bh = big->strides[lead + 1], bw = big->strides[lead + 2];
  const int64_t sc = small->strides[lead], sh = small->strides[lead + 1],
                sw = small->strides[lead + 2];
  kern::View vb, vs;
  vb.dim = vs.dim = lead + 5;
  for (int32_t i = 0; i < lead; ++i) {
    vb.sizes[i] = vs.sizes[i] = self->sizes[i];
    vb.strides[i] = big->strides[i];
    vs.strides[i] = small->strides[i];
  }
  // order: c, h, i, w, j
  const int64_t szs[5] = {c, h, r, w, r};
  const int64_t bst[5] = {bc * r * r, bh, bc * r, bw, bc};
  const int64_t sst[5] = {sc, sh * r, sh, sw * r, sw};
  for (int32_t k = 0; k < 5; ++k) {
    vb.sizes[lead + k] = vs.sizes[lead + k] = szs[k];
    vb.strides[lead + k] = bst[k];
    vs.strides[lead + k] = sst[k];
  }
  if (!kern::is_supported_half(self->dtype))
    return kern::unsupported_dtype(a.ctx, a.op, "self", self->dtype);
  if (kern::numel(out) == 0) return PTERON_OK;
  if (shuffle)
    kern::copy_view(self->data, self->dtype, vb, out->data, out->dtype, vs);
  else
    kern::copy_view(self->data, self->dtype, vs, out->data, out->dtype, vb);
  return PTERON_OK;
}

int32_t pixel_shuffle_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return pixel_impl(Args{ctx, args, n, "aten::pixel_shuffle.out"}, true);
}
int32_t pixel_unshuffle_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return pixel_impl(Args{ctx, args, n, "aten::pixel_unshuffle.out"}, false);
}

// ---- tril.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out) -----------

int32_t tril_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::tril.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t diag = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "diagonal", &diag));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  if (self->dim < 2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: tril: input tensor must have at least 2 dimensions, got %d", a.op,
                (int)self->dim);
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  const int32_t r = self->dim - 2, c = self->dim - 1;
  const uint64_t zero = 0;
  su::map_elements(self, out, &zero, [&](const int64_t* oi) -> int64_t {
    if (oi[c] - oi[r] > diag) return -1;
    return su::offset_of(self, oi);
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::flip", "out", nullptr, flip_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::roll", "out", nullptr, roll_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::pixel_shuffle", "out", nullptr, pixel_shuffle_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::pixel_unshuffle", "out", nullptr, pixel_unshuffle_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::tril", "out", nullptr, tril_out, PTERON_KERNEL_PRIORITY, 0})
