// SPDX-License-Identifier: BSD-3-Clause
// index.cpp - portable kernels that gather rows or fill tensors:
// index_select, embedding, full_like and zeros_like (full_like and zeros_like
// take float16 and bfloat16 too).
//
// Index values are checked against their bound before anything is written;
// an out-of-range index is an error naming the value and the bound.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
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

bool is_index_dtype(int32_t d) { return d == PTERON_DTYPE_INT32 || d == PTERON_DTYPE_INT64; }

int64_t load_index(const pteron_tensor* t, int64_t off) {
  return t->dtype == PTERON_DTYPE_INT32 ? static_cast<const int32_t*>(t->data)[off]
                                        : static_cast<const int64_t*>(t->data)[off];
}

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
  if (!is_index_dtype(index->dtype))
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: expected dtype int32 or int64 for index, got %s", a.op,
                pteron::kern::dtype_name(index->dtype));
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
    int64_t v = load_index(index, j * istride);
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
    int64_t v = load_index(index, j * istride);
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
  if (!is_index_dtype(indices->dtype))
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "%s: expected dtype int32 or int64 for indices, got %s", a.op,
                pteron::kern::dtype_name(indices->dtype));
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
      int64_t v = load_index(indices, off);
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
    int64_t v = load_index(indices, wi.off);
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

// ---- full_like / zeros_like -------------------------------------------------

// Converts the fill value to the out dtype the way c10's checked_convert
// does: integral targets refuse values that overflow them (unsigned ones
// accept down to -max, which wraps), float32 refuses finite values beyond
// its range.
int32_t fill_value(const Args& a, size_t i, int32_t dtype, void* slot) {
  const pteron_value* v = a.v[i];
  double dv = 0;
  int64_t iv = 0;
  bool is_int = false;
  switch (v->tag) {
    case PTERON_VALUE_INT:
      iv = v->u.i;
      is_int = true;
      break;
    case PTERON_VALUE_BOOL:
      iv = v->u.b != 0;
      is_int = true;
      break;
    case PTERON_VALUE_DOUBLE: dv = v->u.d; break;
    default:
      return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s: argument %zu ('fill_value') is not a number", a.op, i);
  }
  auto overflow = [&]() {
    if (is_int)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: value %lld cannot be converted to type %s without "
                  "overflow",
                  a.op, (long long)iv, pteron::kern::dtype_name(dtype));
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: value %g cannot be converted to type %s without overflow", a.op, dv,
                pteron::kern::dtype_name(dtype));
  };
  int32_t rc = PTERON_OK;
  pteron::kern::dispatch_half(dtype, [&](auto t) {
    using T = decltype(t);
    T out{};
    if constexpr (std::is_same_v<T, bool>) {
      out = is_int ? iv != 0 : dv != 0;
    } else if constexpr (pteron::kern::is_half_v<T>) {
      // finite values beyond the type's largest are an overflow (c10's rule)
      const double x = is_int ? static_cast<double>(iv) : dv;
      const double top =
          static_cast<float>(T::from_bits(std::is_same_v<T, kern::Half> ? 0x7bff : 0x7f7f));
      if (std::isfinite(x) && std::fabs(x) > top) {
        rc = overflow();
        return;
      }
      out = T(x);
    } else if constexpr (std::is_floating_point_v<T>) {
      double x = is_int ? static_cast<double>(iv) : dv;
      if (std::is_same_v<T, float> && std::isfinite(x) &&
          std::fabs(x) > static_cast<double>(FLT_MAX)) {
        rc = overflow();
        return;
      }
      out = static_cast<T>(x);
    } else {
      const int64_t hi = static_cast<int64_t>(std::numeric_limits<T>::max());
      const int64_t lo =
          std::is_unsigned_v<T> ? -hi : static_cast<int64_t>(std::numeric_limits<T>::min());
      int64_t x = 0;
      if (is_int) {
        x = iv;
      } else {
        // Range check on the value itself, then truncate toward zero.
        if (!(dv >= -9223372036854775808.0 && dv < 9223372036854775808.0) ||
            dv > static_cast<double>(hi) || dv < static_cast<double>(lo)) {
          rc = overflow();
          return;
        }
        x = static_cast<int64_t>(dv);
      }
      if (x > hi || x < lo) {
        rc = overflow();
        return;
      }
      out = static_cast<T>(x);  // negative into unsigned wraps, as in c10
    }
    std::memcpy(slot, &out, sizeof out);
  });
  return rc;
}

template <typename T>
void fill_typed(void* data, int64_t count, const void* slot) {
  T v;
  std::memcpy(&v, slot, sizeof v);
  T* p = static_cast<T*>(data);
  for (int64_t i = 0; i < count; ++i) p[i] = v;
}

// full_like.out(Tensor self, Scalar fill_value, *,
//               MemoryFormat? memory_format=None, Tensor(a!) out)
int32_t full_like_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::full_like.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::memory_format(a, 2));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  if (!pteron::kern::is_supported_half(out->dtype))
    return pteron::kern::unsupported_dtype(ctx, a.op, "out", out->dtype);
  alignas(8) unsigned char slot[8];
  PTERON_CHECK_OK(fill_value(a, 1, out->dtype, slot));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  // Storage is dense, so every element of it belongs to the tensor.
  const int64_t count = pteron::kern::numel(out);
  if (count == 0) return PTERON_OK;
  switch (pteron::kern::dtype_size(out->dtype)) {
    case 1: fill_typed<uint8_t>(out->data, count, slot); break;
    case 2: fill_typed<uint16_t>(out->data, count, slot); break;
    case 4: fill_typed<uint32_t>(out->data, count, slot); break;
    case 8: fill_typed<uint64_t>(out->data, count, slot); break;
    default: break;
  }
  return PTERON_OK;
}

// zeros_like.out(Tensor self, *, MemoryFormat? memory_format=None,
//                Tensor(a!) out)
int32_t zeros_like_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::zeros_like.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::memory_format(a, 1));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  if (!pteron::kern::is_supported_half(out->dtype))
    return pteron::kern::unsupported_dtype(ctx, a.op, "out", out->dtype);
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  const int64_t count = pteron::kern::numel(out);
  if (count > 0)
    std::memset(out->data, 0, static_cast<size_t>(count) * pteron::kern::dtype_size(out->dtype));
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::index_select", "out", nullptr, index_select_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::embedding", "out", nullptr, embedding_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::full_like", "out", nullptr, full_like_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::zeros_like", "out", nullptr, zeros_like_out, PTERON_KERNEL_PRIORITY, 0})
