// SPDX-License-Identifier: BSD-3-Clause
// shape_view.cpp - portable kernels that copy a view of their input:
// permute_copy, view_copy, expand_copy, squeeze_copy, unsqueeze_copy,
// transpose_copy, t_copy, diagonal_copy, as_strided_copy, unfold_copy and
// view_as_real_copy (complex64 / complex128 in, their component dtype out).
//
// A copy reads its input through the input's strides and writes the out
// tensor in the out's own dim order, so channels-last tensors on either side
// are fine. A differing out dtype is converted as Tensor.copy_() converts
// it. Every operator here accepts float16 and bfloat16 too.
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

// ---- permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) ---------

int32_t permute_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::permute_copy.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  pteron_tensor view;
  PTERON_CHECK_OK(kern::read_permute_copy(a, &self, &out, &view));
  return su::copy_view_out(a, self, kern::view_of(&view), out, view.sizes, view.dim);
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
  return su::copy_view_out(a, self, kern::view_of(self), out, sizes, static_cast<int32_t>(nd));
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
  return su::copy_view_out(a, self, src, out, sizes, src.dim);
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
  return su::copy_view_out(a, self, src, out, sizes, k);
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
    if (!wrap_dim(d, self->dim)) return su::bad_dim(a, "dim", dims[i], self->dim);
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
  if (!wrap_dim(d, self->dim)) return su::bad_dim(a, "dim", d0, self->dim);
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
  if (!wrap_dim(d, self->dim + 1)) return su::bad_dim(a, "dim", d0, self->dim + 1);
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
  return su::copy_view_out(a, self, src, out, sizes, src.dim);
}

// ---- transpose_copy.int_out(Tensor self, int dim0, int dim1, *, out) -------

int32_t transpose_impl(const Args& a, pteron_tensor* self, int64_t d0, int64_t d1,
                       pteron_tensor* out) {
  kern::View v = kern::view_of(self);
  if (self->dim > 0) {
    std::swap(v.sizes[d0], v.sizes[d1]);
    std::swap(v.strides[d0], v.strides[d1]);
  }
  return su::copy_view_out(a, self, v, out, v.sizes, v.dim);
}

int32_t transpose_copy_int_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::transpose_copy.int_out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d0 = 0, d1 = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(su::dim_arg(a, 1, "dim0", self->dim, &d0));
  PTERON_CHECK_OK(su::dim_arg(a, 2, "dim1", self->dim, &d1));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  return transpose_impl(a, self, d0, d1, out);
}

// ---- t_copy.out(Tensor self, *, Tensor(a!) out) ----------------------------

int32_t t_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::t_copy.out"};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  if (self->dim > 2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: t() expects a tensor with <= 2 dimensions, but self is %dD", a.op,
                (int)self->dim);
  return transpose_impl(a, self, 0, self->dim == 2 ? 1 : 0, out);
}

// ---- diagonal_copy.out(Tensor self, int offset=0, int dim1=0, int dim2=1,
//                        *, Tensor(a!) out) ----------------------------------

int32_t diagonal_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::diagonal_copy.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t off = 0, d1 = 0, d2 = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "offset", &off));
  if (self->dim < 2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: self must have at least 2 dimensions, got %d", a.op, (int)self->dim);
  PTERON_CHECK_OK(su::dim_arg(a, 2, "dim1", self->dim, &d1));
  PTERON_CHECK_OK(su::dim_arg(a, 3, "dim2", self->dim, &d2));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  if (d1 == d2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: diagonal dimensions cannot be identical %lld, %lld", a.op, (long long)d1,
                (long long)d2);
  const int64_t s1 = self->sizes[d1], s2 = self->sizes[d2];
  int64_t len = 0, base = 0;
  if (off >= 0) {
    len = off >= s2 ? 0 : (s1 < s2 - off ? s1 : s2 - off);
    base = off * self->strides[d2];
  } else {
    len = -off >= s1 ? 0 : (s1 + off < s2 ? s1 + off : s2);
    base = -off * self->strides[d1];
  }
  kern::View v;
  int32_t j = 0;
  for (int32_t i = 0; i < self->dim; ++i) {
    if (i == d1 || i == d2) continue;
    v.sizes[j] = self->sizes[i];
    v.strides[j] = self->strides[i];
    ++j;
  }
  v.sizes[j] = len;
  v.strides[j] = self->strides[d1] + self->strides[d2];
  v.dim = j + 1;
  v.offset = len > 0 ? base : 0;
  return su::copy_view_out(a, self, v, out, v.sizes, v.dim);
}

// ---- as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride,
//                          SymInt? storage_offset=None, *, out) -------------

int32_t as_strided_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::as_strided_copy.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t *size = nullptr, *stride = nullptr;
  size_t nsz = 0, nst = 0;
  int64_t offset = 0;
  bool has_offset = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "size", &size, &nsz));
  PTERON_CHECK_OK(a.int_list(2, "stride", &stride, &nst));
  PTERON_CHECK_OK(kern::opt_integer(a, 3, "storage_offset", &offset, &has_offset));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  if (nsz != nst)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: mismatch in length of size (%zu) and stride (%zu)", a.op, nsz, nst);
  if (nsz > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size has %zu entries, more than %d", a.op,
                nsz, PTERON_MAX_DIM);
  if (offset < 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: negative storage offset %lld", a.op,
                (long long)offset);
  // The view indexes self's storage directly (its own memory order).
  kern::View v;
  v.dim = static_cast<int32_t>(nsz);
  v.offset = offset;
  int64_t last = offset;
  bool empty = false;
  const int64_t lim = std::numeric_limits<int64_t>::max() / 4;
  for (size_t i = 0; i < nsz; ++i) {
    if (size[i] < 0 || stride[i] < 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: size and stride must be non-negative (dim %zu: size %lld, stride %lld)",
                  a.op, i, (long long)size[i], (long long)stride[i]);
    v.sizes[i] = size[i];
    v.strides[i] = stride[i];
    if (size[i] == 0) empty = true;
    if (size[i] > 0 && stride[i] > 0 && (size[i] - 1) > (lim - last) / stride[i])
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size and stride overflow", a.op);
    if (size[i] > 0) last += (size[i] - 1) * stride[i];
  }
  if (!empty && last >= kern::numel(self))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: the view reaches storage element %lld, outside self's %lld elements", a.op,
                (long long)last, (long long)kern::numel(self));
  if (empty) v.offset = 0;
  return su::copy_view_out(a, self, v, out, v.sizes, v.dim);
}

// ---- unfold_copy.out(Tensor self, int dimension, int size, int step, *,
//                      Tensor(a!) out) ---------------------------------------

int32_t unfold_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::unfold_copy.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d = 0, size = 0, step = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(su::dim_arg(a, 1, "dimension", self->dim, &d));
  PTERON_CHECK_OK(a.integer(2, "size", &size));
  PTERON_CHECK_OK(a.integer(3, "step", &step));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  if (self->dim >= PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: self already has the maximum rank %d",
                a.op, PTERON_MAX_DIM);
  const int64_t have = self->dim == 0 ? 1 : self->sizes[d];
  if (size < 0 || size > have)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: maximum size for tensor at dimension %lld is %lld but size is %lld", a.op,
                (long long)d, (long long)have, (long long)size);
  if (step <= 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: step is %lld but must be > 0", a.op,
                (long long)step);
  kern::View v = kern::view_of(self);
  if (self->dim == 0) {
    v.dim = 1;
    v.sizes[0] = size;
    v.strides[0] = 1;
  } else {
    const int64_t count = (have - size) / step + 1;
    v.sizes[d] = count;
    if (count > 1) v.strides[d] = self->strides[d] * step;
    v.sizes[self->dim] = size;
    v.strides[self->dim] = self->strides[d];
    v.dim = self->dim + 1;
  }
  return su::copy_view_out(a, self, v, out, v.sizes, v.dim);
}

// ---- view_as_real_copy.out(Tensor self, *, Tensor(a!) out) -----------------
// self complex64 or complex128 [d0, ..., dk-1], any strides; out float32 or
// float64 (the component type) [d0, ..., dk-1, 2], real part at index 0 of the
// last dim, imaginary part at 1.

int32_t view_as_real_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::view_as_real_copy.out"};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  PTERON_CHECK_OK(kern::check_tensor_complex(ctx, a.op, "self", self));
  if (!kern::is_complex(self->dtype))
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: unsupported dtype %s for argument 'self': view_as_real needs complex64 or "
                "complex128",
                a.op, kern::dtype_name(self->dtype));
  const int32_t real =
      self->dtype == PTERON_DTYPE_COMPLEX64 ? PTERON_DTYPE_FLOAT32 : PTERON_DTYPE_FLOAT64;
  if (out->dtype != real)
    return fail(
        ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out has dtype %s, but a %s input needs a %s out",
        a.op, kern::dtype_name(out->dtype), kern::dtype_name(self->dtype), kern::dtype_name(real));
  if (self->dim >= PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: self has rank %d; out would exceed %d", a.op,
                self->dim, PTERON_MAX_DIM);
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  // self read as a real tensor: each complex element is two components, one
  // component apart, and every stride doubles.
  kern::View src;
  src.dim = self->dim + 1;
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t d = 0; d < self->dim; ++d) {
    sizes[d] = src.sizes[d] = self->sizes[d];
    src.strides[d] = self->strides[d] * 2;
  }
  sizes[self->dim] = src.sizes[self->dim] = 2;
  src.strides[self->dim] = 1;
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, sizes, src.dim));
  if (!kern::copy_view(self->data, real, src, out->data, real, kern::view_of(out)))
    return kern::unsupported_dtype(ctx, a.op, "out", real);
  return PTERON_OK;
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
    {"aten::transpose_copy", "int_out", nullptr, transpose_copy_int_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::t_copy", "out", nullptr, t_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::diagonal_copy", "out", nullptr, diagonal_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::as_strided_copy", "out", nullptr, as_strided_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::unfold_copy", "out", nullptr, unfold_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::view_as_real_copy", "out", nullptr, view_as_real_copy_out, PTERON_KERNEL_PRIORITY, 0})
