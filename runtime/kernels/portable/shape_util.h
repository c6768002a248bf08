// SPDX-License-Identifier: BSD-3-Clause
// shape_util.h - helpers of the portable kernels that move elements
// (shape_*.cpp, pad.cpp, index_*.cpp): dim errors, the copy of a view into
// a resized out, index tensors, logical-index iteration, and element copies
// by byte width, so that every dtype moves, whatever its arithmetic (private
// to kernels_portable).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dtype_convert.h"
#include "kernel_util.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace pteron::kern::shape_util {

using pteron::kern::bad_dim;  // tensor_checks.h

// Reads and wraps a dim argument against `rank`.
inline int32_t dim_arg(const Args& a, size_t i, const char* name, int32_t rank, int64_t* d) {
  int64_t d0 = 0;
  PTERON_CHECK_OK(a.integer(i, name, &d0));
  *d = d0;
  if (!wrap_dim(*d, rank)) return bad_dim(a, name, d0, rank);
  return PTERON_OK;
}

// Resizes out to `sizes` and copies the view `src` of self into it.
inline int32_t copy_view_out(const Args& a, const pteron_tensor* self, const View& src,
                             pteron_tensor* out, const int64_t* sizes, int32_t dim) {
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out", out, sizes, dim));
  return copy_tensor(a, self, src, out, true);
}

inline int32_t same_dtype(const Args& a, const char* name, const pteron_tensor* t,
                          const pteron_tensor* out) {
  if (t->dtype != out->dtype)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: %s (%s) and out (%s) must have the same dtype", a.op, name,
                dtype_name(t->dtype), dtype_name(out->dtype));
  return PTERON_OK;
}

// Index tensors (index_select, gather, index.Tensor, ...) are int32 or int64.
inline bool is_index_dtype(int32_t d) { return d == PTERON_DTYPE_INT32 || d == PTERON_DTYPE_INT64; }

inline int32_t index_dtype_error(const Args& a, const char* name, int32_t d) {
  return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
              "%s: expected dtype int32 or int64 for %s, got %s", a.op, name, dtype_name(d));
}

// The index at element offset `off` of int32 or int64 data.
inline int64_t load_index(const void* p, int32_t dtype, int64_t off) {
  return dtype == PTERON_DTYPE_INT32 ? static_cast<const int32_t*>(p)[off]
                                     : static_cast<const int64_t*>(p)[off];
}

// x + y as scatter_add and accumulating index_put add: bool is `or`,
// integers wrap, float16 / bfloat16 add in float and round once.
template <typename T>
inline T add_values(T x, T y) {
  if constexpr (std::is_same_v<T, bool>)
    return x || y;
  else if constexpr (std::is_integral_v<T>)
    return wrap_add(x, y);
  else if constexpr (is_half_v<T>)
    return T(static_cast<float>(x) + static_cast<float>(y));  // in float, rounded once
  else
    return x + y;
}

// Storage offset of logical index `idx` in `t`.
inline int64_t offset_of(const pteron_tensor* t, const int64_t* idx) {
  int64_t o = 0;
  for (int32_t i = 0; i < t->dim; ++i) o += idx[i] * t->strides[i];
  return o;
}

// Calls f(idx) for every logical index of a shape, in row-major order.
template <typename F>
inline void for_each_index(const int64_t* sizes, int32_t dim, F&& f) {
  int64_t total = 1;
  for (int32_t i = 0; i < dim; ++i) total *= sizes[i];
  if (total == 0) return;
  int64_t idx[PTERON_MAX_DIM] = {0};
  for (int64_t n = 0; n < total; ++n) {
    f(static_cast<const int64_t*>(idx));
    for (int32_t i = dim - 1; i >= 0; --i) {
      if (++idx[i] < sizes[i]) break;
      idx[i] = 0;
    }
  }
}

// Fills every element of `out` through an index map: src(idx) returns the
// storage offset in `self` of the element at out's logical index idx, or -1
// for `fill` (an element of out's byte width). Same dtype on both sides.
template <typename T, typename F>
inline void map_typed(const pteron_tensor* self, pteron_tensor* out, const void* fill, F&& src) {
  const T* s = static_cast<const T*>(self->data);
  T* d = static_cast<T*>(out->data);
  T fv{};
  if (fill) std::memcpy(&fv, fill, sizeof(T));
  for_each_index(out->sizes, out->dim, [&](const int64_t* idx) {
    const int64_t so = src(idx);
    d[offset_of(out, idx)] = so < 0 ? fv : s[so];
  });
}

template <typename F>
inline void map_elements(const pteron_tensor* self, pteron_tensor* out, const void* fill, F&& src) {
  switch (dtype_size(out->dtype)) {
    case 1: map_typed<uint8_t>(self, out, fill, src); break;
    case 2: map_typed<uint16_t>(self, out, fill, src); break;
    case 4: map_typed<uint32_t>(self, out, fill, src); break;
    case 8: map_typed<uint64_t>(self, out, fill, src); break;
    default: break;
  }
}

// Copies one element of byte width `es`.
inline void copy_elem(void* dst, int64_t doff, const void* src, int64_t soff, size_t es) {
  std::memcpy(static_cast<unsigned char*>(dst) + doff * static_cast<int64_t>(es),
              static_cast<const unsigned char*>(src) + soff * static_cast<int64_t>(es), es);
}

// The out tensors of a `Tensor(a!)[] out` argument, each checked to be a
// tensor; `count` must match.
inline int32_t out_list(const Args& a, size_t i, size_t count, pteron_tensor* const** outs) {
  size_t got = 0;
  PTERON_CHECK_OK(a.tensor_list(i, "out", outs, &got));
  if (got != count)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: out has %zu tensors but the operator makes %zu", a.op, got, count);
  if (count > 0 && !*outs)
    return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: out list is null", a.op);
  for (size_t k = 0; k < count; ++k)
    if (!(*outs)[k])
      return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: out[%zu] is None", a.op, k);
  return PTERON_OK;
}

}  // namespace pteron::kern::shape_util
