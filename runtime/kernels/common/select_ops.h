// SPDX-License-Identifier: BSD-3-Clause
// select_ops.h - the comparisons (eq/ne/gt/lt/ge/le, Scalar_out and
// Tensor_out), logical_not.out and where.self_out, written once: argument
// checks, messages, result type and the general loops. kernels_portable
// calls them as they are (NoFastPath); kernels_optimized passes a fast path
// for the dense float32 / bool cases attention masks reach. Each fast hook
// runs after the checks and the resize of out, and returns true when it has
// written out (false: the general loop runs).
//
// Comparisons compute in the promoted type of their operands (PyTorch's
// result_type) and write 0/1 in the out tensor's dtype (usually bool; any
// supported dtype is accepted, as in PyTorch); float16 and bfloat16 compare
// as their storage type (a Scalar other is rounded to it first, as PyTorch
// does). where's condition is bool (uint8, deprecated in PyTorch, still
// accepted).
#pragma once

#include <cstdint>
#include <type_traits>

#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "kernel_util.h"
#include "tensor_checks.h"

namespace pteron {
namespace kern {

// The fast hook that never takes the call.
struct NoFastPath {
  template <typename... A>
  bool operator()(A&&...) const {
    return false;
  }
};

enum class Cmp { Eq, Ne, Gt, Lt, Ge, Le };

template <typename C>
inline bool compare(Cmp c, C a, C b) {
  switch (c) {
    case Cmp::Eq: return a == b;
    case Cmp::Ne: return a != b;
    case Cmp::Gt: return a > b;
    case Cmp::Lt: return a < b;
    case Cmp::Ge: return a >= b;
    case Cmp::Le: return a <= b;
  }
  return false;
}

// The comparison `op` (Scalar_out when scalar_other, else Tensor_out).
// fast(self, other (null for a Scalar), other_s, ct, out) runs after the
// checks and the resize of out; true: it wrote out.
template <typename Fast>
int32_t compare_impl(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                     const char* op, Cmp c, bool scalar_other, Fast fast) {
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *other = nullptr, *out = nullptr;
  Scalar other_s;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  if (scalar_other)
    PTERON_CHECK_OK(read_scalar(a, 1, "other", &other_s));
  else
    PTERON_CHECK_OK(a.tensor(1, "other", &other));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  if (other) PTERON_CHECK_OK(check_supported_half(ctx, op, "other", other->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  if (other) PTERON_CHECK_OK(check_tensor(ctx, op, "other", other));
  ResultType rt;
  rt.add_tensor(self);
  if (other)
    rt.add_tensor(other);
  else
    rt.add_scalar(other_s.kind);
  const int32_t ct = rt.get();
  int64_t shape[PTERON_MAX_DIM];
  int32_t nd = 0;
  if (other) {
    if (!broadcast_shape(self, other, shape, &nd)) return broadcast_error(ctx, op, self, other);
  } else {
    nd = self->dim;
    for (int32_t i = 0; i < nd; ++i) shape[i] = self->sizes[i];
  }
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, nd));
  if (fast(self, other, other_s, ct, out)) return PTERON_OK;
  // float16 / bfloat16 compare as their storage type: a Scalar other is
  // rounded to it first, as PyTorch does
  dispatch_half(ct, [&](auto t) {
    using C = decltype(t);
    if (other) {
      const pteron_tensor* ins[2] = {self, other};
      map_elements<C, bool>(ins, out, [c](C x, C y) { return compare<C>(c, x, y); });
    } else {
      const C y = other_s.to<C>();
      const pteron_tensor* ins[1] = {self};
      map_elements<C, bool>(ins, out, [c, y](C x) { return compare<C>(c, x, y); });
    }
  });
  return PTERON_OK;
}

// aten::logical_not.out. fast(self, out) runs after the checks and the
// resize of out; true: it wrote out.
template <typename Fast>
int32_t logical_not_impl(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                         Fast fast) {
  static const char* op = "aten::logical_not.out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, self->sizes, self->dim));
  if (fast(self, out)) return PTERON_OK;
  dispatch_compute(self->dtype, [&](auto t) {
    using C = decltype(t);
    const pteron_tensor* ins[1] = {self};
    map_elements<C, bool>(ins, out, [](C x) { return x == C(0); });
  });
  return PTERON_OK;
}

// aten::where.self_out. fast(cond, self, other, ct, shape, nd, out) runs
// after the checks and the resize of out to the broadcast shape; true: it
// wrote out.
template <typename Fast>
int32_t where_self_impl(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                        Fast fast) {
  static const char* op = "aten::where.self_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *cond = nullptr, *self = nullptr, *other = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "condition", &cond));
  PTERON_CHECK_OK(a.tensor(1, "self", &self));
  PTERON_CHECK_OK(a.tensor(2, "other", &other));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  // uint8 conditions are deprecated in PyTorch but still accepted
  if (cond->dtype != PTERON_DTYPE_BOOL && cond->dtype != PTERON_DTYPE_UINT8)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: condition must be a bool tensor, got %s",
                op, dtype_name(cond->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "other", other->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "condition", cond));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  PTERON_CHECK_OK(check_tensor(ctx, op, "other", other));
  ResultType rt;
  rt.add_tensor(self);
  rt.add_tensor(other);
  const int32_t ct = rt.get();
  if (!can_cast(ct, out->dtype)) return cast_error(ctx, op, ct, out->dtype);
  const pteron_tensor* all[3] = {cond, self, other};
  int64_t shape[PTERON_MAX_DIM];
  int32_t nd = 0;
  if (!broadcast_shape_n(all, 3, shape, &nd)) {
    const pteron_tensor* bad = broadcast_shape(cond, self, shape, &nd) ? other : self;
    return broadcast_error(ctx, op, cond, bad);
  }
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, nd));
  if (fast(cond, self, other, ct, shape, nd, out)) return PTERON_OK;
  dispatch_half(ct, [&](auto t) {
    using C = decltype(t);
    const pteron_tensor* ins[3] = {cond, self, other};
    if constexpr (!std::is_same_v<C, bool>) {
      if (self->dtype == ct && other->dtype == ct && out->dtype == ct) {
        // common case: one dtype throughout; the condition is read as bytes
        const uint8_t* c = static_cast<const uint8_t*>(cond->data);
        const C* x = static_cast<const C*>(self->data);
        const C* y = static_cast<const C*>(other->data);
        C* o = static_cast<C*>(out->data);
        for_each_broadcast(out, ins, [&](int64_t oi, int64_t ci, int64_t xi, int64_t yi) {
          o[oi] = c[ci] ? x[xi] : y[yi];
        });
        return;
      }
    }
    map_elements<C, C>(ins, out, [](C c, C x, C y) { return c != C(0) ? x : y; });
  });
  return PTERON_OK;
}

}  // namespace kern
}  // namespace pteron
