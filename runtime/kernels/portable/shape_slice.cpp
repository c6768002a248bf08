// SPDX-License-Identifier: BSD-3-Clause
// shape_slice.cpp - portable kernels that take or write back a part of a
// tensor along one dim: select_copy, slice_copy, narrow_copy, split_copy,
// split_with_sizes_copy, unbind_copy, select_scatter and slice_scatter.
//
// Reads go through the input's strides and writes through the out's own,
// so any dim order works on either side. Every operator here accepts
// float16 and bfloat16 too.
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

// select()'s index along dim d of `size` elements: in [-size, size),
// wrapped to [0, size).
int32_t select_index(const Args& a, int64_t d, int64_t size, int64_t* index) {
  if (*index < -size || *index >= size)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: index %lld is out of range for dim %lld of size %lld", a.op,
                (long long)*index, (long long)d, (long long)size);
  if (*index < 0) *index += size;
  return PTERON_OK;
}

// The view of t without dim d, at `index` along it.
kern::View select_view(const pteron_tensor* t, int64_t d, int64_t index) {
  kern::View v;
  int32_t k = 0;
  for (int32_t i = 0; i < t->dim; ++i) {
    if (i == d) continue;
    v.sizes[k] = t->sizes[i];
    v.strides[k] = t->strides[i];
    ++k;
  }
  v.dim = k;
  v.offset = index * t->strides[d];
  return v;
}

// ---- select_copy.int_out(Tensor self, int dim, SymInt index, *,
//                          Tensor(a!) out) -----------------------------------

int32_t select_copy_int_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::select_copy.int_out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d0 = 0, index = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &d0));
  PTERON_CHECK_OK(a.integer(2, "index", &index));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: select() cannot be applied to a 0-dim tensor", a.op);
  int64_t d = d0;
  if (!wrap_dim(d, self->dim)) return su::bad_dim(a, "dim", d0, self->dim);
  PTERON_CHECK_OK(select_index(a, d, self->sizes[d], &index));
  const kern::View src = select_view(self, d, index);
  return su::copy_view_out(a, self, src, out, src.sizes, src.dim);
}

// ---- slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None,
//        SymInt? end=None, SymInt step=1, *, Tensor(a!) out) ----------------

int32_t slice_copy_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::slice_copy.Tensor_out"};
  PTERON_CHECK_OK(a.arity(6));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d0 = 0, start = 0, end = 0, step = 0;
  bool has_start = false, has_end = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &d0));
  PTERON_CHECK_OK(kern::opt_integer(a, 2, "start", &start, &has_start));
  PTERON_CHECK_OK(kern::opt_integer(a, 3, "end", &end, &has_end));
  PTERON_CHECK_OK(a.integer(4, "step", &step));
  PTERON_CHECK_OK(a.tensor(5, "out", &out));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: slice() cannot be applied to a 0-dim tensor", a.op);
  int64_t d = d0;
  if (!wrap_dim(d, self->dim)) return su::bad_dim(a, "dim", d0, self->dim);
  kern::SliceBounds sb;
  PTERON_CHECK_OK(kern::slice_bounds(a, self->sizes[d], has_start, start, has_end, end, step, &sb));
  kern::View src = kern::view_of(self);
  kern::slice_view(&src, static_cast<int32_t>(d), sb, step);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < self->dim; ++i) sizes[i] = self->sizes[i];
  sizes[d] = sb.len;
  return su::copy_view_out(a, self, src, out, sizes, self->dim);
}

// ---- narrow_copy.out(Tensor self, int dim, SymInt start, SymInt length, *,
//                      Tensor(a!) out) ---------------------------------------

int32_t narrow_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::narrow_copy.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d = 0, start = 0, len = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: narrow() cannot be applied to a 0-dim tensor", a.op);
  PTERON_CHECK_OK(su::dim_arg(a, 1, "dim", self->dim, &d));
  PTERON_CHECK_OK(a.integer(2, "start", &start));
  PTERON_CHECK_OK(a.integer(3, "length", &len));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  const int64_t size = self->sizes[d];
  if (start < -size || start > size)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: start %lld is out of range for dim %lld of size %lld", a.op, (long long)start,
                (long long)d, (long long)size);
  if (start < 0) start += size;
  if (len < 0 || len > size - start)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: start (%lld) + length (%lld) exceeds dimension size (%lld)", a.op,
                (long long)start, (long long)len, (long long)size);
  kern::View v = kern::view_of(self);
  v.sizes[d] = len;
  v.offset = len > 0 ? start * self->strides[d] : 0;
  return su::copy_view_out(a, self, v, out, v.sizes, v.dim);
}

// ---- split_copy.Tensor_out / split_with_sizes_copy.out / unbind_copy.int_out

// Copies consecutive pieces of self along d (lengths[k]) into outs[k];
// `drop` removes the dim (unbind).
int32_t split_pieces(const Args& a, const pteron_tensor* self, int64_t d, const int64_t* lengths,
                     size_t count, pteron_tensor* const* outs, bool drop) {
  for (size_t k = 0; k < count; ++k) {
    if (outs[k] == self) return kern::reject_alias(a.ctx, a.op, "out", outs[k], self);
    PTERON_CHECK_OK(su::same_dtype(a, "self", self, outs[k]));
  }
  int64_t pos = 0;
  for (size_t k = 0; k < count; ++k) {
    kern::View v;
    int64_t sizes[PTERON_MAX_DIM];
    int32_t j = 0;
    for (int32_t i = 0; i < self->dim; ++i) {
      if (i == d && drop) continue;
      v.sizes[j] = sizes[j] = i == d ? lengths[k] : self->sizes[i];
      v.strides[j] = self->strides[i];
      ++j;
    }
    v.dim = j;
    v.offset = lengths[k] > 0 ? pos * self->strides[d] : 0;
    PTERON_CHECK_OK(su::copy_view_out(a, self, v, outs[k], sizes, j));
    pos += lengths[k];
  }
  return PTERON_OK;
}

int32_t split_copy_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::split_copy.Tensor_out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor* self = nullptr;
  int64_t split = 0, d = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "split_size", &split));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: split expects at least a 1-dimensional tensor", a.op);
  PTERON_CHECK_OK(su::dim_arg(a, 2, "dim", self->dim, &d));
  const int64_t size = self->sizes[d];
  if (split < 0 || (split == 0 && size != 0))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: split_size can only be 0 if dimension size is 0, but got split_size %lld "
                "for a dim of size %lld",
                a.op, (long long)split, (long long)size);
  const size_t count = split == 0 ? 1 : static_cast<size_t>((size + split - 1) / split);
  pteron_tensor* const* outs = nullptr;
  size_t got = 0;
  PTERON_CHECK_OK(a.tensor_list(3, "out", &outs, &got));
  // Bound the scratch by what the program declared.
  if (count > got || count > 4096)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: out has %zu tensors but the operator makes %zu", a.op, got, count);
  PTERON_CHECK_OK(su::out_list(a, 3, count, &outs));
  int64_t* lengths =
      static_cast<int64_t*>(pteron_kernel_scratch(ctx, (count + 1) * sizeof(int64_t)));
  if (!lengths) return PTERON_ERROR_OUT_OF_MEMORY;
  for (size_t k = 0; k < count; ++k) {
    const int64_t start = static_cast<int64_t>(k) * split;
    lengths[k] = size - start < split ? size - start : split;
  }
  return split_pieces(a, self, d, lengths, count, outs, false);
}

int32_t split_with_sizes_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::split_with_sizes_copy.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor* self = nullptr;
  const int64_t* lengths = nullptr;
  size_t count = 0;
  int64_t d = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "split_sizes", &lengths, &count));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: split expects at least a 1-dimensional tensor", a.op);
  PTERON_CHECK_OK(su::dim_arg(a, 2, "dim", self->dim, &d));
  pteron_tensor* const* outs = nullptr;
  PTERON_CHECK_OK(su::out_list(a, 3, count, &outs));
  int64_t sum = 0;
  for (size_t k = 0; k < count; ++k) {
    if (lengths[k] < 0 || lengths[k] > self->sizes[d] - sum)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: split_sizes must be non-negative and sum to the dim's size %lld (entry %zu "
                  "is %lld)",
                  a.op, (long long)self->sizes[d], k, (long long)lengths[k]);
    sum += lengths[k];
  }
  if (sum != self->sizes[d])
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: split_sizes sum to %lld, not to the size %lld of dim %lld", a.op,
                (long long)sum, (long long)self->sizes[d], (long long)d);
  return split_pieces(a, self, d, lengths, count, outs, false);
}

int32_t unbind_copy_int_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::unbind_copy.int_out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor* self = nullptr;
  int64_t d = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: dimension specified as 0 but tensor has no "
                "dimensions",
                a.op);
  PTERON_CHECK_OK(su::dim_arg(a, 1, "dim", self->dim, &d));
  const int64_t count = self->sizes[d];
  pteron_tensor* const* outs = nullptr;
  size_t got = 0;
  PTERON_CHECK_OK(a.tensor_list(2, "out", &outs, &got));
  if (static_cast<int64_t>(got) != count)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: out has %zu tensors but dim %lld of self has size %lld", a.op, got,
                (long long)d, (long long)count);
  PTERON_CHECK_OK(su::out_list(a, 2, got, &outs));
  int64_t* lengths = static_cast<int64_t*>(pteron_kernel_scratch(ctx, (got + 1) * sizeof(int64_t)));
  if (!lengths) return PTERON_ERROR_OUT_OF_MEMORY;
  for (size_t k = 0; k < got; ++k) lengths[k] = 1;
  return split_pieces(a, self, d, lengths, got, outs, true);
}

// ---- select_scatter.out(Tensor self, Tensor src, int dim, SymInt index, *,
//                         Tensor(a!) out) ------------------------------------
// ---- slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start,
//        SymInt? end, SymInt step=1, *, Tensor(a!) out) -------------------

// out = self, then the view `dst` of out (same logical shape as src) = src.
int32_t scatter_view(const Args& a, const pteron_tensor* self, const pteron_tensor* src,
                     pteron_tensor* out, const kern::View& dst) {
  if (dst.dim != src->dim)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: src has rank %d, expected %d", a.op,
                (int)src->dim, (int)dst.dim);
  for (int32_t i = 0; i < dst.dim; ++i)
    if (dst.sizes[i] != src->sizes[i])
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: src has size %lld at dim %d, expected %lld", a.op, (long long)src->sizes[i],
                  (int)i, (long long)dst.sizes[i]);
  PTERON_CHECK_OK(kern::reject_alias(a.ctx, a.op, "out", out, src));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  PTERON_CHECK_OK(kern::copy_tensor(a, self, kern::view_of(self), out, true));
  if (!kern::is_supported_half(src->dtype))
    return kern::unsupported_dtype(a.ctx, a.op, "src", src->dtype);
  kern::copy_view(src->data, src->dtype, kern::view_of(src), out->data, out->dtype, dst);
  return PTERON_OK;
}

int32_t select_scatter_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::select_scatter.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *src = nullptr, *out = nullptr;
  int64_t d = 0, index = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "src", &src));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: select() cannot be applied to a 0-dim tensor", a.op);
  PTERON_CHECK_OK(su::dim_arg(a, 2, "dim", self->dim, &d));
  PTERON_CHECK_OK(a.integer(3, "index", &index));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(select_index(a, d, self->sizes[d], &index));
  // out's strides equal self's after the resize only in shape; build from out.
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  return scatter_view(a, self, src, out, select_view(out, d, index));
}

int32_t slice_scatter_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::slice_scatter.out"};
  PTERON_CHECK_OK(a.arity(7));
  pteron_tensor *self = nullptr, *src = nullptr, *out = nullptr;
  int64_t d = 0, start = 0, end = 0, step = 0;
  bool has_start = false, has_end = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "src", &src));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: slice() cannot be applied to a 0-dim tensor", a.op);
  PTERON_CHECK_OK(su::dim_arg(a, 2, "dim", self->dim, &d));
  PTERON_CHECK_OK(kern::opt_integer(a, 3, "start", &start, &has_start));
  PTERON_CHECK_OK(kern::opt_integer(a, 4, "end", &end, &has_end));
  PTERON_CHECK_OK(a.integer(5, "step", &step));
  PTERON_CHECK_OK(a.tensor(6, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  kern::SliceBounds sb;
  PTERON_CHECK_OK(kern::slice_bounds(a, self->sizes[d], has_start, start, has_end, end, step, &sb));
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  kern::View dst = kern::view_of(out);
  kern::slice_view(&dst, static_cast<int32_t>(d), sb, step);
  return scatter_view(a, self, src, out, dst);
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::select_copy", "int_out", nullptr, select_copy_int_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::slice_copy", "Tensor_out", nullptr, slice_copy_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::narrow_copy", "out", nullptr, narrow_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::split_copy", "Tensor_out", nullptr, split_copy_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::split_with_sizes_copy", "out", nullptr, split_with_sizes_copy_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"aten::unbind_copy", "int_out", nullptr, unbind_copy_int_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::select_scatter", "out", nullptr, select_scatter_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::slice_scatter", "out", nullptr, slice_scatter_out, PTERON_KERNEL_PRIORITY, 0})
