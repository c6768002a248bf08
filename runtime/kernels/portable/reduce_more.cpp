// SPDX-License-Identifier: BSD-3-Clause
// reduce_more.cpp - more portable reductions: aten::amin.out, argmin.out,
// max.unary_out, min.unary_out, min.dim_min, mean.dtype_out, prod.int_out,
// prod.out, var.correction_out, var.out, var_mean.correction_out and
// topk.values.
//
// As reduce.cpp: the plan (reduction_plan.h) walks each tensor by its own
// strides, so any dim order works. min/max/argmin: the first NaN wins, ties
// keep the first index. var: two passes in double, divided by
// max(0, count - correction) (so 0/0 gives NaN as in PyTorch). prod
// computes for the out tensor's dtype: double for floating outs, wrapping
// int64 for integer ones. topk orders NaN above every number and keeps the
// lower index first among equals.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "reduction_plan.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

// The one dtype dispatch of this file (all real dtypes and bool, float16 and
// bfloat16 as storage types: read through float, accumulated in double,
// rounded once when stored).
template <typename F>
bool dispatch_real(int32_t d, F&& f) {
  return dispatch_half(d, static_cast<F&&>(f));
}

int32_t check_in_out(pteron_kernel_context* ctx, const char* op, const pteron_tensor* self,
                     const pteron_tensor* out, const char* out_name) {
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, out_name, out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  return reject_alias(ctx, op, out_name, out, self);
}

// ---- amin / min / max / argmin ---------------------------------------------

template <bool Max>
void extreme_into(const pteron_tensor* self, const ReducePlan& p, pteron_tensor* out) {
  ReduceIter it(self, out, &p);
  dispatch_real(self->dtype, [&](auto t) {
    using T = decltype(t);
    const void* x = self->data;
    it.outer([&](int64_t oo, int64_t base) {
      bool first = true;
      T m{};
      it.inner(base, [&](int64_t off) {
        const T v = load_typed<T>(x, off);
        if (first || beats<Max>(v, m)) m = v;
        first = false;
      });
      store<T>(out->data, out->dtype, oo, m);
    });
  });
}

// amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!) out)
int32_t amin_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::amin.out";
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
  PTERON_CHECK_OK(check_in_out(ctx, op, self, out, "out"));
  if (!can_cast(self->dtype, out->dtype)) return cast_error(ctx, op, self->dtype, out->dtype);
  ReducePlan p;
  PTERON_CHECK_OK(
      make_reduce_plan(ctx, op, self, has_dims ? dims : nullptr, ndims, true, keepdim, &p));
  PTERON_CHECK_OK(zero_size_reduce_check(ctx, op, self, p));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  extreme_into<false>(self, p, out);
  return PTERON_OK;
}

// max.unary_out / min.unary_out(Tensor self, *, Tensor(a!) out): a 0-dim out.
template <bool Max>
int32_t extreme_unary_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  const char* op = Max ? "aten::max.unary_out" : "aten::min.unary_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  PTERON_CHECK_OK(check_in_out(ctx, op, self, out, "out"));
  if (!can_cast(self->dtype, out->dtype)) return cast_error(ctx, op, self->dtype, out->dtype);
  if (numel(self) == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: the operation has no identity, so the input must not be empty", op);
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, nullptr, 0, true, false, &p));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  extreme_into<Max>(self, p, out);
  return PTERON_OK;
}

// min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) min,
//   Tensor(b!) min_indices)
int32_t min_dim_min(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::min.dim_min";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *values = nullptr, *indices = nullptr;
  int64_t dim = 0;
  bool keepdim = false;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &dim));
  PTERON_CHECK_OK(a.boolean(2, "keepdim", &keepdim));
  PTERON_CHECK_OK(a.tensor(3, "min", &values));
  PTERON_CHECK_OK(a.tensor(4, "min_indices", &indices));
  PTERON_CHECK_OK(check_in_out(ctx, op, self, values, "min"));
  PTERON_CHECK_OK(reject_alias(ctx, op, "min_indices", indices, self, values));
  if (!can_cast(self->dtype, values->dtype)) return cast_error(ctx, op, self->dtype, values->dtype);
  if (indices->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: min_indices must be int64, got %s", op,
                dtype_name(indices->dtype));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, &dim, 1, false, keepdim, &p));
  PTERON_CHECK_OK(zero_size_reduce_check(ctx, op, self, p));
  PTERON_CHECK_OK(resize_out(ctx, op, "min", values, p.out_sizes, p.out_dim));
  PTERON_CHECK_OK(resize_out(ctx, op, "min_indices", indices, p.out_sizes, p.out_dim));
  extreme_with_index<false>(self, p, values, indices);
  return PTERON_OK;
}

// argmin.out(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!) out)
int32_t argmin_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return arg_extreme_out<false>(ctx, args, n, "aten::argmin.out");
}

// ---- mean.dtype_out ---------------------------------------------------------

// mean.dtype_out(Tensor self, *, ScalarType? dtype=None, Tensor(a!) out)
int32_t mean_dtype_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::mean.dtype_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  int32_t dtype = -1;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(read_opt_dtype(a, 1, "dtype", &dtype));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(check_in_out(ctx, op, self, out, "out"));
  PTERON_CHECK_OK(dtype_arg_matches_out(ctx, op, dtype, out));
  const int32_t in_dt = dtype >= 0 ? dtype : self->dtype;
  if (!is_floating(in_dt) || !is_floating(out->dtype))
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: could not infer output dtype: %s must be a floating point dtype", op,
                dtype_name(is_floating(in_dt) ? out->dtype : in_dt));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, nullptr, 0, true, false, &p));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  ReduceIter it(self, out, &p);
  const double count = static_cast<double>(p.reduce_count);
  dispatch_real(self->dtype, [&](auto t) {
    using T = decltype(t);
    it.outer([&](int64_t oo, int64_t base) {
      double acc = 0;
      it.inner(base,
               [&](int64_t off) { acc += static_cast<double>(load_typed<T>(self->data, off)); });
      store<double>(out->data, out->dtype, oo, acc / count);
    });
  });
  return PTERON_OK;
}

// ---- prod -------------------------------------------------------------------

void prod_into(const pteron_tensor* self, pteron_tensor* out, const ReducePlan& p) {
  ReduceIter it(self, out, &p);
  const int32_t odt = out->dtype;
  dispatch_real(self->dtype, [&](auto t) {
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
  PTERON_CHECK_OK(check_in_out(ctx, op, self, out, "out"));
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
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  int32_t dtype = -1;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(read_opt_dtype(a, 1, "dtype", &dtype));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
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
  PTERON_CHECK_OK(check_in_out(ctx, op, v.self, v.var, v.mean ? "out0" : "out"));
  if (v.mean) PTERON_CHECK_OK(check_in_out(ctx, op, v.self, v.mean, "out1"));
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
  dispatch_real(v.self->dtype, [&](auto t) {
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

// ---- topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True,
//   bool sorted=True, *, Tensor(a!) values, Tensor(b!) indices) ------------

// Calls f(off_self, off_values, off_indices) for every position of the
// dims other than `dim` (self's sizes; the outs differ only along `dim`).
template <typename F>
void for_each_lane3(const pteron_tensor* s, const pteron_tensor* v, const pteron_tensor* x,
                    int32_t dim, F&& f) {
  int64_t total = 1;
  for (int32_t i = 0; i < s->dim; ++i)
    if (i != dim) total *= s->sizes[i];
  if (total == 0) return;
  int64_t idx[PTERON_MAX_DIM] = {0};
  int64_t o[3] = {0, 0, 0};
  const pteron_tensor* ts[3] = {s, v, x};
  for (int64_t n = 0; n < total; ++n) {
    f(o[0], o[1], o[2]);
    for (int32_t i = s->dim - 1; i >= 0; --i) {
      if (i == dim) continue;
      ++idx[i];
      for (int k = 0; k < 3; ++k) o[k] += ts[k]->strides[i];
      if (idx[i] < s->sizes[i]) break;
      for (int k = 0; k < 3; ++k) o[k] -= ts[k]->strides[i] * idx[i];
      idx[i] = 0;
    }
  }
}

int32_t topk_values(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::topk.values";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(7));
  pteron_tensor *self = nullptr, *values = nullptr, *indices = nullptr;
  int64_t k = 0, dim = -1;
  bool largest = true, sorted = true;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "k", &k));
  PTERON_CHECK_OK(a.integer(2, "dim", &dim));
  PTERON_CHECK_OK(a.boolean(3, "largest", &largest));
  PTERON_CHECK_OK(a.boolean(4, "sorted", &sorted));
  PTERON_CHECK_OK(a.tensor(5, "values", &values));
  PTERON_CHECK_OK(a.tensor(6, "indices", &indices));
  PTERON_CHECK_OK(check_in_out(ctx, op, self, values, "values"));
  PTERON_CHECK_OK(reject_alias(ctx, op, "indices", indices, self, values));
  if (self->dtype == PTERON_DTYPE_BOOL) return unsupported_dtype(ctx, op, "self", self->dtype);
  if (values->dtype != self->dtype)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: values dtype %s differs from self dtype %s", op, dtype_name(values->dtype),
                dtype_name(self->dtype));
  if (indices->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: indices must be int64, got %s", op,
                dtype_name(indices->dtype));
  const int64_t orig = dim;
  if (!wrap_dim(dim, self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: dim %lld out of range for a tensor of rank %d", op, (long long)orig,
                self->dim);
  const int32_t d = static_cast<int32_t>(dim);
  const int64_t len = self->dim == 0 ? 1 : self->sizes[d];
  if (k < 0 || k > len)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: k (%lld) is out of range for dim %lld of size %lld", op, (long long)k,
                (long long)orig, (long long)len);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < self->dim; ++i) sizes[i] = i == d ? k : self->sizes[i];
  PTERON_CHECK_OK(resize_out(ctx, op, "values", values, sizes, self->dim));
  PTERON_CHECK_OK(resize_out(ctx, op, "indices", indices, sizes, self->dim));
  if (k == 0 || numel(self) == 0) return PTERON_OK;
  int64_t* order =
      static_cast<int64_t*>(pteron_kernel_scratch(ctx, static_cast<size_t>(len) * sizeof(int64_t)));
  if (!order) return fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: no scratch for a lane", op);
  const int64_t xs = self->dim == 0 ? 0 : self->strides[d];
  const int64_t vs = self->dim == 0 ? 0 : values->strides[d];
  const int64_t is = self->dim == 0 ? 0 : indices->strides[d];
  (void)sorted;  // the k chosen are always written in order
  dispatch_real(self->dtype, [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(self->data);
    T* y = static_cast<T*>(values->data);
    int64_t* yi = static_cast<int64_t*>(indices->data);
    auto lane = [&](int64_t ox, int64_t ov, int64_t oi) {
      for (int64_t j = 0; j < len; ++j) order[j] = j;
      auto before = [&](int64_t p, int64_t q) {
        const T u = x[ox + p * xs], w = x[ox + q * xs];
        if (largest ? beats<true>(u, w) : beats<false>(u, w)) return true;
        if (largest ? beats<true>(w, u) : beats<false>(w, u)) return false;
        return p < q;
      };
      std::partial_sort(order, order + k, order + len, before);
      for (int64_t j = 0; j < k; ++j) {
        y[ov + j * vs] = x[ox + order[j] * xs];
        yi[oi + j * is] = order[j];
      }
    };
    if (self->dim == 0)
      lane(0, 0, 0);
    else
      for_each_lane3(self, values, indices, d, lane);
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::amin", "out", nullptr, amin_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::argmin", "out", nullptr, argmin_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::max", "unary_out", nullptr, extreme_unary_out<true>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::min", "unary_out", nullptr, extreme_unary_out<false>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::min", "dim_min", nullptr, min_dim_min, PTERON_KERNEL_PRIORITY, 0},
    {"aten::mean", "dtype_out", nullptr, mean_dtype_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::prod", "int_out", nullptr, prod_int_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::prod", "out", nullptr, prod_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::var", "correction_out", nullptr, var_correction_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::var", "out", nullptr, var_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::var_mean", "correction_out", nullptr, var_mean_correction_out, PTERON_KERNEL_PRIORITY,
     0},
    {"aten::topk", "values", nullptr, topk_values, PTERON_KERNEL_PRIORITY, 0})
