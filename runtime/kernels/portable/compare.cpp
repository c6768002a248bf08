// SPDX-License-Identifier: BSD-3-Clause
// compare.cpp - portable comparisons and boolean ops: aten::eq/ne/gt/lt/ge/le
// (Scalar_out, Tensor_out), logical_not.out, any (out, dims_out, all_out),
// where.self_out.
//
// Comparisons compute in the promoted type of their operands (PyTorch's
// result_type) and write 0/1 in the out tensor's dtype (usually bool; any
// supported dtype is accepted, as in PyTorch). Every operator here accepts
// float16 and bfloat16 too.
#include <cstdint>
#include <cstring>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "reduction_plan.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

enum class Cmp { Eq, Ne, Gt, Lt, Ge, Le };

template <typename C>
bool compare(Cmp c, C a, C b) {
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

int32_t compare_impl(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                     const char* op, Cmp c, bool scalar_other) {
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

#define PTERON_CMP_KERNELS(name, cmp)                                                          \
  int32_t name##_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    return compare_impl(ctx, args, n, "aten::" #name ".Scalar_out", cmp, true);                \
  }                                                                                            \
  int32_t name##_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    return compare_impl(ctx, args, n, "aten::" #name ".Tensor_out", cmp, false);               \
  }

PTERON_CMP_KERNELS(eq, Cmp::Eq)
PTERON_CMP_KERNELS(ne, Cmp::Ne)
PTERON_CMP_KERNELS(gt, Cmp::Gt)
PTERON_CMP_KERNELS(lt, Cmp::Lt)
PTERON_CMP_KERNELS(ge, Cmp::Ge)
PTERON_CMP_KERNELS(le, Cmp::Le)

#undef PTERON_CMP_KERNELS

// ---- logical_not --------------------------------------------------------------

int32_t logical_not_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
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
  dispatch_compute(self->dtype, [&](auto t) {
    using C = decltype(t);
    const pteron_tensor* ins[1] = {self};
    map_elements<C, bool>(ins, out, [](C x) { return x == C(0); });
  });
  return PTERON_OK;
}

// ---- any ----------------------------------------------------------------------

// dims: nullptr = all dims; otherwise the listed dims (an empty list reduces
// nothing, as any.dims does in PyTorch).
int32_t any_impl(const Args& a, pteron_tensor* self, const int64_t* dims, size_t ndims,
                 bool keepdim, pteron_tensor* out) {
  pteron_kernel_context* ctx = a.ctx;
  PTERON_CHECK_OK(check_supported_half(ctx, a.op, "self", self->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, a.op, "self", self));
  if (out->dtype != PTERON_DTYPE_BOOL && out->dtype != PTERON_DTYPE_UINT8)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: out must be bool or uint8, got %s", a.op,
                dtype_name(out->dtype));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, a.op, self, dims, ndims, false, keepdim, &p));
  PTERON_CHECK_OK(reject_alias(ctx, a.op, "out", out, self));
  PTERON_CHECK_OK(resize_out(ctx, a.op, "out", out, p.out_sizes, p.out_dim));
  ReduceIter it(self, out, &p);
  uint8_t* o = static_cast<uint8_t*>(out->data);
  dispatch_half(self->dtype, [&](auto t) {
    using T = decltype(t);
    const void* x = self->data;
    it.outer([&](int64_t oo, int64_t base) {
      bool r = false;
      it.inner(base, [&](int64_t off) { r = r || load_typed<T>(x, off) != T(0); });
      o[oo] = r ? 1 : 0;
    });
  });
  return PTERON_OK;
}

// any.out(self, int dim, bool keepdim, out)
int32_t any_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::any.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t dim = 0;
  bool keepdim = false;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &dim));
  PTERON_CHECK_OK(a.boolean(2, "keepdim", &keepdim));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  return any_impl(a, self, &dim, 1, keepdim, out);
}

// any.dims_out(self, int[]? dim, bool keepdim, out)
int32_t any_dims_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::any.dims_out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t single = 0;
  const int64_t* dims = nullptr;
  size_t ndims = 0;
  bool has_dims = false, keepdim = false;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(read_opt_int_list(a, 1, "dim", &single, &dims, &ndims, &has_dims));
  PTERON_CHECK_OK(a.boolean(2, "keepdim", &keepdim));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  static const int64_t none_marker = 0;
  // an empty list reduces nothing: pass a non-null pointer with size 0
  return any_impl(a, self, has_dims ? (ndims ? dims : &none_marker) : nullptr, ndims, keepdim, out);
}

// any.all_out(self, out)
int32_t any_all_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::any.all_out"};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  return any_impl(a, self, nullptr, 0, false, out);
}

// ---- where ----------------------------------------------------------------------

int32_t where_self_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
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

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::eq", "Scalar_out", nullptr, eq_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::eq", "Tensor_out", nullptr, eq_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::ne", "Scalar_out", nullptr, ne_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::ne", "Tensor_out", nullptr, ne_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::gt", "Scalar_out", nullptr, gt_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::gt", "Tensor_out", nullptr, gt_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::lt", "Scalar_out", nullptr, lt_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::lt", "Tensor_out", nullptr, lt_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::ge", "Scalar_out", nullptr, ge_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::ge", "Tensor_out", nullptr, ge_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::le", "Scalar_out", nullptr, le_scalar_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::le", "Tensor_out", nullptr, le_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::logical_not", "out", nullptr, logical_not_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::any", "out", nullptr, any_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::any", "dims_out", nullptr, any_dims_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::any", "all_out", nullptr, any_all_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::where", "self_out", nullptr, where_self_out, PTERON_KERNEL_PRIORITY, 0})
