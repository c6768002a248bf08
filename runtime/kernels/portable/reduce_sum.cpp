// SPDX-License-Identifier: BSD-3-Clause
// reduce_sum.cpp - portable reductions that accumulate: aten::sum.out,
// sum.IntList_out, mean.out, mean.dtype_out, prod.int_out, prod.out,
// var.correction_out, var.out, var_mean.correction_out and cumsum.out.
//
// Reductions walk the kept dims of the input (and the matching output
// positions) and, for each, the reduced dims, using each tensor's own
// strides (reduction_plan.h), so any dim order works. Floating sums
// accumulate in double; integer sums wrap modulo 2^64 and then to the out
// dtype (as PyTorch's int64 accumulation does). The out tensor's dtype
// decides what sum, prod and cumsum compute in (a `dtype` argument, when
// given, must equal it): prod computes in double for floating outs and in
// wrapping int64 for integer ones. var: two passes in double, divided by
// max(0, count - correction) (so 0/0 gives NaN as in PyTorch). Every
// operator here accepts float16 and bfloat16 (read through float,
// accumulated in double, rounded once when stored).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "arg_reading.h"
#include "dtype_convert.h"
#include "kernel_util.h"
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

// The arguments of the whole-tensor reductions sum.out, mean.dtype_out and
// prod.out: (Tensor self, *, ScalarType? dtype=None, Tensor(a!) out).
int32_t read_self_dtype_out(const Args& a, pteron_tensor** self, int32_t* dtype,
                            pteron_tensor** out) {
  PTERON_CHECK_OK(a.arity(3));
  PTERON_CHECK_OK(a.tensor(0, "self", self));
  PTERON_CHECK_OK(read_opt_dtype(a, 1, "dtype", dtype));
  return a.tensor(2, "out", out);
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
  pteron_tensor *self = nullptr, *out = nullptr;
  int32_t dtype = -1;
  PTERON_CHECK_OK(read_self_dtype_out(a, &self, &dtype, &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  PTERON_CHECK_OK(dtype_arg_matches_out(ctx, op, dtype, out));
  ReducePlan p;
  PTERON_CHECK_OK(plan_and_resize(ctx, op, self, nullptr, 0, true, false, out, &p));
  sum_into(self, out, p, false);
  return PTERON_OK;
}

// ---- mean.dtype_out ---------------------------------------------------------

// mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
int32_t mean_dtype_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::mean.dtype_out";
  Args a{ctx, args, n, op};
  pteron_tensor *self = nullptr, *out = nullptr;
  int32_t dtype = -1;
  PTERON_CHECK_OK(read_self_dtype_out(a, &self, &dtype, &out));
  PTERON_CHECK_OK(check_reduction_in_out(ctx, op, self, out, "out"));
  PTERON_CHECK_OK(dtype_arg_matches_out(ctx, op, dtype, out));
  const int32_t in_dt = dtype >= 0 ? dtype : self->dtype;
  if (!is_floating(in_dt) || !is_floating(out->dtype))
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: could not infer output dtype: %s must be a floating point dtype", op,
                dtype_name(is_floating(in_dt) ? out->dtype : in_dt));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, nullptr, 0, true, false, &p));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  sum_into(self, out, p, true);
  return PTERON_OK;
}

// ---- prod -------------------------------------------------------------------

void prod_into(const pteron_tensor* self, pteron_tensor* out, const ReducePlan& p) {
  ReduceIter it(self, out, &p);
  const int32_t odt = out->dtype;
  dispatch_half(self->dtype, [&](auto t) {
    using T = decltype(t);
    const void* x = self->data;
    if (is_floating(odt)) {
      it.outer([&](int64_t oo, int64_t base) {
        double acc = 1;
        it.inner(base, [&](int64_t off) { acc *= static_cast<double>(load_typed<T>(x, off)); });
        store<double>(out->data, odt, oo, acc);
      });
    } else if (odt == PTERON_DTYPE_BOOL) {
      it.outer([&](int64_t oo, int64_t base) {
        bool acc = true;
        it.inner(base, [&](int64_t off) { acc = acc && load_typed<T>(x, off) != T(0); });
        store<bool>(out->data, odt, oo, acc);
      });
    } else {
      it.outer([&](int64_t oo, int64_t base) {
        int64_t acc = 1;
        it.inner(base, [&](int64_t off) {
          acc = wrap_mul(acc, convert<int64_t>(load_typed<T>(x, off)));
        });
        store<int64_t>(out->data, odt, oo, acc);
      });
    }
  });
}

// The dtype prod computes in: `dtype`, else int64 for integral inputs.
int32_t prod_check(pteron_kernel_context* ctx, const char* op, const pteron_tensor* self,
                   int32_t dtype, const pteron_tensor* out) {
  PTERON_CHECK_OK(check_reduction_in_out(ctx, op, self, out, "out"));
  if (dtype >= 0) PTERON_CHECK_OK(check_supported_half(ctx, op, "dtype", dtype));
  PTERON_CHECK_OK(dtype_arg_matches_out(ctx, op, dtype, out));
  if (dtype < 0 && is_floating(self->dtype) && !is_floating(out->dtype))
    return cast_error(ctx, op, self->dtype, out->dtype);
  return PTERON_OK;
}

// prod.int_out(Tensor self, int dim, bool keepdim=False, *,
//   ScalarType? dtype=None, Tensor(a!) out)
int32_t prod_int_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::prod.int_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t dim = 0;
  bool keepdim = false;
  int32_t dtype = -1;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &dim));
  PTERON_CHECK_OK(a.boolean(2, "keepdim", &keepdim));
  PTERON_CHECK_OK(read_opt_dtype(a, 3, "dtype", &dtype));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(prod_check(ctx, op, self, dtype, out));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, &dim, 1, false, keepdim, &p));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  prod_into(self, out, p);
  return PTERON_OK;
}

// prod.out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
int32_t prod_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::prod.out";
  Args a{ctx, args, n, op};
  pteron_tensor *self = nullptr, *out = nullptr;
  int32_t dtype = -1;
  PTERON_CHECK_OK(read_self_dtype_out(a, &self, &dtype, &out));
  PTERON_CHECK_OK(prod_check(ctx, op, self, dtype, out));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, nullptr, 0, true, false, &p));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  prod_into(self, out, p);
  return PTERON_OK;
}

// ---- var / var_mean ---------------------------------------------------------

struct VarArgs {
  pteron_tensor *self = nullptr, *var = nullptr, *mean = nullptr;
  const int64_t* dims = nullptr;
  size_t ndims = 0;
  bool has_dims = false, keepdim = false;
  double correction = 1;
};

int32_t var_run(pteron_kernel_context* ctx, const char* op, const VarArgs& v) {
  PTERON_CHECK_OK(check_reduction_in_out(ctx, op, v.self, v.var, v.mean ? "out0" : "out"));
  if (v.mean) PTERON_CHECK_OK(check_reduction_in_out(ctx, op, v.self, v.mean, "out1"));
  for (const pteron_tensor* t : {v.self, v.var, v.mean}) {
    if (t && !is_floating(t->dtype))
      return unsupported_dtype(ctx, op, t == v.self ? "self" : "out", t->dtype);
  }
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, v.self, v.has_dims ? v.dims : nullptr, v.ndims, true,
                                   v.keepdim, &p));
  PTERON_CHECK_OK(resize_out(ctx, op, v.mean ? "out0" : "out", v.var, p.out_sizes, p.out_dim));
  if (v.mean) PTERON_CHECK_OK(resize_out(ctx, op, "out1", v.mean, p.out_sizes, p.out_dim));
  ReduceIter it(v.self, v.var, &p);
  const double count = static_cast<double>(p.reduce_count);
  const double divisor = std::max(0.0, count - v.correction);
  dispatch_half(v.self->dtype, [&](auto t) {
    using T = decltype(t);
    const void* x = v.self->data;
    it.outer2(v.mean ? v.mean : v.var, [&](int64_t vo, int64_t mo, int64_t base) {
      double sum = 0;
      it.inner(base, [&](int64_t off) { sum += static_cast<double>(load_typed<T>(x, off)); });
      const double mu = sum / count;
      double m2 = 0;
      it.inner(base, [&](int64_t off) {
        const double d = static_cast<double>(load_typed<T>(x, off)) - mu;
        m2 += d * d;
      });
      store<double>(v.var->data, v.var->dtype, vo, m2 / divisor);
      if (v.mean) store<double>(v.mean->data, v.mean->dtype, mo, mu);
    });
  });
  return PTERON_OK;
}

int32_t read_var_dims(const Args& a, size_t i, int64_t* single, VarArgs* v) {
  return read_opt_int_list(a, i, "dim", single, &v->dims, &v->ndims, &v->has_dims);
}

int32_t read_correction(const Args& a, size_t i, VarArgs* v) {
  Scalar s;
  bool present = false;
  PTERON_CHECK_OK(read_opt_scalar(a, i, "correction", &s, &present));
  v->correction = present ? s.d : 1.0;
  return PTERON_OK;
}

// var.correction_out(Tensor self, int[1]? dim=None, *, Scalar? correction=None,
//   bool keepdim=False, Tensor(a!) out)
int32_t var_correction_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::var.correction_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(5));
  VarArgs v;
  int64_t single = 0;
  PTERON_CHECK_OK(a.tensor(0, "self", &v.self));
  PTERON_CHECK_OK(read_var_dims(a, 1, &single, &v));
  PTERON_CHECK_OK(read_correction(a, 2, &v));
  PTERON_CHECK_OK(a.boolean(3, "keepdim", &v.keepdim));
  PTERON_CHECK_OK(a.tensor(4, "out", &v.var));
  return var_run(ctx, op, v);
}

// var.out(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False, *,
//   Tensor(a!) out)
int32_t var_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::var.out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(5));
  VarArgs v;
  int64_t single = 0;
  bool unbiased = true;
  PTERON_CHECK_OK(a.tensor(0, "self", &v.self));
  PTERON_CHECK_OK(read_var_dims(a, 1, &single, &v));
  PTERON_CHECK_OK(a.boolean(2, "unbiased", &unbiased));
  PTERON_CHECK_OK(a.boolean(3, "keepdim", &v.keepdim));
  PTERON_CHECK_OK(a.tensor(4, "out", &v.var));
  v.correction = unbiased ? 1.0 : 0.0;
  return var_run(ctx, op, v);
}

// var_mean.correction_out(Tensor self, int[1]? dim=None, *,
//   Scalar? correction=None, bool keepdim=False, Tensor(a!) out0,
//   Tensor(b!) out1)
int32_t var_mean_correction_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::var_mean.correction_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(6));
  VarArgs v;
  int64_t single = 0;
  PTERON_CHECK_OK(a.tensor(0, "self", &v.self));
  PTERON_CHECK_OK(read_var_dims(a, 1, &single, &v));
  PTERON_CHECK_OK(read_correction(a, 2, &v));
  PTERON_CHECK_OK(a.boolean(3, "keepdim", &v.keepdim));
  PTERON_CHECK_OK(a.tensor(4, "out0", &v.var));
  PTERON_CHECK_OK(a.tensor(5, "out1", &v.mean));
  if (v.var == v.mean)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: out0 and out1 are the same tensor", op);
  return var_run(ctx, op, v);
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

PTERON_REGISTER_KERNELS(
    {"aten::sum", "out", nullptr, sum_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sum", "IntList_out", nullptr, sum_intlist_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::mean", "out", nullptr, mean_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::mean", "dtype_out", nullptr, mean_dtype_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::prod", "int_out", nullptr, prod_int_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::prod", "out", nullptr, prod_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::var", "correction_out", nullptr, var_correction_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::var", "out", nullptr, var_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::var_mean", "correction_out", nullptr, var_mean_correction_out, PTERON_KERNEL_PRIORITY,
     0},
    {"aten::cumsum", "out", nullptr, cumsum_out, PTERON_KERNEL_PRIORITY, 0})
