// SPDX-License-Identifier: BSD-3-Clause
// shape_concat.cpp - portable kernels that join or repeat tensors: cat,
// stack, repeat and repeat_interleave.
//
// Inputs are read through their strides and out is written in its own dim
// order. cat and stack promote their inputs' dtypes as PyTorch does; every
// operator here accepts float16 and bfloat16 too.
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

// ---- cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) ---------------

int32_t cat_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::cat.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor* const* ts = nullptr;
  size_t count = 0;
  int64_t d0 = 0;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(a.tensor_list(0, "tensors", &ts, &count));
  PTERON_CHECK_OK(a.integer(1, "dim", &d0));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (count == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: expected a non-empty list of tensors",
                a.op);
  if (count > 0 && ts == nullptr)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensor list is null", a.op);
  // Validate every entry; find the promoted dtype and the reference tensor
  // (first one that is not a legacy empty 1-D tensor).
  int32_t dtype = -1;
  const pteron_tensor* ref = nullptr;
  for (size_t i = 0; i < count; ++i) {
    const pteron_tensor* t = ts[i];
    if (t == nullptr)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensors[%zu] is None", a.op, i);
    PTERON_CHECK_OK(kern::check_tensor(ctx, a.op, "tensors", t));
    if (!pteron::kern::is_supported_half(t->dtype))
      return pteron::kern::unsupported_dtype(ctx, a.op, "tensors", t->dtype);
    dtype = dtype < 0 ? t->dtype : pteron::kern::promote_types(dtype, t->dtype);
    if (t->dim == 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: zero-dimensional tensor (at position %zu) cannot be "
                  "concatenated",
                  a.op, i);
    const bool skip = t->dim == 1 && t->sizes[0] == 0;
    if (!skip && ref == nullptr) ref = t;
  }
  if (!pteron::kern::is_supported_half(out->dtype))
    return pteron::kern::unsupported_dtype(ctx, a.op, "out", out->dtype);
  if (!kern::can_cast(dtype, out->dtype))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: input dtype %s can't be cast to the out dtype %s", a.op,
                pteron::kern::dtype_name(dtype), pteron::kern::dtype_name(out->dtype));
  if (ref == nullptr) {
    // Every input is an empty 1-D tensor: the result is one as well.
    int64_t zero = 0;
    return kern::resize_out(a.ctx, a.op, "out", out, &zero, 1);
  }
  int64_t d = d0;
  if (!wrap_dim(d, ref->dim)) return su::bad_dim(a, "dim", d0, ref->dim);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < ref->dim; ++i) sizes[i] = ref->sizes[i];
  int64_t cat_size = 0;
  for (size_t k = 0; k < count; ++k) {
    const pteron_tensor* t = ts[k];
    if (t->dim == 1 && t->sizes[0] == 0) continue;
    if (t->dim != ref->dim)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: tensors must have the same rank: tensor 0 has rank %d "
                  "but tensor %zu has rank %d",
                  a.op, (int)ref->dim, k, (int)t->dim);
    for (int32_t i = 0; i < ref->dim; ++i) {
      if (i != d && t->sizes[i] != ref->sizes[i])
        return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                    "%s: sizes of tensors must match except in dimension "
                    "%lld: expected size %lld but got size %lld for tensor "
                    "number %zu in the list",
                    a.op, (long long)d, (long long)ref->sizes[i], (long long)t->sizes[i], k);
    }
    if (t->sizes[d] > std::numeric_limits<int64_t>::max() - cat_size)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: result too large", a.op);
    cat_size += t->sizes[d];
  }
  sizes[d] = cat_size;
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, ref->dim));
  int64_t pos = 0;
  for (size_t k = 0; k < count; ++k) {
    const pteron_tensor* t = ts[k];
    if (t->dim == 1 && t->sizes[0] == 0) continue;
    kern::View dst = kern::view_of(out);
    dst.sizes[d] = t->sizes[d];
    dst.offset = pos * out->strides[d];
    if (t->sizes[d] > 0)
      kern::copy_view(t->data, t->dtype, kern::view_of(t), out->data, out->dtype, dst);
    pos += t->sizes[d];
  }
  return PTERON_OK;
}

// ---- stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -------------

int32_t stack_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::stack.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor* const* ts = nullptr;
  size_t count = 0;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(a.tensor_list(0, "tensors", &ts, &count));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (count == 0 || !ts)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: stack expects a non-empty TensorList",
                a.op);
  int32_t dtype = -1;
  for (size_t k = 0; k < count; ++k) {
    const pteron_tensor* t = ts[k];
    if (!t) return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensors[%zu] is None", a.op, k);
    PTERON_CHECK_OK(kern::check_tensor(ctx, a.op, "tensors", t));
    PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, t));
    if (!kern::is_supported_half(t->dtype))
      return kern::unsupported_dtype(ctx, a.op, "tensors", t->dtype);
    dtype = dtype < 0 ? t->dtype : kern::promote_types(dtype, t->dtype);
    if (t->dim != ts[0]->dim)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: stack expects each tensor to be equal size, but tensor 0 has rank %d and "
                  "tensor %zu has rank %d",
                  a.op, (int)ts[0]->dim, k, (int)t->dim);
    for (int32_t i = 0; i < t->dim; ++i)
      if (t->sizes[i] != ts[0]->sizes[i])
        return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                    "%s: stack expects each tensor to be equal size, but tensor %zu differs from "
                    "tensor 0 at dim %d (%lld vs %lld)",
                    a.op, k, (int)i, (long long)t->sizes[i], (long long)ts[0]->sizes[i]);
  }
  const int32_t rank = ts[0]->dim;
  if (rank >= PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: tensors already have the maximum rank %d",
                a.op, PTERON_MAX_DIM);
  int64_t d = 0;
  PTERON_CHECK_OK(su::dim_arg(a, 1, "dim", rank + 1, &d));
  if (!kern::is_supported_half(out->dtype))
    return kern::unsupported_dtype(ctx, a.op, "out", out->dtype);
  if (!kern::can_cast(dtype, out->dtype)) return kern::cast_error(ctx, a.op, dtype, out->dtype);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0, j = 0; i <= rank; ++i)
    sizes[i] = i == d ? static_cast<int64_t>(count) : ts[0]->sizes[j++];
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, sizes, rank + 1));
  if (kern::numel(out) == 0) return PTERON_OK;
  for (size_t k = 0; k < count; ++k) {
    kern::View dst;
    dst.dim = rank;
    for (int32_t i = 0, j = 0; i <= rank; ++i) {
      if (i == d) continue;
      dst.sizes[j] = out->sizes[i];
      dst.strides[j] = out->strides[i];
      ++j;
    }
    dst.offset = static_cast<int64_t>(k) * out->strides[d];
    kern::copy_view(ts[k]->data, ts[k]->dtype, kern::view_of(ts[k]), out->data, out->dtype, dst);
  }
  return PTERON_OK;
}

// ---- repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out) ----------

int32_t repeat_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::repeat.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* reps = nullptr;
  size_t nr = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "repeats", &reps, &nr));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  if (nr < static_cast<size_t>(self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: number of dimensions of repeat dims (%zu) can not be smaller than number of "
                "dimensions of tensor (%d)",
                a.op, nr, (int)self->dim);
  if (nr > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: repeats has %zu entries, more than %d",
                a.op, nr, PTERON_MAX_DIM);
  const int32_t nd = static_cast<int32_t>(nr), lead = nd - self->dim;
  int64_t sizes[PTERON_MAX_DIM], in_sizes[PTERON_MAX_DIM], in_strides[PTERON_MAX_DIM];
  for (int32_t i = 0; i < nd; ++i) {
    if (reps[i] < 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: repeats entry %d is negative (%lld)",
                  a.op, (int)i, (long long)reps[i]);
    in_sizes[i] = i < lead ? 1 : self->sizes[i - lead];
    in_strides[i] = i < lead ? 0 : self->strides[i - lead];
    if (in_sizes[i] != 0 && reps[i] > std::numeric_limits<int64_t>::max() / 16 / in_sizes[i])
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: result too large", a.op);
    sizes[i] = in_sizes[i] * reps[i];
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, nd));
  su::map_elements(self, out, nullptr, [&](const int64_t* oi) {
    int64_t o = 0;
    for (int32_t i = 0; i < nd; ++i) o += (oi[i] % in_sizes[i]) * in_strides[i];
    return o;
  });
  return PTERON_OK;
}

// ---- repeat_interleave.Tensor_out(Tensor repeats, *,
//        SymInt? output_size=None, Tensor(a!) out) ----------------------------

int32_t repeat_interleave_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                     size_t n) {
  Args a{ctx, args, n, "aten::repeat_interleave.Tensor_out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *reps = nullptr, *out = nullptr;
  int64_t output_size = 0;
  bool has_size = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "repeats", &reps));
  PTERON_CHECK_OK(kern::opt_integer(a, 1, "output_size", &output_size, &has_size));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (reps->dtype != PTERON_DTYPE_INT32 && reps->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: repeats has to be an int32 or int64 tensor, got %s", a.op,
                kern::dtype_name(reps->dtype));
  PTERON_CHECK_OK(su::same_dtype(a, "repeats", reps, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, reps));
  if (reps->dim > 1)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: repeats has to be 1-D, got rank %d", a.op,
                (int)reps->dim);
  const int64_t count = kern::numel(reps);
  const int64_t st = reps->dim == 1 ? reps->strides[0] : 0;
  auto rep = [&](int64_t k) -> int64_t {
    return reps->dtype == PTERON_DTYPE_INT32 ? static_cast<const int32_t*>(reps->data)[k * st]
                                             : static_cast<const int64_t*>(reps->data)[k * st];
  };
  int64_t total = 0;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t r = rep(k);
    if (r < 0 || r > (std::numeric_limits<int64_t>::max() / 16) - total)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: repeats must be non-negative (entry %lld is %lld)", a.op, (long long)k,
                  (long long)r);
    total += r;
  }
  if (has_size && output_size != total)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: output_size %lld differs from the sum of repeats %lld", a.op,
                (long long)output_size, (long long)total);
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, &total, 1));
  int64_t pos = 0;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t r = rep(k);
    for (int64_t j = 0; j < r; ++j, ++pos) {
      if (out->dtype == PTERON_DTYPE_INT32)
        static_cast<int32_t*>(out->data)[pos] = static_cast<int32_t>(k);
      else
        static_cast<int64_t*>(out->data)[pos] = k;
    }
  }
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::cat", "out", nullptr, cat_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::stack", "out", nullptr, stack_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::repeat", "out", nullptr, repeat_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::repeat_interleave", "Tensor_out", nullptr, repeat_interleave_tensor_out,
     PTERON_KERNEL_PRIORITY, 0})
