// SPDX-License-Identifier: BSD-3-Clause
// compare.cpp - portable comparisons and boolean ops: aten::eq/ne/gt/lt/ge/le
// (Scalar_out, Tensor_out), logical_not.out, any (out, dims_out, all_out),
// where.self_out.
//
// The comparisons, logical_not and where are select_ops.h's (shared with
// kernels_optimized), with no fast path. Every operator here accepts float16
// and bfloat16 too.
#include <cstdint>
#include <cstring>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "reduction_plan.h"
#include "select_ops.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

#define PTERON_CMP_KERNELS(name, cmp)                                                          \
  int32_t name##_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    return compare_impl(ctx, args, n, "aten::" #name ".Scalar_out", cmp, true, NoFastPath{});  \
  }                                                                                            \
  int32_t name##_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    return compare_impl(ctx, args, n, "aten::" #name ".Tensor_out", cmp, false, NoFastPath{}); \
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
  return logical_not_impl(ctx, args, n, NoFastPath{});
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
  return where_self_impl(ctx, args, n, NoFastPath{});
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
