// SPDX-License-Identifier: BSD-3-Clause
// reduce.cpp - portable reductions: aten::mean.out, sum.IntList_out,
// sum.out, amax.out, max.dim_max, argmax.out, cumsum.out.
//
// Reductions walk the kept dims of the input (and the matching output
// positions) and, for each, the reduced dims, using each tensor's own
// strides, so any dim order works. Floating sums accumulate in double;
// integer sums wrap modulo 2^64 and then to the out dtype (as PyTorch's
// int64 accumulation does). The out tensor's dtype decides what sum and
// cumsum compute in (a `dtype` argument, when given, must equal it). Every
// operator here accepts float16 and bfloat16 (sums accumulate in double and
// round once).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "reduction_plan.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

// Plans the reduction and resizes `out` to its shape.
int32_t plan_and_resize(pteron_kernel_context* ctx, const char* op, const pteron_tensor* self,
                        const int64_t* dims, size_t ndims, bool empty_means_all, bool keepdim,
                        pteron_tensor* out, ReducePlan* p) {
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, dims, ndims, empty_means_all, keepdim, p));
  PTERON_CHECK_OK(reject_alias(ctx, op, "out", out, self));
  return resize_out(ctx, op, "out", out, p->out_sizes, p->out_dim);
}

// ---- sum / mean -------------------------------------------------------------

// out = sum (or mean) of self over the plan, computed for out's dtype.
void sum_into(const pteron_tensor* self, pteron_tensor* out, const ReducePlan& p, bool mean) {
  ReduceIter it(self, out, &p);
  const int32_t odt = out->dtype;
  void* od = out->data;
  const double count = static_cast<double>(p.reduce_count);
  dispatch_half(self->dtype, [&](auto t) {
    using T = decltype(t);
    const void* x = self->data;
    if (is_floating(odt)) {
      it.outer([&](int64_t oo, int64_t base) {
        double acc = 0;
        it.inner(base, [&](int64_t off) { acc += static_cast<double>(load_typed<T>(x, off)); });
        store<double>(od, odt, oo, mean ? acc / count : acc);
      });
    } else if (odt == PTERON_DTYPE_BOOL) {
      it.outer([&](int64_t oo, int64_t base) {
        bool acc = false;
        it.inner(base, [&](int64_t off) { acc = acc || load_typed<T>(x, off) != T(0); });
        store<bool>(od, odt, oo, acc);
      });
    } else {
      it.outer([&](int64_t oo, int64_t base) {
        uint64_t acc = 0;
        it.inner(base, [&](int64_t off) {
          acc += static_cast<uint64_t>(convert<int64_t>(load_typed<T>(x, off)));
        });
        store<int64_t>(od, odt, oo, static_cast<int64_t>(acc));
      });
    }
  });
}

// sum.IntList_out(self, dim?, keepdim, dtype?, out) and
// mean.out(self, dim?, keepdim, dtype?, out)
int32_t sum_mean_dims(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                      const char* op, bool mean) {
  Args a{ctx, args, n, op};
  DimListReduction r;
  PTERON_CHECK_OK(read_dim_list_reduction(a, &r));
  const pteron_tensor* self = r.self;
  pteron_tensor* out = r.out;
  if (mean) PTERON_CHECK_OK(mean_dtype_check(ctx, op, r));
  ReducePlan p;
  PTERON_CHECK_OK(plan_and_resize(ctx, op, self, r.dims, r.ndims, true, r.keepdim, out, &p));
  sum_into(self, out, p, mean);
  return PTERON_OK;
}

int32_t sum_intlist_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return sum_mean_dims(ctx, args, n, "aten::sum.IntList_out", false);
}
int32_t mean_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return sum_mean_dims(ctx, args, n, "aten::mean.out", true);
}

// sum.out(self, *, dtype?, out): everything.
int32_t sum_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::sum.out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  int32_t dtype = -1;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(read_opt_dtype(a, 1, "dtype", &dtype));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  PTERON_CHECK_OK(dtype_arg_matches_out(ctx, op, dtype, out));
  ReducePlan p;
  PTERON_CHECK_OK(plan_and_resize(ctx, op, self, nullptr, 0, true, false, out, &p));
  sum_into(self, out, p, false);
  return PTERON_OK;
}

// ---- amax / max.dim / argmax ------------------------------------------------

int32_t amax_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::amax.out";
  Args a{ctx, args, n, op};
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
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  if (!can_cast(self->dtype, out->dtype)) return cast_error(ctx, op, self->dtype, out->dtype);
  ReducePlan p;
  PTERON_CHECK_OK(
      make_reduce_plan(ctx, op, self, has_dims ? dims : nullptr, ndims, true, keepdim, &p));
  PTERON_CHECK_OK(zero_size_reduce_check(ctx, op, self, p));
  PTERON_CHECK_OK(reject_alias(ctx, op, "out", out, self));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  ReduceIter it(self, out, &p);
  dispatch_half(self->dtype, [&](auto t) {
    using T = decltype(t);
    const void* x = self->data;
    it.outer([&](int64_t oo, int64_t base) {
      bool first = true;
      T m{};
      it.inner(base, [&](int64_t off) {
        const T v = load_typed<T>(x, off);
        if (first || beats<true>(v, m)) m = v;
        first = false;
      });
      store<T>(out->data, out->dtype, oo, m);
    });
  });
  return PTERON_OK;
}

int32_t max_dim_max(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::max.dim_max";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *values = nullptr, *indices = nullptr;
  int64_t dim = 0;
  bool keepdim = false;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &dim));
  PTERON_CHECK_OK(a.boolean(2, "keepdim", &keepdim));
  PTERON_CHECK_OK(a.tensor(3, "max", &values));
  PTERON_CHECK_OK(a.tensor(4, "max_values", &indices));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "max", values->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  if (!can_cast(self->dtype, values->dtype)) return cast_error(ctx, op, self->dtype, values->dtype);
  if (indices->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: indices out must be int64, got %s", op,
                dtype_name(indices->dtype));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, &dim, 1, false, keepdim, &p));
  PTERON_CHECK_OK(zero_size_reduce_check(ctx, op, self, p));
  PTERON_CHECK_OK(reject_alias(ctx, op, "max", values, self));
  PTERON_CHECK_OK(reject_alias(ctx, op, "max_values", indices, self));
  PTERON_CHECK_OK(resize_out(ctx, op, "max", values, p.out_sizes, p.out_dim));
  PTERON_CHECK_OK(resize_out(ctx, op, "max_values", indices, p.out_sizes, p.out_dim));
  extreme_with_index<true>(self, p, values, indices);
  return PTERON_OK;
}

int32_t argmax_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return arg_extreme_out<true>(ctx, args, n, "aten::argmax.out");
}

// ---- cumsum -----------------------------------------------------------------

int32_t cumsum_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::cumsum.out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t dim = 0;
  int32_t dtype = -1;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &dim));
  PTERON_CHECK_OK(read_opt_dtype(a, 2, "dtype", &dtype));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  if (out->dtype == PTERON_DTYPE_BOOL) return unsupported_dtype(ctx, op, "out", out->dtype);
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  PTERON_CHECK_OK(dtype_arg_matches_out(ctx, op, dtype, out));
  const int64_t orig = dim;
  if (!wrap_dim(dim, self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: dim %lld out of range for a tensor of rank %d", op,
                static_cast<long long>(orig), self->dim);
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, self->sizes, self->dim));
  if (numel(self) == 0) return PTERON_OK;
  const int32_t d = static_cast<int32_t>(dim);
  const int64_t len = self->dim == 0 ? 1 : self->sizes[d];
  const int64_t xs = self->dim == 0 ? 0 : self->strides[d];
  const int64_t ys = self->dim == 0 ? 0 : out->strides[d];
  const bool fl = is_floating(out->dtype);
  dispatch_half(self->dtype, [&](auto t) {
    using T = decltype(t);
    const void* x = self->data;
    auto lane = [&](int64_t ox, int64_t oy) {
      if (fl) {
        double acc = 0;
        for (int64_t i = 0; i < len; ++i) {
          acc += static_cast<double>(load_typed<T>(x, ox + i * xs));
          store<double>(out->data, out->dtype, oy + i * ys, acc);
        }
      } else {
        uint64_t acc = 0;
        for (int64_t i = 0; i < len; ++i) {
          acc += static_cast<uint64_t>(convert<int64_t>(load_typed<T>(x, ox + i * xs)));
          store<int64_t>(out->data, out->dtype, oy + i * ys, static_cast<int64_t>(acc));
        }
      }
    };
    if (self->dim == 0)
      lane(0, 0);
    else
      for_each_lane(self, out, d, lane);
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::mean", "out", nullptr, mean_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::sum", "IntList_out", nullptr, sum_intlist_out,
                         PTERON_KERNEL_PRIORITY, 0},
                        {"aten::sum", "out", nullptr, sum_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::amax", "out", nullptr, amax_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::max", "dim_max", nullptr, max_dim_max, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::argmax", "out", nullptr, argmax_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::cumsum", "out", nullptr, cumsum_out, PTERON_KERNEL_PRIORITY, 0})
