// SPDX-License-Identifier: BSD-3-Clause
// index_gather.cpp - portable kernels that read or write along one dim
// through an index tensor: index_select, embedding, gather, scatter (src,
// value) and scatter_add.
//
// float16 / bfloat16 move as stored; scatter_add adds in float and rounds
// once per addition. Every index value is checked against its bound before
// anything is written; an out-of-range index is an error naming the value
// and the bound.
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "arg_reading.h"
#include "dtype_convert.h"
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

// ---- index_select.out(Tensor self, int dim, Tensor index, *,
//                       Tensor(a!) out) --------------------------------------

int32_t index_select_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::index_select.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *index = nullptr, *out = nullptr;
  int64_t d0 = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &d0));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "index", &index));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  if (!pteron::kern::is_supported_half(self->dtype))
    return pteron::kern::unsupported_dtype(ctx, a.op, "self", self->dtype);
  if (!su::is_index_dtype(index->dtype))
    return su::index_dtype_error(a, "index", index->dtype);
  if (out->dtype != self->dtype)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: self (%s) and out (%s) must have the same dtype", a.op,
                pteron::kern::dtype_name(self->dtype), pteron::kern::dtype_name(out->dtype));
  if (index->dim > 1)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: index is supposed to be a vector, got rank %d", a.op, (int)index->dim);
  int64_t d = d0;
  if (!wrap_dim(d, self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: dim %lld is out of range for self of rank %d", a.op, (long long)d0,
                (int)self->dim);
  const int64_t count = pteron::kern::numel(index);
  const int64_t istride = index->dim == 1 ? index->strides[0] : 0;
  // A 0-dim self behaves as a 1-element vector along dim 0.
  const int64_t bound = self->dim == 0 ? 1 : self->sizes[d];
  if (self->dim == 0 && count != 1)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: index into a 0-dim self can have only 1 value, got %lld", a.op,
                (long long)count);
  for (int64_t j = 0; j < count; ++j) {
    int64_t v = su::load_index(index->data, index->dtype, j * istride);
    if (v < 0 || v >= bound)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: index %lld is out of range for dim %lld of size %lld "
                  "(at position %lld of index)",
                  a.op, (long long)v, (long long)d, (long long)bound, (long long)j);
  }
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < self->dim; ++i) sizes[i] = self->sizes[i];
  if (self->dim > 0) sizes[d] = count;
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, self->dim));
  if (self->dim == 0) {
    kern::copy_view(self->data, self->dtype, kern::view_of(self), out->data, out->dtype,
                    kern::view_of(out));
    return PTERON_OK;
  }
  kern::View src = kern::view_of(self), dst = kern::view_of(out);
  src.sizes[d] = 1;
  dst.sizes[d] = 1;
  if (kern::numel(dst) == 0) return PTERON_OK;
  for (int64_t j = 0; j < count; ++j) {
    int64_t v = su::load_index(index->data, index->dtype, j * istride);
    src.offset = v * self->strides[d];
    dst.offset = j * out->strides[d];
    kern::copy_view(self->data, self->dtype, src, out->data, out->dtype, dst);
  }
  return PTERON_OK;
}

// ---- embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1,
//        bool scale_grad_by_freq=False, bool sparse=False, *,
//        Tensor(a!) out) ----------------------------------------------------

int32_t embedding_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::embedding.out"};
  PTERON_CHECK_OK(a.arity(6));
  pteron_tensor *weight = nullptr, *indices = nullptr, *out = nullptr;
  int64_t padding_idx = 0;
  bool scale_grad = false, sparse = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "weight", &weight));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "indices", &indices));
  PTERON_CHECK_OK(a.integer(2, "padding_idx", &padding_idx));
  PTERON_CHECK_OK(a.boolean(3, "scale_grad_by_freq", &scale_grad));
  PTERON_CHECK_OK(a.boolean(4, "sparse", &sparse));
  PTERON_CHECK_OK(a.tensor(5, "out", &out));
  // padding_idx, scale_grad_by_freq and sparse only affect the gradient.
  if (!pteron::kern::is_supported_half(weight->dtype))
    return pteron::kern::unsupported_dtype(ctx, a.op, "weight", weight->dtype);
  if (!su::is_index_dtype(indices->dtype))
    return su::index_dtype_error(a, "indices", indices->dtype);
  if (weight->dim != 2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: weight must be 2-D, got rank %d", a.op,
                (int)weight->dim);
  if (out->dtype != weight->dtype)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: weight (%s) and out (%s) must have the same dtype", a.op,
                pteron::kern::dtype_name(weight->dtype), pteron::kern::dtype_name(out->dtype));
  if (indices->dim >= PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: indices rank %d leaves no room for the embedding dim", a.op,
                (int)indices->dim);
  const int64_t rows = weight->sizes[0];
  const int64_t width = weight->sizes[1];
  const kern::View iv = kern::view_of(indices);
  {
    int64_t pos = 0;
    int64_t bad = 0, bad_pos = -1;
    kern::for_each_offset(iv, [&](int64_t off) {
      int64_t v = su::load_index(indices->data, indices->dtype, off);
      if (bad_pos < 0 && (v < 0 || v >= rows)) {
        bad = v;
        bad_pos = pos;
      }
      ++pos;
    });
    if (bad_pos >= 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: index %lld is out of range for weight with %lld rows "
                  "(at flat position %lld of indices)",
                  a.op, (long long)bad, (long long)rows, (long long)bad_pos);
  }
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < indices->dim; ++i) sizes[i] = indices->sizes[i];
  sizes[indices->dim] = width;
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, indices->dim + 1));
  if (pteron::kern::numel(out) == 0) return PTERON_OK;
  // Walk indices and the out rows in lockstep.
  kern::View rows_view;
  rows_view.dim = indices->dim;
  for (int32_t i = 0; i < indices->dim; ++i) {
    rows_view.sizes[i] = out->sizes[i];
    rows_view.strides[i] = out->strides[i];
  }
  kern::View src, dst;
  src.dim = dst.dim = 1;
  src.sizes[0] = dst.sizes[0] = width;
  src.strides[0] = weight->strides[1];
  dst.strides[0] = out->strides[indices->dim];
  kern::Walker wi(iv), wo(rows_view);
  int64_t left = pteron::kern::numel(indices);
  while (left > 0) {
    int64_t v = su::load_index(indices->data, indices->dtype, wi.off);
    // Checked again: in a malformed program `indices` may share storage with
    // `out`, so rows already written can change later indices.
    if (v < 0 || v >= rows)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: index %lld is out of range for weight with %lld rows "
                  "(indices and out overlap)",
                  a.op, (long long)v, (long long)rows);
    src.offset = v * weight->strides[0];
    dst.offset = wo.off;
    kern::copy_view(weight->data, weight->dtype, src, out->data, out->dtype, dst);
    if (--left > 0) {
      wi.advance(1);
      wo.advance(1);
    }
  }
  return PTERON_OK;
}

// ---- gather / scatter: shared checks ----------------------------------------

// Checks index against self (and src) for gather/scatter along dim d:
// same rank (0-dim counts as 1-D), index sizes within self's (except at d)
// and within src's; every value in [-bound, bound) is NOT allowed here:
// PyTorch takes values in [0, bound) only.
int32_t check_gather_index(const Args& a, const pteron_tensor* self, int64_t d,
                           const pteron_tensor* index, const pteron_tensor* src) {
  if (!su::is_index_dtype(index->dtype)) return su::index_dtype_error(a, "index", index->dtype);
  const int32_t rs = self->dim == 0 ? 1 : self->dim, ri = index->dim == 0 ? 1 : index->dim;
  if (kern::numel(index) > 0 && rs != ri)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: index tensor must have the same number of dimensions as self (%d vs %d)", a.op,
                (int)index->dim, (int)self->dim);
  if (kern::numel(index) == 0) return PTERON_OK;
  for (int32_t i = 0; i < index->dim; ++i) {
    const int64_t s = i < self->dim ? self->sizes[i] : 1;
    if (i != d && index->sizes[i] > s)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: size of index (%lld) exceeds the size of self (%lld) at dim %d", a.op,
                  (long long)index->sizes[i], (long long)s, (int)i);
    if (src) {
      const int64_t ss = i < src->dim ? src->sizes[i] : 1;
      if (index->sizes[i] > ss)
        return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: size of index (%lld) exceeds the size of src (%lld) at dim %d", a.op,
                    (long long)index->sizes[i], (long long)ss, (int)i);
    }
  }
  if (src && (src->dim == 0 ? 1 : src->dim) != ri)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: src must have the same number of dimensions as index (%d vs %d)", a.op,
                (int)src->dim, (int)index->dim);
  const int64_t bound = self->dim == 0 ? 1 : self->sizes[d];
  int64_t bad = 0;
  bool ok = true;
  kern::for_each_offset(kern::view_of(index), [&](int64_t off) {
    const int64_t v = su::load_index(index->data, index->dtype, off);
    if (ok && (v < 0 || v >= bound)) {
      ok = false;
      bad = v;
    }
  });
  if (!ok)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: index %lld is out of bounds for dimension %lld with size %lld", a.op,
                (long long)bad, (long long)d, (long long)bound);
  return PTERON_OK;
}

// Offset in t (rank t->dim) of the position idx (rank of index) with
// coordinate d replaced by v.
int64_t scatter_offset(const pteron_tensor* t, const int64_t* idx, int32_t idx_dim, int64_t d,
                       int64_t v) {
  int64_t o = 0;
  for (int32_t i = 0; i < t->dim; ++i) {
    const int64_t j = i == d ? v : (i < idx_dim ? idx[i] : 0);
    o += j * t->strides[i];
  }
  return o;
}

// ---- gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False,
//                 Tensor(a!) out) ---------------------------------------------

int32_t gather_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::gather.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *index = nullptr, *out = nullptr;
  int64_t d = 0;
  bool sparse = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(su::dim_arg(a, 1, "dim", self->dim, &d));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "index", &index));
  PTERON_CHECK_OK(a.boolean(3, "sparse_grad", &sparse));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self, index));
  PTERON_CHECK_OK(check_gather_index(a, self, d, index, nullptr));
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, index->sizes, index->dim));
  su::map_elements(self, out, nullptr, [&](const int64_t* oi) {
    const int64_t v = su::load_index(index->data, index->dtype, su::offset_of(index, oi));
    return scatter_offset(self, oi, index->dim, d, v);
  });
  return PTERON_OK;
}

// ---- scatter.src_out / scatter.value_out / scatter_add.out -----------------

enum class ScatterMode { Src, Value, Add };

int32_t scatter_impl(const Args& a, ScatterMode mode) {
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *index = nullptr, *src = nullptr, *out = nullptr;
  int64_t d = 0;
  kern::Scalar value;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(su::dim_arg(a, 1, "dim", self->dim, &d));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "index", &index));
  if (mode == ScatterMode::Value)
    PTERON_CHECK_OK(kern::read_scalar(a, 3, "value", &value));
  else
    PTERON_CHECK_OK(kern::tensor_arg(a, 3, "src", &src));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  if (src) PTERON_CHECK_OK(su::same_dtype(a, "src", src, out));
  PTERON_CHECK_OK(kern::reject_alias(a.ctx, a.op, "out", out, index, src));
  if (!kern::is_supported_half(self->dtype))
    return kern::unsupported_dtype(a.ctx, a.op, "self", self->dtype);
  PTERON_CHECK_OK(check_gather_index(a, self, d, index, src));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  PTERON_CHECK_OK(kern::copy_tensor(a, self, kern::view_of(self), out, true));
  kern::dispatch_half(out->dtype, [&](auto t) {
    using T0 = decltype(t);
    constexpr bool kBool = std::is_same_v<T0, bool>;
    using S = std::conditional_t<kBool, uint8_t, T0>;  // storage type
    S* o = static_cast<S*>(out->data);
    const S* s = src ? static_cast<const S*>(src->data) : nullptr;
    S fill{};
    if (mode == ScatterMode::Value) {
      const T0 v = value.to<T0>();
      fill = static_cast<S>(v);
    }
    su::for_each_index(index->sizes, index->dim, [&](const int64_t* ii) {
      const int64_t v = su::load_index(index->data, index->dtype, su::offset_of(index, ii));
      const int64_t oo = scatter_offset(out, ii, index->dim, d, v);
      S x = fill;
      if (src) {
        int64_t so = 0;
        for (int32_t i = 0; i < src->dim; ++i) so += ii[i] * src->strides[i];
        x = s[so];
      }
      if (mode == ScatterMode::Add) {
        if constexpr (std::is_same_v<T0, bool>)  // not kBool: MSVC (nested lambda)
          o[oo] = (o[oo] != 0 || x != 0) ? 1 : 0;
        else
          o[oo] = su::add_values<T0>(o[oo], x);
      } else {
        o[oo] = x;
      }
    });
  });
  return PTERON_OK;
}

int32_t scatter_src_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return scatter_impl(Args{ctx, args, n, "aten::scatter.src_out"}, ScatterMode::Src);
}
int32_t scatter_value_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return scatter_impl(Args{ctx, args, n, "aten::scatter.value_out"}, ScatterMode::Value);
}
int32_t scatter_add_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return scatter_impl(Args{ctx, args, n, "aten::scatter_add.out"}, ScatterMode::Add);
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::index_select", "out", nullptr, index_select_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::embedding", "out", nullptr, embedding_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::gather", "out", nullptr, gather_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::scatter", "src_out", nullptr, scatter_src_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::scatter", "value_out", nullptr, scatter_value_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::scatter_add", "out", nullptr, scatter_add_out, PTERON_KERNEL_PRIORITY, 0})
