// SPDX-License-Identifier: BSD-3-Clause
// shape.cpp - portable kernels that move elements without arithmetic:
// permute_copy, view_copy, expand_copy, squeeze_copy, unsqueeze_copy,
// select_copy, slice_copy, cat, clone and the dim-order copies.
//
// Every copy reads the input through its strides and writes the out tensor
// in its own dim order, so channels-last tensors on either side are fine.
// A differing out dtype is converted as Tensor.copy_() converts it. Every
// operator here accepts float16 and bfloat16 too.
#include <cstdint>
#include <limits>

#include "kernel_util.h"
#include "strided_views.h"
#include "tensor_checks.h"
#include "arg_reading.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
using pteron::kern::wrap_dim;
namespace kern = pteron::kern;

int32_t bad_dim(const Args& a, const char* arg, int64_t d, int32_t rank) {
  int32_t r = rank == 0 ? 1 : rank;
  return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
              "%s: %s %lld is out of range for a tensor of rank %d "
              "(expected in [%d, %d])",
              a.op, arg, (long long)d, (int)rank, -r, r - 1);
}

// ---- permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) ---------

int32_t permute_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::permute_copy.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* dims = nullptr;
  size_t nd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "dims", &dims, &nd));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (nd != static_cast<size_t>(self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: dims has %zu entries but self has rank %d",
                a.op, nd, (int)self->dim);
  bool seen[PTERON_MAX_DIM] = {};
  kern::View src;
  src.dim = self->dim;
  int64_t sizes[PTERON_MAX_DIM];
  for (size_t i = 0; i < nd; ++i) {
    int64_t d = dims[i];
    if (!wrap_dim(d, self->dim) || d >= self->dim)
      return bad_dim(a, "dims entry", dims[i], self->dim);
    if (seen[d])
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: dim %lld appears more than once in dims",
                  a.op, (long long)d);
    seen[d] = true;
    sizes[i] = self->sizes[d];
    src.sizes[i] = self->sizes[d];
    src.strides[i] = self->strides[d];
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, self->dim));
  return kern::copy_tensor(a, self, src, out, true);
}

// ---- view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) ---------

int32_t view_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::view_copy.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* size = nullptr;
  size_t nd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "size", &size, &nd));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (nd > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size has %zu entries, more than %d", a.op,
                nd, PTERON_MAX_DIM);
  int64_t sizes[PTERON_MAX_DIM];
  int infer = -1;
  int64_t known = 1;
  bool known_overflow = false;
  for (size_t i = 0; i < nd; ++i) {
    int64_t s = size[i];
    if (s == -1) {
      if (infer >= 0)
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: only one dimension of size may be -1",
                    a.op);
      infer = static_cast<int>(i);
      continue;
    }
    if (s < 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: invalid size %lld in dim %zu", a.op,
                  (long long)s, i);
    sizes[i] = s;
    if (s != 0 && known > std::numeric_limits<int64_t>::max() / s)
      known_overflow = true;
    else
      known *= s;
  }
  int64_t total = pteron::kern::numel(self);
  if (infer >= 0) {
    if (known == 0 || known_overflow)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: cannot infer the -1 dimension of size for a tensor of "
                  "%lld elements",
                  a.op, (long long)total);
    if (total % known != 0)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: shape is invalid for input of size %lld",
                  a.op, (long long)total);
    sizes[infer] = total / known;
  } else if (known_overflow || known != total) {
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: shape is invalid for input of size %lld",
                a.op, (long long)total);
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, static_cast<int32_t>(nd)));
  return kern::copy_tensor(a, self, kern::view_of(self), out, true);
}

// ---- expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False,
//                      Tensor(a!) out) ---------------------------------------

int32_t expand_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::expand_copy.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* size = nullptr;
  size_t nd = 0;
  bool implicit = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "size", &size, &nd));
  PTERON_CHECK_OK(a.boolean(2, "implicit", &implicit));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  if (nd > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size has %zu entries, more than %d", a.op,
                nd, PTERON_MAX_DIM);
  if (nd < static_cast<size_t>(self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: the number of sizes provided (%zu) must be greater or "
                "equal to the rank of self (%d)",
                a.op, nd, (int)self->dim);
  const int32_t lead = static_cast<int32_t>(nd) - self->dim;
  kern::View src;
  src.dim = static_cast<int32_t>(nd);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < static_cast<int32_t>(nd); ++i) {
    int64_t s = size[i];
    if (i < lead) {
      if (s < 0)
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: size %lld is not allowed in a leading, new dimension "
                    "%d",
                    a.op, (long long)s, (int)i);
      sizes[i] = s;
      src.strides[i] = 0;
    } else {
      int32_t j = i - lead;
      int64_t have = self->sizes[j];
      if (s == -1) s = have;
      if (s < 0)
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: invalid size %lld in dim %d", a.op,
                    (long long)s, (int)i);
      if (have == s) {
        src.strides[i] = self->strides[j];
      } else if (have == 1) {
        src.strides[i] = 0;
      } else {
        return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                    "%s: the expanded size %lld must match the existing size "
                    "%lld at non-singleton dimension %d",
                    a.op, (long long)s, (long long)have, (int)i);
      }
      sizes[i] = s;
    }
    src.sizes[i] = sizes[i];
  }
  int64_t total = 0;
  if (!kern::checked_numel(sizes, src.dim, &total))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size is too large", a.op);
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, src.dim));
  return kern::copy_tensor(a, self, src, out, true);
}

// ---- squeeze_copy ---------------------------------------------------------

// Drops the size-1 dims marked in `drop` (all size-1 dims when all is set).
int32_t squeeze_impl(const Args& a, pteron_tensor* self, pteron_tensor* out, const bool* drop) {
  kern::View src;
  int64_t sizes[PTERON_MAX_DIM];
  int32_t k = 0;
  for (int32_t i = 0; i < self->dim; ++i) {
    if (drop[i] && self->sizes[i] == 1) continue;
    sizes[k] = self->sizes[i];
    src.sizes[k] = self->sizes[i];
    src.strides[k] = self->strides[i];
    ++k;
  }
  src.dim = k;
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, k));
  return kern::copy_tensor(a, self, src, out, true);
}

// squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out)
int32_t squeeze_copy_dims_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::squeeze_copy.dims_out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* dims = nullptr;
  size_t nd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "dim", &dims, &nd));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  bool drop[PTERON_MAX_DIM + 1] = {};
  bool seen[PTERON_MAX_DIM + 1] = {};
  for (size_t i = 0; i < nd; ++i) {
    int64_t d = dims[i];
    if (!wrap_dim(d, self->dim)) return bad_dim(a, "dim", dims[i], self->dim);
    if (seen[d])
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: dim %lld appears more than once in the list of dims", a.op, (long long)d);
    seen[d] = true;
    drop[d] = true;
  }
  return squeeze_impl(a, self, out, drop);
}

// squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out)
int32_t squeeze_copy_dim_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::squeeze_copy.dim_out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d0 = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &d0));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  int64_t d = d0;
  if (!wrap_dim(d, self->dim)) return bad_dim(a, "dim", d0, self->dim);
  bool drop[PTERON_MAX_DIM + 1] = {};
  drop[d] = true;
  return squeeze_impl(a, self, out, drop);
}

// squeeze_copy.out(Tensor self, *, Tensor(a!) out)
int32_t squeeze_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::squeeze_copy.out"};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  bool drop[PTERON_MAX_DIM + 1];
  for (bool& b : drop) b = true;
  return squeeze_impl(a, self, out, drop);
}

// ---- unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out) ----------

int32_t unsqueeze_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::unsqueeze_copy.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d0 = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "dim", &d0));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (self->dim >= PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: self already has the maximum rank %d",
                a.op, PTERON_MAX_DIM);
  int64_t d = d0;
  if (!wrap_dim(d, self->dim + 1)) return bad_dim(a, "dim", d0, self->dim + 1);
  kern::View src;
  src.dim = self->dim + 1;
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0, j = 0; i < src.dim; ++i) {
    if (i == d) {
      sizes[i] = 1;
      src.strides[i] = 0;
    } else {
      sizes[i] = self->sizes[j];
      src.strides[i] = self->strides[j];
      ++j;
    }
    src.sizes[i] = sizes[i];
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, src.dim));
  return kern::copy_tensor(a, self, src, out, true);
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
  if (!wrap_dim(d, self->dim)) return bad_dim(a, "dim", d0, self->dim);
  const int64_t size = self->sizes[d];
  if (index < -size || index >= size)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: index %lld is out of range for dim %lld of size %lld", a.op, (long long)index,
                (long long)d, (long long)size);
  if (index < 0) index += size;
  kern::View src;
  int64_t sizes[PTERON_MAX_DIM];
  int32_t k = 0;
  for (int32_t i = 0; i < self->dim; ++i) {
    if (i == d) continue;
    sizes[k] = self->sizes[i];
    src.sizes[k] = self->sizes[i];
    src.strides[k] = self->strides[i];
    ++k;
  }
  src.dim = k;
  src.offset = index * self->strides[d];
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, k));
  return kern::copy_tensor(a, self, src, out, true);
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
  if (!wrap_dim(d, self->dim)) return bad_dim(a, "dim", d0, self->dim);
  if (step <= 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: slice step must be positive, got %lld",
                a.op, (long long)step);
  const int64_t size = self->sizes[d];
  if (!has_start) start = 0;
  if (!has_end) end = std::numeric_limits<int64_t>::max();
  // PyTorch's clamping: wrap negatives once, then clamp into [0, size].
  if (start < 0) start = start < -size ? 0 : start + size;
  if (end < 0) end = end < -size ? 0 : end + size;
  if (start > size) start = size;
  if (end > size) end = size;
  if (end < start) end = start;
  const int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
  kern::View src = kern::view_of(self);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < self->dim; ++i) sizes[i] = self->sizes[i];
  sizes[d] = len;
  src.sizes[d] = len;
  src.offset = len > 0 ? start * self->strides[d] : 0;
  // step < size when len > 1, so the product stays inside the storage span.
  if (len > 1) src.strides[d] = self->strides[d] * step;
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, self->dim));
  return kern::copy_tensor(a, self, src, out, true);
}

// ---- cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) ---------------

int32_t cat_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::cat.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor* const* ts = nullptr;
  size_t count = 0;
  int64_t d0 = 0;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(a.tensor_list(0, "tensors", &ts, &count));
  PTERON_CHECK_OK(a.integer(1, "dim", &d0));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (count == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: expected a non-empty list of tensors",
                a.op);
  if (count > 0 && ts == nullptr)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensor list is null", a.op);
  // Validate every entry; find the promoted dtype and the reference tensor
  // (first one that is not a legacy empty 1-D tensor).
  int32_t dtype = -1;
  const pteron_tensor* ref = nullptr;
  for (size_t i = 0; i < count; ++i) {
    const pteron_tensor* t = ts[i];
    if (t == nullptr)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensors[%zu] is None", a.op, i);
    PTERON_CHECK_OK(kern::check_tensor(ctx, a.op, "tensors", t));
    if (!pteron::kern::is_supported_half(t->dtype))
      return pteron::kern::unsupported_dtype(ctx, a.op, "tensors", t->dtype);
    dtype = dtype < 0 ? t->dtype : pteron::kern::promote_types(dtype, t->dtype);
    if (t->dim == 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: zero-dimensional tensor (at position %zu) cannot be "
                  "concatenated",
                  a.op, i);
    const bool skip = t->dim == 1 && t->sizes[0] == 0;
    if (!skip && ref == nullptr) ref = t;
  }
  if (!pteron::kern::is_supported_half(out->dtype))
    return pteron::kern::unsupported_dtype(ctx, a.op, "out", out->dtype);
  if (!kern::can_cast(dtype, out->dtype))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: input dtype %s can't be cast to the out dtype %s", a.op,
                pteron::kern::dtype_name(dtype), pteron::kern::dtype_name(out->dtype));
  if (ref == nullptr) {
    // Every input is an empty 1-D tensor: the result is one as well.
    int64_t zero = 0;
    return kern::resize_out(a.ctx, a.op, "out", out, &zero, 1);
  }
  int64_t d = d0;
  if (!wrap_dim(d, ref->dim)) return bad_dim(a, "dim", d0, ref->dim);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < ref->dim; ++i) sizes[i] = ref->sizes[i];
  int64_t cat_size = 0;
  for (size_t k = 0; k < count; ++k) {
    const pteron_tensor* t = ts[k];
    if (t->dim == 1 && t->sizes[0] == 0) continue;
    if (t->dim != ref->dim)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: tensors must have the same rank: tensor 0 has rank %d "
                  "but tensor %zu has rank %d",
                  a.op, (int)ref->dim, k, (int)t->dim);
    for (int32_t i = 0; i < ref->dim; ++i) {
      if (i != d && t->sizes[i] != ref->sizes[i])
        return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                    "%s: sizes of tensors must match except in dimension "
                    "%lld: expected size %lld but got size %lld for tensor "
                    "number %zu in the list",
                    a.op, (long long)d, (long long)ref->sizes[i], (long long)t->sizes[i], k);
    }
    if (t->sizes[d] > std::numeric_limits<int64_t>::max() - cat_size)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: result too large", a.op);
    cat_size += t->sizes[d];
  }
  sizes[d] = cat_size;
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, ref->dim));
  int64_t pos = 0;
  for (size_t k = 0; k < count; ++k) {
    const pteron_tensor* t = ts[k];
    if (t->dim == 1 && t->sizes[0] == 0) continue;
    kern::View dst = kern::view_of(out);
    dst.sizes[d] = t->sizes[d];
    dst.offset = pos * out->strides[d];
    if (t->sizes[d] > 0)
      kern::copy_view(t->data, t->dtype, kern::view_of(t), out->data, out->dtype, dst);
    pos += t->sizes[d];
  }
  return PTERON_OK;
}

// ---- clone.out(Tensor self, *, MemoryFormat? memory_format=None,
//                Tensor(a!) out) ----------------------------------------------

int32_t clone_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::clone.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::memory_format(a, 1));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  return kern::copy_tensor(a, self, kern::view_of(self), out, true);
}

// ---- dim_order_ops::_to_dim_order_copy.out / _clone_dim_order.out
//      (Tensor self, *, bool non_blocking=False, int[]? dim_order=None,
//       Tensor(a!) out) ------------------------------------------------------

int32_t dim_order_copy(const Args& a, bool same_dtype) {
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  bool non_blocking = false;
  const int64_t* order = nullptr;
  size_t nd = 0;
  bool has_order = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.boolean(1, "non_blocking", &non_blocking));
  PTERON_CHECK_OK(kern::opt_int_list(a, 2, "dim_order", &order, &nd, &has_order));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  if (has_order) {
    if (nd != static_cast<size_t>(self->dim))
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: dim_order has %zu entries but self has rank %d", a.op, nd, (int)self->dim);
    bool seen[PTERON_MAX_DIM] = {};
    for (size_t i = 0; i < nd; ++i) {
      if (order[i] < 0 || order[i] >= self->dim || seen[order[i]])
        return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: dim_order is not a permutation of the dims of self "
                    "(entry %zu is %lld)",
                    a.op, i, (long long)order[i]);
      seen[order[i]] = true;
    }
    // The out tensor's storage order is the one the program declared for
    // it; the argument must agree with it.
    if (out->dim == self->dim) {
      for (size_t i = 0; i < nd; ++i)
        if (out->dim_order[i] != order[i])
          return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
                      "%s: dim_order argument disagrees with the out "
                      "tensor's declared dim order at position %zu (%lld vs "
                      "%d)",
                      a.op, i, (long long)order[i], (int)out->dim_order[i]);
    }
  }
  if (same_dtype && self->dtype != out->dtype)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out dtype %s differs from self dtype %s",
                a.op, pteron::kern::dtype_name(out->dtype), pteron::kern::dtype_name(self->dtype));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  return kern::copy_tensor(a, self, kern::view_of(self), out, true);
}

int32_t to_dim_order_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "dim_order_ops::_to_dim_order_copy.out"};
  return dim_order_copy(a, false);
}

int32_t clone_dim_order_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "dim_order_ops::_clone_dim_order.out"};
  return dim_order_copy(a, true);
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::permute_copy", "out", nullptr, permute_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::view_copy", "out", nullptr, view_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::expand_copy", "out", nullptr, expand_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::squeeze_copy", "dims_out", nullptr, squeeze_copy_dims_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::squeeze_copy", "dim_out", nullptr, squeeze_copy_dim_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::squeeze_copy", "out", nullptr, squeeze_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::unsqueeze_copy", "out", nullptr, unsqueeze_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::select_copy", "int_out", nullptr, select_copy_int_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::slice_copy", "Tensor_out", nullptr, slice_copy_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::cat", "out", nullptr, cat_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::clone", "out", nullptr, clone_out, PTERON_KERNEL_PRIORITY, 0},
    {"dim_order_ops::_to_dim_order_copy", "out", nullptr, to_dim_order_copy_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"dim_order_ops::_clone_dim_order", "out", nullptr, clone_dim_order_out, PTERON_KERNEL_PRIORITY,
     0})
