// SPDX-License-Identifier: BSD-3-Clause
// reduce_minmax.cpp - portable reductions that pick elements: aten::amax.out,
// amin.out, max.unary_out, min.unary_out, max.dim_max, min.dim_min,
// argmax.out, argmin.out and topk.values.
//
// The plan (reduction_plan.h) walks each tensor by its own strides, so any
// dim order works. min/max/argmin/argmax: the first NaN wins, ties keep the
// first index. topk orders NaN above every number and keeps the lower index
// first among equals. Every operator here accepts float16 and bfloat16
// (compared through float, stored as read).
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

// ---- amax / amin / max / min / argmax / argmin -----------------------------

template <bool Max>
void extreme_into(const pteron_tensor* self, const ReducePlan& p, pteron_tensor* out) {
  ReduceIter it(self, out, &p);
  dispatch_half(self->dtype, [&](auto t) {
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

// amax.out / amin.out(Tensor self, int[1] dim=[], bool keepdim=False, *,
//   Tensor(a!) out)
template <bool Max>
int32_t amax_amin_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  const char* op = Max ? "aten::amax.out" : "aten::amin.out";
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
  PTERON_CHECK_OK(check_reduction_in_out(ctx, op, self, out, "out"));
  if (!can_cast(self->dtype, out->dtype)) return cast_error(ctx, op, self->dtype, out->dtype);
  ReducePlan p;
  PTERON_CHECK_OK(
      make_reduce_plan(ctx, op, self, has_dims ? dims : nullptr, ndims, true, keepdim, &p));
  PTERON_CHECK_OK(zero_size_reduce_check(ctx, op, self, p));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  extreme_into<Max>(self, p, out);
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
  PTERON_CHECK_OK(check_reduction_in_out(ctx, op, self, out, "out"));
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

// max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max,
//   Tensor(b!) max_values) and min.dim_min(..., Tensor(a!) min,
//   Tensor(b!) min_indices): the values and (int64) indices of the first
// largest / smallest element along dim. Neither out may be an input.
template <bool Max>
int32_t extreme_dim_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  const char* op = Max ? "aten::max.dim_max" : "aten::min.dim_min";
  const char* values_name = Max ? "max" : "min";
  const char* indices_name = Max ? "max_values" : "min_indices";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *values = nullptr, *indices = nullptr;
  int64_t dim = 0;
  bool keepdim = false;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &dim));
  PTERON_CHECK_OK(a.boolean(2, "keepdim", &keepdim));
  PTERON_CHECK_OK(a.tensor(3, values_name, &values));
  PTERON_CHECK_OK(a.tensor(4, indices_name, &indices));
  PTERON_CHECK_OK(check_reduction_in_out(ctx, op, self, values, values_name));
  PTERON_CHECK_OK(reject_alias(ctx, op, indices_name, indices, self, values));
  if (!can_cast(self->dtype, values->dtype)) return cast_error(ctx, op, self->dtype, values->dtype);
  if (indices->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: %s must be int64, got %s", op,
                indices_name, dtype_name(indices->dtype));
  ReducePlan p;
  PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, &dim, 1, false, keepdim, &p));
  PTERON_CHECK_OK(zero_size_reduce_check(ctx, op, self, p));
  PTERON_CHECK_OK(resize_out(ctx, op, values_name, values, p.out_sizes, p.out_dim));
  PTERON_CHECK_OK(resize_out(ctx, op, indices_name, indices, p.out_sizes, p.out_dim));
  extreme_with_index<Max>(self, p, values, indices);
  return PTERON_OK;
}

// argmax.out / argmin.out(Tensor self, int? dim=None, bool keepdim=False, *,
//   Tensor(a!) out): arg_extreme_out (reduction_plan.h).
int32_t argmax_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return arg_extreme_out<true>(ctx, args, n, "aten::argmax.out");
}
int32_t argmin_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return arg_extreme_out<false>(ctx, args, n, "aten::argmin.out");
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
  PTERON_CHECK_OK(check_reduction_in_out(ctx, op, self, values, "values"));
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
  dispatch_half(self->dtype, [&](auto t) {
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
    {"aten::amax", "out", nullptr, amax_amin_out<true>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::amin", "out", nullptr, amax_amin_out<false>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::max", "unary_out", nullptr, extreme_unary_out<true>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::min", "unary_out", nullptr, extreme_unary_out<false>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::max", "dim_max", nullptr, extreme_dim_out<true>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::min", "dim_min", nullptr, extreme_dim_out<false>, PTERON_KERNEL_PRIORITY, 0},
    {"aten::argmax", "out", nullptr, argmax_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::argmin", "out", nullptr, argmin_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::topk", "values", nullptr, topk_values, PTERON_KERNEL_PRIORITY, 0})
