// SPDX-License-Identifier: BSD-3-Clause
// shape_more.cpp - portable kernels that copy a view of their input or split
// and join tensors: split_copy, split_with_sizes_copy, unbind_copy, stack,
// flip, roll, repeat, pixel_shuffle / pixel_unshuffle, transpose_copy,
// t_copy, _to_copy, alias / detach / lift_fresh copies, copy, as_strided_copy,
// diagonal_copy, narrow_copy, unfold_copy, tril, select_scatter,
// slice_scatter, repeat_interleave, _empty_dim_order and view_as_real_copy
// (complex64 / complex128 in, their component dtype out).
//
// A copy reads its input through the input's strides and writes the out
// tensor in the out's own dim order, so channels-last tensors on either side
// are fine. Ops that only move bytes take every dtype with an element size;
// the others take the supported dtypes, float16 and bfloat16 included.
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "arg_reading.h"
#include "kernel_util.h"
#include "shape_more_util.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
using pteron::kern::wrap_dim;
namespace kern = pteron::kern;
namespace sm = pteron::kern::shape_more;

// Resizes out to `sizes` and copies the view `src` of self into it.
int32_t copy_view_out(const Args& a, const pteron_tensor* self, const kern::View& src,
                      pteron_tensor* out, const int64_t* sizes, int32_t dim) {
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, dim));
  return kern::copy_tensor(a, self, src, out, true);
}

// ---- alias_copy / detach_copy / lift_fresh_copy (Tensor self, *, out) -----

int32_t plain_copy(const Args& a) {
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  return copy_view_out(a, self, kern::view_of(self), out, self->sizes, self->dim);
}

int32_t alias_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return plain_copy(Args{ctx, args, n, "aten::alias_copy.out"});
}
int32_t detach_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return plain_copy(Args{ctx, args, n, "aten::detach_copy.out"});
}
int32_t lift_fresh_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return plain_copy(Args{ctx, args, n, "aten::lift_fresh_copy.out"});
}

// ---- _to_copy.out(Tensor self, *, bool non_blocking=False,
//                   MemoryFormat? memory_format=None, Tensor(a!) out) --------

int32_t to_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::_to_copy.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  bool non_blocking = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.boolean(1, "non_blocking", &non_blocking));
  PTERON_CHECK_OK(kern::memory_format(a, 2));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  // The dtype cast is the out tensor's dtype (Tensor.to() converts freely).
  return copy_view_out(a, self, kern::view_of(self), out, self->sizes, self->dim);
}

// ---- copy.out(Tensor self, Tensor src, bool non_blocking=False, *,
//               Tensor(a!) out) ----------------------------------------------

int32_t copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::copy.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *src = nullptr, *out = nullptr;
  bool non_blocking = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "src", &src));
  PTERON_CHECK_OK(a.boolean(2, "non_blocking", &non_blocking));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, src));
  // src broadcasts to self's shape (never the other way).
  if (src->dim > self->dim) return kern::broadcast_error(a.ctx, a.op, self, src);
  kern::View v;
  v.dim = self->dim;
  for (int32_t i = 0; i < self->dim; ++i) {
    const int32_t j = i - (self->dim - src->dim);
    v.sizes[i] = self->sizes[i];
    if (j < 0 || src->sizes[j] == 1) {
      v.strides[i] = 0;
    } else if (src->sizes[j] == self->sizes[i]) {
      v.strides[i] = src->strides[j];
    } else {
      return kern::broadcast_error(a.ctx, a.op, self, src);
    }
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  if (!kern::is_supported_half(src->dtype))
    return kern::unsupported_dtype(a.ctx, a.op, "src", src->dtype);
  if (!kern::is_supported_half(out->dtype))
    return kern::unsupported_dtype(a.ctx, a.op, "out", out->dtype);
  kern::copy_view(src->data, src->dtype, v, out->data, out->dtype, kern::view_of(out));
  return PTERON_OK;
}

// ---- transpose_copy.int_out(Tensor self, int dim0, int dim1, *, out) -------

int32_t transpose_impl(const Args& a, pteron_tensor* self, int64_t d0, int64_t d1,
                       pteron_tensor* out) {
  kern::View v = kern::view_of(self);
  if (self->dim > 0) {
    std::swap(v.sizes[d0], v.sizes[d1]);
    std::swap(v.strides[d0], v.strides[d1]);
  }
  return copy_view_out(a, self, v, out, v.sizes, v.dim);
}

int32_t transpose_copy_int_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::transpose_copy.int_out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d0 = 0, d1 = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(sm::dim_arg(a, 1, "dim0", self->dim, &d0));
  PTERON_CHECK_OK(sm::dim_arg(a, 2, "dim1", self->dim, &d1));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  return transpose_impl(a, self, d0, d1, out);
}

// ---- t_copy.out(Tensor self, *, Tensor(a!) out) ----------------------------

int32_t t_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::t_copy.out"};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  if (self->dim > 2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: t() expects a tensor with <= 2 dimensions, but self is %dD", a.op,
                (int)self->dim);
  return transpose_impl(a, self, 0, self->dim == 2 ? 1 : 0, out);
}

// ---- flip.out(Tensor self, int[] dims, *, Tensor(a!) out) ------------------

int32_t flip_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::flip.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* dims = nullptr;
  size_t nd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "dims", &dims, &nd));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  bool seen[PTERON_MAX_DIM + 1] = {};
  kern::View v = kern::view_of(self);
  for (size_t i = 0; i < nd; ++i) {
    int64_t d = dims[i];
    if (!wrap_dim(d, self->dim)) return sm::bad_dim(a, "dims entry", dims[i], self->dim);
    if (seen[d])
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: dim %lld appears multiple times in dims",
                  a.op, (long long)d);
    seen[d] = true;
    if (self->dim == 0 || v.sizes[d] == 0) continue;
    // A negative stride walks the dim backwards from its last element.
    v.offset += (v.sizes[d] - 1) * v.strides[d];
    v.strides[d] = -v.strides[d];
  }
  return copy_view_out(a, self, v, out, self->sizes, self->dim);
}

// ---- roll.out(Tensor self, SymInt[1] shifts, int[1] dims=[], *, out) -------

int32_t roll_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::roll.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t *shifts = nullptr, *dims = nullptr;
  size_t ns = 0, nd = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "shifts", &shifts, &ns));
  PTERON_CHECK_OK(a.int_list(2, "dims", &dims, &nd));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  if (ns == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: shifts must not be empty", a.op);
  if (nd != 0 && nd != ns)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: shifts and dimensions must align (shifts: %zu, dims: %zu)", a.op, ns, nd);
  if (nd == 0 && ns != 1)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: without dims, shifts must have one entry, got %zu", a.op, ns);
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  const int64_t total = kern::numel(self);
  if (total == 0) return PTERON_OK;
  if (nd == 0) {
    // Roll of the flattened tensor: logical position p takes p - shift.
    const int64_t sh = ((shifts[0] % total) + total) % total;
    int64_t idx[PTERON_MAX_DIM];
    sm::map_elements(self, out, nullptr, [&](const int64_t* oi) {
      int64_t p = 0;
      for (int32_t i = 0; i < self->dim; ++i) p = p * self->sizes[i] + oi[i];
      p = (p - sh + total) % total;
      for (int32_t i = self->dim - 1; i >= 0; --i) {
        idx[i] = p % self->sizes[i];
        p /= self->sizes[i];
      }
      return sm::offset_of(self, idx);
    });
    return PTERON_OK;
  }
  int64_t shift[PTERON_MAX_DIM + 1] = {};
  for (size_t k = 0; k < nd; ++k) {
    int64_t d = dims[k];
    if (!wrap_dim(d, self->dim)) return sm::bad_dim(a, "dims entry", dims[k], self->dim);
    if (self->dim == 0) continue;
    const int64_t s = self->sizes[d];
    shift[d] = (shift[d] + (shifts[k] % s) + s) % s;
  }
  sm::map_elements(self, out, nullptr, [&](const int64_t* oi) {
    int64_t o = 0;
    for (int32_t i = 0; i < self->dim; ++i) {
      int64_t j = oi[i] - shift[i];
      if (j < 0) j += self->sizes[i];
      o += j * self->strides[i];
    }
    return o;
  });
  return PTERON_OK;
}

// ---- repeat.out(Tensor self, SymInt[] repeats, *, Tensor(a!) out) ----------

int32_t repeat_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::repeat.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  const int64_t* reps = nullptr;
  size_t nr = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.int_list(1, "repeats", &reps, &nr));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  if (nr < static_cast<size_t>(self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: number of dimensions of repeat dims (%zu) can not be smaller than number of "
                "dimensions of tensor (%d)",
                a.op, nr, (int)self->dim);
  if (nr > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: repeats has %zu entries, more than %d",
                a.op, nr, PTERON_MAX_DIM);
  const int32_t nd = static_cast<int32_t>(nr), lead = nd - self->dim;
  int64_t sizes[PTERON_MAX_DIM], in_sizes[PTERON_MAX_DIM], in_strides[PTERON_MAX_DIM];
  for (int32_t i = 0; i < nd; ++i) {
    if (reps[i] < 0)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: repeats entry %d is negative (%lld)",
                  a.op, (int)i, (long long)reps[i]);
    in_sizes[i] = i < lead ? 1 : self->sizes[i - lead];
    in_strides[i] = i < lead ? 0 : self->strides[i - lead];
    if (in_sizes[i] != 0 && reps[i] > std::numeric_limits<int64_t>::max() / 16 / in_sizes[i])
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: result too large", a.op);
    sizes[i] = in_sizes[i] * reps[i];
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, nd));
  sm::map_elements(self, out, nullptr, [&](const int64_t* oi) {
    int64_t o = 0;
    for (int32_t i = 0; i < nd; ++i) o += (oi[i] % in_sizes[i]) * in_strides[i];
    return o;
  });
  return PTERON_OK;
}

// ---- pixel_shuffle.out / pixel_unshuffle.out (Tensor self, int factor, *,
//                                               Tensor(a!) out) -------------

int32_t pixel_impl(const Args& a, bool shuffle) {
  PTERON_CHECK_OK(a.arity(3));
  const char* fname = shuffle ? "upscale_factor" : "downscale_factor";
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t r = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, fname, &r));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(a.ctx, a.op, "out", out, self));
  if (self->dim < 3 || self->dim + 2 > PTERON_MAX_DIM)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: self must have at least 3 dimensions (and at most %d), got %d", a.op,
                PTERON_MAX_DIM - 2, (int)self->dim);
  if (r <= 0 || r > (int64_t{1} << 20))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: %s must be positive, got %lld", a.op,
                fname, (long long)r);
  const int32_t lead = self->dim - 3;
  const int64_t C = self->sizes[lead], H = self->sizes[lead + 1], W = self->sizes[lead + 2];
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < lead; ++i) sizes[i] = self->sizes[i];
  if (shuffle) {
    if (C % (r * r) != 0)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: the channel dim of self (%lld) must be divisible by the square of "
                  "upscale_factor (%lld)",
                  a.op, (long long)C, (long long)(r * r));
    sizes[lead] = C / (r * r);
    sizes[lead + 1] = H * r;
    sizes[lead + 2] = W * r;
  } else {
    if (H % r != 0 || W % r != 0)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: the height (%lld) and width (%lld) of self must be divisible by "
                  "downscale_factor (%lld)",
                  a.op, (long long)H, (long long)W, (long long)r);
    sizes[lead] = C * r * r;
    sizes[lead + 1] = H / r;
    sizes[lead + 2] = W / r;
  }
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, sizes, self->dim));
  // Both sides seen as [..., c, h, i, w, j] (shuffle) or [..., c, i, j, h, w]
  // (unshuffle), walked in the same logical order.
  const pteron_tensor* big = shuffle ? self : out;    // the [.., C*r*r, H, W] side
  const pteron_tensor* small = shuffle ? out : self;  // the [.., C, H*r, W*r] side
  const int64_t c = small->sizes[lead], h = big->sizes[lead + 1], w = big->sizes[lead + 2];
  const int64_t bc = big->strides[lead], bh = big->strides[lead + 1], bw = big->strides[lead + 2];
  const int64_t sc = small->strides[lead], sh = small->strides[lead + 1],
                sw = small->strides[lead + 2];
  kern::View vb, vs;
  vb.dim = vs.dim = lead + 5;
  for (int32_t i = 0; i < lead; ++i) {
    vb.sizes[i] = vs.sizes[i] = self->sizes[i];
    vb.strides[i] = big->strides[i];
    vs.strides[i] = small->strides[i];
  }
  // order: c, h, i, w, j
  const int64_t szs[5] = {c, h, r, w, r};
  const int64_t bst[5] = {bc * r * r, bh, bc * r, bw, bc};
  const int64_t sst[5] = {sc, sh * r, sh, sw * r, sw};
  for (int32_t k = 0; k < 5; ++k) {
    vb.sizes[lead + k] = vs.sizes[lead + k] = szs[k];
    vb.strides[lead + k] = bst[k];
    vs.strides[lead + k] = sst[k];
  }
  if (!kern::is_supported_half(self->dtype))
    return kern::unsupported_dtype(a.ctx, a.op, "self", self->dtype);
  if (kern::numel(out) == 0) return PTERON_OK;
  if (shuffle)
    kern::copy_view(self->data, self->dtype, vb, out->data, out->dtype, vs);
  else
    kern::copy_view(self->data, self->dtype, vs, out->data, out->dtype, vb);
  return PTERON_OK;
}

int32_t pixel_shuffle_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return pixel_impl(Args{ctx, args, n, "aten::pixel_shuffle.out"}, true);
}
int32_t pixel_unshuffle_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return pixel_impl(Args{ctx, args, n, "aten::pixel_unshuffle.out"}, false);
}

// ---- split_copy.Tensor_out / split_with_sizes_copy.out / unbind_copy.int_out

// Copies consecutive pieces of self along d (lengths[k]) into outs[k];
// `drop` removes the dim (unbind).
int32_t split_pieces(const Args& a, const pteron_tensor* self, int64_t d, const int64_t* lengths,
                     size_t count, pteron_tensor* const* outs, bool drop) {
  for (size_t k = 0; k < count; ++k) {
    if (outs[k] == self) return kern::reject_alias(a.ctx, a.op, "out", outs[k], self);
    PTERON_CHECK_OK(sm::same_dtype(a, "self", self, outs[k]));
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
    PTERON_CHECK_OK(copy_view_out(a, self, v, outs[k], sizes, j));
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
  PTERON_CHECK_OK(sm::dim_arg(a, 2, "dim", self->dim, &d));
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
  PTERON_CHECK_OK(sm::out_list(a, 3, count, &outs));
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
  PTERON_CHECK_OK(sm::dim_arg(a, 2, "dim", self->dim, &d));
  pteron_tensor* const* outs = nullptr;
  PTERON_CHECK_OK(sm::out_list(a, 3, count, &outs));
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
  PTERON_CHECK_OK(sm::dim_arg(a, 1, "dim", self->dim, &d));
  const int64_t count = self->sizes[d];
  pteron_tensor* const* outs = nullptr;
  size_t got = 0;
  PTERON_CHECK_OK(a.tensor_list(2, "out", &outs, &got));
  if (static_cast<int64_t>(got) != count)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: out has %zu tensors but dim %lld of self has size %lld", a.op, got,
                (long long)d, (long long)count);
  PTERON_CHECK_OK(sm::out_list(a, 2, got, &outs));
  int64_t* lengths = static_cast<int64_t*>(pteron_kernel_scratch(ctx, (got + 1) * sizeof(int64_t)));
  if (!lengths) return PTERON_ERROR_OUT_OF_MEMORY;
  for (size_t k = 0; k < got; ++k) lengths[k] = 1;
  return split_pieces(a, self, d, lengths, got, outs, true);
}

// ---- stack.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -------------

int32_t stack_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::stack.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor* const* ts = nullptr;
  size_t count = 0;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(a.tensor_list(0, "tensors", &ts, &count));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (count == 0 || !ts)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: stack expects a non-empty TensorList",
                a.op);
  int32_t dtype = -1;
  for (size_t k = 0; k < count; ++k) {
    const pteron_tensor* t = ts[k];
    if (!t) return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensors[%zu] is None", a.op, k);
    PTERON_CHECK_OK(kern::check_tensor(ctx, a.op, "tensors", t));
    PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, t));
    if (!kern::is_supported_half(t->dtype))
      return kern::unsupported_dtype(ctx, a.op, "tensors", t->dtype);
    dtype = dtype < 0 ? t->dtype : kern::promote_types(dtype, t->dtype);
    if (t->dim != ts[0]->dim)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: stack expects each tensor to be equal size, but tensor 0 has rank %d and "
                  "tensor %zu has rank %d",
                  a.op, (int)ts[0]->dim, k, (int)t->dim);
    for (int32_t i = 0; i < t->dim; ++i)
      if (t->sizes[i] != ts[0]->sizes[i])
        return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                    "%s: stack expects each tensor to be equal size, but tensor %zu differs from "
                    "tensor 0 at dim %d (%lld vs %lld)",
                    a.op, k, (int)i, (long long)t->sizes[i], (long long)ts[0]->sizes[i]);
  }
  const int32_t rank = ts[0]->dim;
  if (rank >= PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: tensors already have the maximum rank %d",
                a.op, PTERON_MAX_DIM);
  int64_t d = 0;
  PTERON_CHECK_OK(sm::dim_arg(a, 1, "dim", rank + 1, &d));
  if (!kern::is_supported_half(out->dtype))
    return kern::unsupported_dtype(ctx, a.op, "out", out->dtype);
  if (!kern::can_cast(dtype, out->dtype)) return kern::cast_error(ctx, a.op, dtype, out->dtype);
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0, j = 0; i <= rank; ++i)
    sizes[i] = i == d ? static_cast<int64_t>(count) : ts[0]->sizes[j++];
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, sizes, rank + 1));
  if (kern::numel(out) == 0) return PTERON_OK;
  for (size_t k = 0; k < count; ++k) {
    kern::View dst;
    dst.dim = rank;
    for (int32_t i = 0, j = 0; i <= rank; ++i) {
      if (i == d) continue;
      dst.sizes[j] = out->sizes[i];
      dst.strides[j] = out->strides[i];
      ++j;
    }
    dst.offset = static_cast<int64_t>(k) * out->strides[d];
    kern::copy_view(ts[k]->data, ts[k]->dtype, kern::view_of(ts[k]), out->data, out->dtype, dst);
  }
  return PTERON_OK;
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
  PTERON_CHECK_OK(sm::dim_arg(a, 1, "dim", self->dim, &d));
  PTERON_CHECK_OK(a.integer(2, "start", &start));
  PTERON_CHECK_OK(a.integer(3, "length", &len));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
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
  return copy_view_out(a, self, v, out, v.sizes, v.dim);
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
  PTERON_CHECK_OK(sm::dim_arg(a, 2, "dim1", self->dim, &d1));
  PTERON_CHECK_OK(sm::dim_arg(a, 3, "dim2", self->dim, &d2));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
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
  return copy_view_out(a, self, v, out, v.sizes, v.dim);
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
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
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
  return copy_view_out(a, self, v, out, v.sizes, v.dim);
}

// ---- unfold_copy.out(Tensor self, int dimension, int size, int step, *,
//                      Tensor(a!) out) ---------------------------------------

int32_t unfold_copy_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::unfold_copy.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t d = 0, size = 0, step = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(sm::dim_arg(a, 1, "dimension", self->dim, &d));
  PTERON_CHECK_OK(a.integer(2, "size", &size));
  PTERON_CHECK_OK(a.integer(3, "step", &step));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
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
  return copy_view_out(a, self, v, out, v.sizes, v.dim);
}

// ---- tril.out(Tensor self, SymInt diagonal=0, *, Tensor(a!) out) -----------

int32_t tril_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::tril.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  int64_t diag = 0;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.integer(1, "diagonal", &diag));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  if (self->dim < 2)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: tril: input tensor must have at least 2 dimensions, got %d", a.op,
                (int)self->dim);
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  const int32_t r = self->dim - 2, c = self->dim - 1;
  const uint64_t zero = 0;
  sm::map_elements(self, out, &zero, [&](const int64_t* oi) -> int64_t {
    if (oi[c] - oi[r] > diag) return -1;
    return sm::offset_of(self, oi);
  });
  return PTERON_OK;
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
  PTERON_CHECK_OK(sm::dim_arg(a, 2, "dim", self->dim, &d));
  PTERON_CHECK_OK(a.integer(3, "index", &index));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  const int64_t size = self->sizes[d];
  if (index < -size || index >= size)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: index %lld is out of range for dim %lld of size %lld", a.op, (long long)index,
                (long long)d, (long long)size);
  if (index < 0) index += size;
  // out's strides equal self's after the resize only in shape; build from out.
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  kern::View dst;
  int32_t j = 0;
  for (int32_t i = 0; i < out->dim; ++i) {
    if (i == d) continue;
    dst.sizes[j] = out->sizes[i];
    dst.strides[j] = out->strides[i];
    ++j;
  }
  dst.dim = j;
  dst.offset = index * out->strides[d];
  return scatter_view(a, self, src, out, dst);
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
  PTERON_CHECK_OK(sm::dim_arg(a, 2, "dim", self->dim, &d));
  PTERON_CHECK_OK(kern::opt_integer(a, 3, "start", &start, &has_start));
  PTERON_CHECK_OK(kern::opt_integer(a, 4, "end", &end, &has_end));
  PTERON_CHECK_OK(a.integer(5, "step", &step));
  PTERON_CHECK_OK(a.tensor(6, "out", &out));
  PTERON_CHECK_OK(sm::same_dtype(a, "self", self, out));
  if (step <= 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: slice step must be positive, got %lld",
                a.op, (long long)step);
  const int64_t size = self->sizes[d];
  if (!has_start) start = 0;
  if (!has_end) end = std::numeric_limits<int64_t>::max();
  if (start < 0) start = start < -size ? 0 : start + size;
  if (end < 0) end = end < -size ? 0 : end + size;
  if (start > size) start = size;
  if (end > size) end = size;
  if (end < start) end = start;
  const int64_t len = end > start ? (end - start - 1) / step + 1 : 0;
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  kern::View dst = kern::view_of(out);
  dst.sizes[d] = len;
  dst.offset = len > 0 ? start * out->strides[d] : 0;
  if (len > 1) dst.strides[d] = out->strides[d] * step;
  return scatter_view(a, self, src, out, dst);
}

// ---- repeat_interleave.Tensor_out(Tensor repeats, *,
//        SymInt? output_size=None, Tensor(a!) out) ----------------------------

int32_t repeat_interleave_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                     size_t n) {
  Args a{ctx, args, n, "aten::repeat_interleave.Tensor_out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *reps = nullptr, *out = nullptr;
  int64_t output_size = 0;
  bool has_size = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "repeats", &reps));
  PTERON_CHECK_OK(kern::opt_integer(a, 1, "output_size", &output_size, &has_size));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (reps->dtype != PTERON_DTYPE_INT32 && reps->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: repeats has to be an int32 or int64 tensor, got %s", a.op,
                kern::dtype_name(reps->dtype));
  PTERON_CHECK_OK(sm::same_dtype(a, "repeats", reps, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, reps));
  if (reps->dim > 1)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: repeats has to be 1-D, got rank %d", a.op,
                (int)reps->dim);
  const int64_t count = kern::numel(reps);
  const int64_t st = reps->dim == 1 ? reps->strides[0] : 0;
  auto rep = [&](int64_t k) -> int64_t {
    return reps->dtype == PTERON_DTYPE_INT32 ? static_cast<const int32_t*>(reps->data)[k * st]
                                             : static_cast<const int64_t*>(reps->data)[k * st];
  };
  int64_t total = 0;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t r = rep(k);
    if (r < 0 || r > (std::numeric_limits<int64_t>::max() / 16) - total)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: repeats must be non-negative (entry %lld is %lld)", a.op, (long long)k,
                  (long long)r);
    total += r;
  }
  if (has_size && output_size != total)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: output_size %lld differs from the sum of repeats %lld", a.op,
                (long long)output_size, (long long)total);
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, &total, 1));
  int64_t pos = 0;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t r = rep(k);
    for (int64_t j = 0; j < r; ++j, ++pos) {
      if (out->dtype == PTERON_DTYPE_INT32)
        static_cast<int32_t*>(out->data)[pos] = static_cast<int32_t>(k);
      else
        static_cast<int64_t*>(out->data)[pos] = k;
    }
  }
  return PTERON_OK;
}

// ---- dim_order_ops::_empty_dim_order.out(int[] size, *,
//        int[]? dim_order=None, Tensor(a!) out) -------------------------------

int32_t empty_dim_order_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "dim_order_ops::_empty_dim_order.out"};
  PTERON_CHECK_OK(a.arity(3));
  const int64_t *size = nullptr, *order = nullptr;
  size_t nd = 0, no = 0;
  bool has_order = false;
  pteron_tensor* out = nullptr;
  PTERON_CHECK_OK(a.int_list(0, "size", &size, &nd));
  PTERON_CHECK_OK(kern::opt_int_list(a, 1, "dim_order", &order, &no, &has_order));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (nd > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: size has %zu entries, more than %d", a.op,
                nd, PTERON_MAX_DIM);
  if (has_order) {
    if (no != nd)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: dim_order has %zu entries but size has %zu", a.op, no, nd);
    bool seen[PTERON_MAX_DIM] = {};
    for (size_t i = 0; i < no; ++i) {
      if (order[i] < 0 || order[i] >= static_cast<int64_t>(nd) || seen[order[i]])
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: dim_order is not a permutation of the dims (entry %zu is %lld)", a.op, i,
                    (long long)order[i]);
      seen[order[i]] = true;
      if (out->dim == static_cast<int32_t>(nd) && out->dim_order[i] != order[i])
        return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                    "%s: dim_order argument disagrees with the out tensor's declared dim order at "
                    "position %zu",
                    a.op, i);
    }
  }
  // The contents of an empty tensor are unspecified: only the shape is set.
  return kern::resize_out(ctx, a.op, "out", out, size, static_cast<int32_t>(nd));
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

// aten::copy_ (in place): (self, src, non_blocking, returned self). The
// exporter emits it to write a mutable buffer back; it is copy.out with
// out = self.
int32_t copy_inplace(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  if (n != 4) return copy_out(ctx, args, n);  // copy.out names the arity error
  pteron_value* const call[4] = {args[0], args[1], args[2], args[0]};
  return copy_out(ctx, call, 4);
}

PTERON_REGISTER_KERNELS(
    {"aten::split_copy", "Tensor_out", nullptr, split_copy_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::split_with_sizes_copy", "out", nullptr, split_with_sizes_copy_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"aten::unbind_copy", "int_out", nullptr, unbind_copy_int_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::stack", "out", nullptr, stack_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::flip", "out", nullptr, flip_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::roll", "out", nullptr, roll_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::repeat", "out", nullptr, repeat_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::pixel_shuffle", "out", nullptr, pixel_shuffle_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::pixel_unshuffle", "out", nullptr, pixel_unshuffle_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::transpose_copy", "int_out", nullptr, transpose_copy_int_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::t_copy", "out", nullptr, t_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::_to_copy", "out", nullptr, to_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::alias_copy", "out", nullptr, alias_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::detach_copy", "out", nullptr, detach_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::lift_fresh_copy", "out", nullptr, lift_fresh_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::copy", "out", nullptr, copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::copy_", "", nullptr, copy_inplace, PTERON_KERNEL_PRIORITY, 0},
    {"aten::as_strided_copy", "out", nullptr, as_strided_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::diagonal_copy", "out", nullptr, diagonal_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::narrow_copy", "out", nullptr, narrow_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::unfold_copy", "out", nullptr, unfold_copy_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::tril", "out", nullptr, tril_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::select_scatter", "out", nullptr, select_scatter_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::slice_scatter", "out", nullptr, slice_scatter_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::repeat_interleave", "Tensor_out", nullptr, repeat_interleave_tensor_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"dim_order_ops::_empty_dim_order", "out", nullptr, empty_dim_order_out, PTERON_KERNEL_PRIORITY,
     0},
    {"aten::view_as_real_copy", "out", nullptr, view_as_real_copy_out, PTERON_KERNEL_PRIORITY, 0})
