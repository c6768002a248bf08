// SPDX-License-Identifier: BSD-3-Clause
// reduction_plan.h - which dims a reduction (sum, mean, amax, any, ...)
// folds, its output shape, and the iteration over kept and reduced dims in
// any dim order (header-only, private to the kernel libraries).
#pragma once

#include <cstdint>

#include "arg_reading.h"
#include "dtype_convert.h"
#include "kernel_util.h"
#include "tensor_checks.h"

namespace pteron::kern {

// Which input dims a reduction removes, and the output shape.
struct ReducePlan {
  int32_t in_dim = 0;
  bool reduced[PTERON_MAX_DIM] = {};
  bool keepdim = false;
  int64_t out_sizes[PTERON_MAX_DIM] = {};
  int32_t out_dim = 0;
  // for each input dim that is kept: the matching output dim
  int32_t out_of_in[PTERON_MAX_DIM] = {};
  int64_t reduce_count = 1;  // elements folded into each output element
};

// dims: nullptr for None (reduce all); an empty list reduces all when
// empty_means_all, nothing otherwise.
inline int32_t make_reduce_plan(pteron_kernel_context* ctx, const char* op, const pteron_tensor* in,
                                const int64_t* dims, size_t ndims, bool empty_means_all,
                                bool keepdim, ReducePlan* p) {
  p->in_dim = in->dim;
  p->keepdim = keepdim;
  for (int32_t i = 0; i < PTERON_MAX_DIM; ++i) p->reduced[i] = false;
  if (!dims || (ndims == 0 && empty_means_all)) {
    for (int32_t i = 0; i < in->dim; ++i) p->reduced[i] = true;
  } else {
    if (ndims > PTERON_MAX_DIM)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: too many dims (%zu)", op, ndims);
    bool seen0 = false;  // rank-0 input: dim 0/-1 reduces the only "dim"
    for (size_t k = 0; k < ndims; ++k) {
      int64_t d = dims[k];
      if (!wrap_dim(d, in->dim))
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: dim %lld out of range for a tensor of rank %d", op,
                    static_cast<long long>(dims[k]), in->dim);
      if (in->dim == 0) {
        if (seen0)
          return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                      "%s: dim %lld appears multiple times in the list of dims", op,
                      static_cast<long long>(d));
        seen0 = true;
        continue;
      }
      if (p->reduced[d])
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: dim %lld appears multiple times in the list of dims", op,
                    static_cast<long long>(d));
      p->reduced[d] = true;
    }
  }
  p->out_dim = 0;
  p->reduce_count = 1;
  for (int32_t i = 0; i < in->dim; ++i) {
    if (p->reduced[i]) {
      p->reduce_count *= in->sizes[i];
      if (keepdim) p->out_sizes[p->out_dim++] = 1;
    } else {
      p->out_of_in[i] = p->out_dim;
      p->out_sizes[p->out_dim++] = in->sizes[i];
    }
  }
  return PTERON_OK;
}

// For a planned reduction over `in` into `out` (already resized): calls
// f(out_offset, in_base_offset) once per output element (in logical row-major
// order over the kept dims); inner(in_base, g) then calls g(in_offset) for
// every reduced element, in logical row-major order over the reduced dims.
struct ReduceIter {
  const pteron_tensor* in;
  const pteron_tensor* out;
  const ReducePlan* p;
  int32_t kd[PTERON_MAX_DIM], nk = 0;  // kept input dims
  int32_t rd[PTERON_MAX_DIM], nr = 0;  // reduced input dims

  ReduceIter(const pteron_tensor* in_, const pteron_tensor* out_, const ReducePlan* p_)
      : in(in_), out(out_), p(p_) {
    for (int32_t i = 0; i < in->dim; ++i) {
      if (p->reduced[i])
        rd[nr++] = i;
      else
        kd[nk++] = i;
    }
  }

  template <typename F>
  void outer(F&& f) const {
    outer2(out, [&](int64_t o, int64_t, int64_t i) { f(o, i); });
  }

  // As outer(), with the offset in a second output of the same shape (its
  // dim order may differ): f(out_offset, out2_offset, in_base_offset).
  template <typename F>
  void outer2(const pteron_tensor* out2, F&& f) const {
    int64_t total = 1;
    for (int32_t k = 0; k < nk; ++k) total *= in->sizes[kd[k]];
    if (total == 0) return;
    int64_t ost[PTERON_MAX_DIM], ost2[PTERON_MAX_DIM];
    for (int32_t k = 0; k < nk; ++k) {
      int32_t od = p->keepdim ? kd[k] : p->out_of_in[kd[k]];
      ost[k] = out->strides[od];
      ost2[k] = out2->strides[od];
    }
    int64_t idx[PTERON_MAX_DIM] = {0};
    int64_t ioff = 0, ooff = 0, ooff2 = 0;
    for (int64_t n = 0; n < total; ++n) {
      f(ooff, ooff2, ioff);
      for (int32_t k = nk - 1; k >= 0; --k) {
        const int32_t d = kd[k];
        ++idx[k];
        ioff += in->strides[d];
        ooff += ost[k];
        ooff2 += ost2[k];
        if (idx[k] < in->sizes[d]) break;
        ioff -= in->strides[d] * idx[k];
        ooff -= ost[k] * idx[k];
        ooff2 -= ost2[k] * idx[k];
        idx[k] = 0;
      }
    }
  }

  template <typename G>
  void inner(int64_t base, G&& g) const {
    const int64_t total = p->reduce_count;
    if (total == 0) return;
    if (nr == 1) {  // common case: one reduced dim
      const int64_t st = in->strides[rd[0]];
      for (int64_t n = 0; n < total; ++n) g(base + n * st);
      return;
    }
    int64_t idx[PTERON_MAX_DIM] = {0};
    int64_t off = base;
    for (int64_t n = 0; n < total; ++n) {
      g(off);
      for (int32_t k = nr - 1; k >= 0; --k) {
        const int32_t d = rd[k];
        ++idx[k];
        off += in->strides[d];
        if (idx[k] < in->sizes[d]) break;
        off -= in->strides[d] * idx[k];
        idx[k] = 0;
      }
    }
  }
};

// ---- checks and running extremes shared by the reduction kernels ----------

// The checks of a reduction's self and one out: dtypes kernels_portable
// supports (float16 and bfloat16 included), self's metadata, and out not
// aliasing self.
inline int32_t check_reduction_in_out(pteron_kernel_context* ctx, const char* op,
                                      const pteron_tensor* self, const pteron_tensor* out,
                                      const char* out_name) {
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, out_name, out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  return reject_alias(ctx, op, out_name, out, self);
}

// A reduction over a zero-size dim has no identity for min/max/prod-like
// operators: refused as PyTorch does.
inline int32_t zero_size_reduce_check(pteron_kernel_context* ctx, const char* op,
                                      const pteron_tensor* self, const ReducePlan& p) {
  for (int32_t i = 0; i < self->dim; ++i)
    if (p.reduced[i] && self->sizes[i] == 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: expected reduction dim %d to have non-zero size", op, i);
  return PTERON_OK;
}

// An operator's optional `dtype` argument (-1: none) must equal out's dtype.
inline int32_t dtype_arg_matches_out(pteron_kernel_context* ctx, const char* op, int32_t dtype,
                                     const pteron_tensor* out) {
  if (dtype >= 0 && dtype != out->dtype)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: out dtype %s does not match the requested dtype %s", op,
                dtype_name(out->dtype), dtype_name(dtype));
  return PTERON_OK;
}

// The arguments of the dim-list reductions sum.IntList_out and mean.out:
// (Tensor self, int[1]? dim, bool keepdim, *, ScalarType? dtype, Tensor(a!)
// out). `dims` is null for None (every dim) and may point at `single`, so
// the struct is read in place and not copied.
struct DimListReduction {
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t single = 0;
  const int64_t* dims = nullptr;
  size_t ndims = 0;
  bool keepdim = false;
  int32_t dtype = -1;  // -1: none
};

// Reads and checks them (dtypes kernels_portable supports, float16 and
// bfloat16 included; a given dtype equal to out's).
inline int32_t read_dim_list_reduction(const Args& a, DimListReduction* r) {
  pteron_kernel_context* ctx = a.ctx;
  PTERON_CHECK_OK(a.arity(5));
  bool has_dims = false;
  PTERON_CHECK_OK(a.tensor(0, "self", &r->self));
  PTERON_CHECK_OK(read_opt_int_list(a, 1, "dim", &r->single, &r->dims, &r->ndims, &has_dims));
  PTERON_CHECK_OK(a.boolean(2, "keepdim", &r->keepdim));
  PTERON_CHECK_OK(read_opt_dtype(a, 3, "dtype", &r->dtype));
  PTERON_CHECK_OK(a.tensor(4, "out", &r->out));
  if (!has_dims) r->dims = nullptr;
  PTERON_CHECK_OK(check_supported_half(ctx, a.op, "self", r->self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, a.op, "out", r->out->dtype));
  if (r->dtype >= 0) PTERON_CHECK_OK(check_supported_half(ctx, a.op, "dtype", r->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, a.op, "self", r->self));
  return dtype_arg_matches_out(ctx, a.op, r->dtype, r->out);
}

// mean's dtype rule: it computes in `dtype` (else self's), which must be
// floating and castable to out's dtype.
inline int32_t mean_dtype_check(pteron_kernel_context* ctx, const char* op,
                                const DimListReduction& r) {
  const int32_t in_dt = r.dtype >= 0 ? r.dtype : r.self->dtype;
  if (!is_floating(in_dt))
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: could not infer output dtype: %s must be a floating point dtype", op,
                dtype_name(in_dt));
  if (!can_cast(in_dt, r.out->dtype)) return cast_error(ctx, op, in_dt, r.out->dtype);
  return PTERON_OK;
}

// "a beats b" for a running maximum (Max) or minimum: NaN beats everything
// (the first NaN wins).
template <bool Max, typename T>
bool beats(T a, T b) {
  if constexpr (is_float_type_v<T>) {
    if (std::isnan(b)) return false;
    if (std::isnan(a)) return true;
  }
  return Max ? a > b : a < b;
}

// Values (nullable) and int64 indices of a one-dim (or all) reduction, both
// already resized to the plan's output shape. Ties and NaN: the first
// occurrence in logical order wins, as in PyTorch. Any storage dtype,
// float16/bfloat16 included; the caller checks what its operator accepts.
template <bool Max>
void extreme_with_index(const pteron_tensor* self, const ReducePlan& p, pteron_tensor* values,
                        pteron_tensor* indices) {
  ReduceIter it(self, indices, &p);
  dispatch_half(self->dtype, [&](auto t) {
    using T = decltype(t);
    const void* x = self->data;
    int64_t* idx_out = static_cast<int64_t*>(indices->data);
    it.outer2(values ? values : indices, [&](int64_t io, int64_t vo, int64_t base) {
      bool first = true;
      T m{};
      int64_t best = 0, cnt = 0;
      it.inner(base, [&](int64_t off) {
        const T v = load_typed<T>(x, off);
        if (first || beats<Max>(v, m)) {
          m = v;
          best = cnt;
        }
        first = false;
        ++cnt;
      });
      idx_out[io] = best;
      if (values) store<T>(values->data, values->dtype, vo, m);
    });
  });
}

// argmax.out / argmin.out (Tensor self, int? dim=None, bool keepdim=False, *,
// Tensor(a!) out): out (int64) gets the index of the first largest (Max) or
// smallest value along dim, or over the flattened input when dim is None
// (then an empty input is an error). self: any real or half dtype but bool.
template <bool Max>
int32_t arg_extreme_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                        const char* op) {
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t dim = 0;
  bool keepdim = false;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  const bool has_dim = !a.is_none(1);
  if (has_dim) PTERON_CHECK_OK(a.integer(1, "dim", &dim));
  PTERON_CHECK_OK(a.boolean(2, "keepdim", &keepdim));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  if (self->dtype == PTERON_DTYPE_BOOL) return unsupported_dtype(ctx, op, "self", self->dtype);
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  if (out->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: out must be int64, got %s", op,
                dtype_name(out->dtype));
  ReducePlan p;
  if (has_dim) {
    PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, &dim, 1, false, keepdim, &p));
    PTERON_CHECK_OK(zero_size_reduce_check(ctx, op, self, p));
  } else {
    if (numel(self) == 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: expected a dim to be given for an empty input", op);
    PTERON_CHECK_OK(make_reduce_plan(ctx, op, self, nullptr, 0, true, keepdim, &p));
  }
  PTERON_CHECK_OK(reject_alias(ctx, op, "out", out, self));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, p.out_sizes, p.out_dim));
  extreme_with_index<Max>(self, p, nullptr, out);
  return PTERON_OK;
}

}  // namespace pteron::kern
