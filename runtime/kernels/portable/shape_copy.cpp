// SPDX-License-Identifier: BSD-3-Clause
// shape_copy.cpp - portable kernels that copy a whole tensor, in another
// dim order or dtype: clone, _to_copy, copy (and the in-place copy_ the
// exporter emits for mutable buffers), alias_copy, detach_copy,
// lift_fresh_copy, and the dim-order operators _to_dim_order_copy,
// _clone_dim_order and _empty_dim_order.
//
// A differing out dtype is converted as Tensor.copy_() converts it. Every
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

// ---- clone.out(Tensor self, *, MemoryFormat? memory_format=None,
//                Tensor(a!) out) ----------------------------------------------

int32_t clone_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::clone.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::memory_format(a, 1));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  return su::copy_view_out(a, self, kern::view_of(self), out, self->sizes, self->dim);
}

// ---- dim_order_ops::_to_dim_order_copy.out / _clone_dim_order.out
//      (Tensor self, *, bool non_blocking=False, int[]? dim_order=None,
//       Tensor(a!) out) ------------------------------------------------------

int32_t dim_order_copy(const Args& a, bool same_dtype) {
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  bool non_blocking = false;
  const int64_t* order = nullptr;
  size_t nd = 0;
  bool has_order = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.boolean(1, "non_blocking", &non_blocking));
  PTERON_CHECK_OK(kern::opt_int_list(a, 2, "dim_order", &order, &nd, &has_order));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  if (has_order) {
    if (nd != static_cast<size_t>(self->dim))
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: dim_order has %zu entries but self has rank %d", a.op, nd, (int)self->dim);
    bool seen[PTERON_MAX_DIM] = {};
    for (size_t i = 0; i < nd; ++i) {
      if (order[i] < 0 || order[i] >= self->dim || seen[order[i]])
        return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: dim_order is not a permutation of the dims of self "
                    "(entry %zu is %lld)",
                    a.op, i, (long long)order[i]);
      seen[order[i]] = true;
    }
    // The out tensor's storage order is the one the program declared for
    // it; the argument must agree with it.
    if (out->dim == self->dim) {
      for (size_t i = 0; i < nd; ++i)
        if (out->dim_order[i] != order[i])
          return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
                      "%s: dim_order argument disagrees with the out "
                      "tensor's declared dim order at position %zu (%lld vs "
                      "%d)",
                      a.op, i, (long long)order[i], (int)out->dim_order[i]);
    }
  }
  if (same_dtype && self->dtype != out->dtype)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out dtype %s differs from self dtype %s",
                a.op, pteron::kern::dtype_name(out->dtype), pteron::kern::dtype_name(self->dtype));
  return su::copy_view_out(a, self, kern::view_of(self), out, self->sizes, self->dim);
}

int32_t to_dim_order_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "dim_order_ops::_to_dim_order_copy.out"};
  return dim_order_copy(a, false);
}

int32_t clone_dim_order_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "dim_order_ops::_clone_dim_order.out"};
  return dim_order_copy(a, true);
}

// ---- alias_copy / detach_copy / lift_fresh_copy (Tensor self, *, out) -----

int32_t plain_copy(const Args& a) {
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  return su::copy_view_out(a, self, kern::view_of(self), out, self->sizes, self->dim);
}

int32_t alias_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return plain_copy(Args{ctx, args, n, "aten::alias_copy.out"});
}
int32_t detach_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return plain_copy(Args{ctx, args, n, "aten::detach_copy.out"});
}
int32_t lift_fresh_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return plain_copy(Args{ctx, args, n, "aten::lift_fresh_copy.out"});
}

// ---- _to_copy.out(Tensor self, *, bool non_blocking=False,
//                   MemoryFormat? memory_format=None, Tensor(a!) out) --------

int32_t to_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::_to_copy.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  bool non_blocking = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.boolean(1, "non_blocking", &non_blocking));
  PTERON_CHECK_OK(kern::memory_format(a, 2));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  // The dtype cast is the out tensor's dtype (Tensor.to() converts freely).
  return su::copy_view_out(a, self, kern::view_of(self), out, self->sizes, self->dim);
}

// ---- copy.out(Tensor self, Tensor src, bool non_blocking=False, *,
//               Tensor(a!) out) ----------------------------------------------

int32_t copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::copy.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *src = nullptr, *out = nullptr;
  bool non_blocking = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "src", &src));
  PTERON_CHECK_OK(a.boolean(2, "non_blocking", &non_blocking));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, src));
  // src broadcasts to self's shape (never the other way).
  if (src->dim > self->dim) return kern::broadcast_error(a.ctx, a.op, self, src);
  kern::View v;
  v.dim = self->dim;
  for (int32_t i = 0; i < self->dim; ++i) {
    const int32_t j = i - (self->dim - src->dim);
    v.sizes[i] = self->sizes[i];
    if (j < 0 || src->sizes[j] == 1) {
      v.strides[i] = 0;
    } else if (src->sizes[j] == self->sizes[i]) {
      v.strides[i] = src->strides[j];
    } else {
      return kern::broadcast_error(a.ctx, a.op, self, src);
    }
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  if (!kern::is_supported_half(src->dtype))
    return kern::unsupported_dtype(a.ctx, a.op, "src", src->dtype);
  if (!kern::is_supported_half(out->dtype))
    return kern::unsupported_dtype(a.ctx, a.op, "out", out->dtype);
  kern::copy_view(src->data, src->dtype, v, out->data, out->dtype, kern::view_of(out));
  return PTERON_OK;
}

// ---- dim_order_ops::_empty_dim_order.out(int[] size, *,
//        int[]? dim_order=None, Tensor(a!) out) -------------------------------

int32_t empty_dim_order_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "dim_order_ops::_empty_dim_order.out"};
  PTERON_CHECK_OK(a.arity(3));
  const int64_t *size = nullptr, *order = nullptr;
  size_t nd = 0, no = 0;
  bool has_order = false;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(a.int_list(0, "size", &size, &nd));
  PTERON_CHECK_OK(kern::opt_int_list(a, 1, "dim_order", &order, &no, &has_order));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (nd > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size has %zu entries, more than %d", a.op,
                nd, PTERON_MAX_DIM);
  if (has_order) {
    if (no != nd)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: dim_order has %zu entries but size has %zu", a.op, no, nd);
    bool seen[PTERON_MAX_DIM] = {};
    for (size_t i = 0; i < no; ++i) {
      if (order[i] < 0 || order[i] >= static_cast<int64_t>(nd) || seen[order[i]])
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: dim_order is not a permutation of the dims (entry %zu is %lld)", a.op, i,
                    (long long)order[i]);
      seen[order[i]] = true;
      if (out->dim == static_cast<int32_t>(nd) && out->dim_order[i] != order[i])
        return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                    "%s: dim_order argument disagrees with the out tensor's declared dim order at "
                    "position %zu",
                    a.op, i);
    }
  }
  // The contents of an empty tensor are unspecified: only the shape is set.
  return kern::resize_out(ctx, a.op, "out", out, size, static_cast<int32_t>(nd));
}

// aten::copy_ (in place): (self, src, non_blocking, returned self). The
// exporter emits it to write a mutable buffer back; it is copy.out with
// out = self.
int32_t copy_inplace(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  if (n != 4) return copy_out(ctx, args, n);  // copy.out names the arity error
  pteron_value* const call[4] = {args[0], args[1], args[2], args[0]};
  return copy_out(ctx, call, 4);
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::clone", "out", nullptr, clone_out, PTERON_KERNEL_PRIORITY, 0},
    {"dim_order_ops::_to_dim_order_copy", "out", nullptr, to_dim_order_copy_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"dim_order_ops::_clone_dim_order", "out", nullptr, clone_dim_order_out, PTERON_KERNEL_PRIORITY,
     0},
    {"aten::_to_copy", "out", nullptr, to_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::alias_copy", "out", nullptr, alias_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::detach_copy", "out", nullptr, detach_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::lift_fresh_copy", "out", nullptr, lift_fresh_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::copy", "out", nullptr, copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::copy_", "", nullptr, copy_inplace, PTERON_KERNEL_PRIORITY, 0},
    {"dim_order_ops::_empty_dim_order", "out", nullptr, empty_dim_order_out, PTERON_KERNEL_PRIORITY,
     0})
