// SPDX-License-Identifier: BSD-3-Clause
// pad.cpp - portable padding kernels: constant_pad_nd and the reflection and
// replication pads over 1, 2 or 3 trailing dims.
//
// Each out element is read from one input element through an index map
// (or is the constant), so every dtype moves and channels-last tensors on
// either side are fine.
#include <cstdint>
#include <cstring>
#include <limits>

#include "arg_reading.h"
#include "kernel_util.h"
#include "shape_util.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;
namespace su = pteron::kern::shape_util;

// ---- constant_pad_nd.out(Tensor self, SymInt[] pad, Scalar value=0, *,
//                          Tensor(a!) out) -----------------------------------

int32_t constant_pad_nd_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::constant_pad_nd.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* pad = nullptr;
  size_t np = 0;
  kern::Scalar value;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "pad", &pad, &np));
  PTERON_CHECK_OK(kern::read_scalar(a, 2, "value", &value));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  if (!kern::is_supported_half(self->dtype))
    return kern::unsupported_dtype(ctx, a.op, "self", self->dtype);
  if (np % 2 != 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: length of pad must be even but instead it equals %zu", a.op, np);
  if (np / 2 > static_cast<size_t>(self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: length of pad should be no more than twice the number of dimensions of the "
                "input (pad has %zu entries, self has rank %d)",
                a.op, np, (int)self->dim);
  int64_t before[PTERON_MAX_DIM] = {}, sizes[PTERON_MAX_DIM];
  const int64_t lim = int64_t{1} << 40;
  for (int32_t i = 0; i < self->dim; ++i) {
    sizes[i] = self->sizes[i];
    // pad pairs run from the last dim backwards.
    const size_t k = static_cast<size_t>(self->dim - 1 - i);
    if (2 * k + 1 < np) {
      const int64_t lo = pad[2 * k], hi = pad[2 * k + 1];
      if (lo < -lim || lo > lim || hi < -lim || hi > lim)
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: pad value out of range", a.op);
      before[i] = lo;
      sizes[i] = self->sizes[i] + lo + hi;
      if (sizes[i] < 0)
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: the input size %lld, plus negative padding %lld and %lld resulted in a "
                    "negative output size, which is invalid (dim %d)",
                    a.op, (long long)self->sizes[i], (long long)lo, (long long)hi, (int)i);
    }
  }
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, sizes, self->dim));
  alignas(8) unsigned char fill[8] = {};
  kern::dispatch_half(out->dtype, [&](auto t) {
    using T = decltype(t);
    const T v = value.to<T>();
    std::memcpy(fill, &v, sizeof v);
  });
  su::map_elements(self, out, fill, [&](const int64_t* oi) -> int64_t {
    int64_t o = 0;
    for (int32_t i = 0; i < self->dim; ++i) {
      const int64_t j = oi[i] - before[i];
      if (j < 0 || j >= self->sizes[i]) return -1;
      o += j * self->strides[i];
    }
    return o;
  });
  return PTERON_OK;
}

// ---- reflection_pad{1,2,3}d.out / replication_pad{1,2,3}d.out
//      (Tensor self, SymInt[2k] padding, *, Tensor(a!) out) -------------------

int32_t edge_pad(const Args& a, int32_t k, bool reflect) {
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* pad = nullptr;
  size_t np = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "padding", &pad, &np));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(a.ctx, a.op, "out", out, self));
  if (np != static_cast<size_t>(2 * k))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: padding must have %d entries, got %zu",
                a.op, (int)(2 * k), np);
  if (self->dim != k + 1 && self->dim != k + 2)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: expected a %dD or %dD input (batch mode optional), got rank %d", a.op,
                (int)(k + 1), (int)(k + 2), (int)self->dim);
  const int32_t first = self->dim - k;
  for (int32_t i = 0; i < first; ++i)
    if (self->sizes[i] == 0 && (i > 0 || self->dim == k + 1))
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: expected a non-empty input except possibly the batch dim, but dim %d is 0",
                  a.op, (int)i);
  int64_t before[PTERON_MAX_DIM] = {}, sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < self->dim; ++i) sizes[i] = self->sizes[i];
  for (int32_t j = 0; j < k; ++j) {
    const int32_t i = self->dim - 1 - j;
    const int64_t lo = pad[2 * j], hi = pad[2 * j + 1], s = self->sizes[i];
    if (s == 0)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: the padded dims of the input must not be empty (dim %d is 0)", a.op, (int)i);
    if (reflect && (lo < 0 || hi < 0 || lo >= s || hi >= s))
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: padding size should be non-negative and less than the corresponding input "
                  "dimension, but got padding (%lld, %lld) at dim %d of size %lld",
                  a.op, (long long)lo, (long long)hi, (int)i, (long long)s);
    if (!reflect && (lo < 0 || hi < 0 || lo > (int64_t{1} << 40) || hi > (int64_t{1} << 40)))
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: padding must be non-negative, got (%lld, %lld) at dim %d", a.op,
                  (long long)lo, (long long)hi, (int)i);
    before[i] = lo;
    sizes[i] = s + lo + hi;
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, self->dim));
  su::map_elements(self, out, nullptr, [&](const int64_t* oi) -> int64_t {
    int64_t o = 0;
    for (int32_t i = 0; i < self->dim; ++i) {
      const int64_t s = self->sizes[i];
      int64_t j = oi[i] - before[i];
      if (reflect) {
        if (j < 0) j = -j;
        if (j >= s) j = 2 * (s - 1) - j;
      } else {
        if (j < 0) j = 0;
        if (j >= s) j = s - 1;
      }
      o += j * self->strides[i];
    }
    return o;
  });
  return PTERON_OK;
}

int32_t reflection_pad1d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return edge_pad(Args{ctx, args, n, "aten::reflection_pad1d.out"}, 1, true);
}
int32_t reflection_pad2d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return edge_pad(Args{ctx, args, n, "aten::reflection_pad2d.out"}, 2, true);
}
int32_t reflection_pad3d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return edge_pad(Args{ctx, args, n, "aten::reflection_pad3d.out"}, 3, true);
}
int32_t replication_pad1d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return edge_pad(Args{ctx, args, n, "aten::replication_pad1d.out"}, 1, false);
}
int32_t replication_pad2d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return edge_pad(Args{ctx, args, n, "aten::replication_pad2d.out"}, 2, false);
}
int32_t replication_pad3d_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return edge_pad(Args{ctx, args, n, "aten::replication_pad3d.out"}, 3, false);
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::constant_pad_nd", "out", nullptr, constant_pad_nd_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::reflection_pad1d", "out", nullptr, reflection_pad1d_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::reflection_pad2d", "out", nullptr, reflection_pad2d_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::reflection_pad3d", "out", nullptr, reflection_pad3d_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::replication_pad1d", "out", nullptr, replication_pad1d_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::replication_pad2d", "out", nullptr, replication_pad2d_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::replication_pad3d", "out", nullptr, replication_pad3d_out, PTERON_KERNEL_PRIORITY, 0})
