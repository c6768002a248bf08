// SPDX-License-Identifier: BSD-3-Clause
// tensor_checks.h - checks that make a kernel safe against whatever a
// malformed program declares: tensor metadata against its storage, out
// resizing, aliasing, broadcasting (header-only, private to the kernel
// libraries). Every failure names the operator and the argument.
#pragma once

#include <cstdint>
#include <cstdio>

#include "kernel_util.h"

namespace pteron::kern {

// check_tensor() that also takes the complex dtypes, for the kernels that
// handle them (aten::view_as_real_copy.out).
inline int32_t check_tensor_complex(pteron_kernel_context* ctx, const char* op, const char* name,
                                    const pteron_tensor* t) {
  if (t->dim < 0 || t->dim > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensor '%s' has invalid rank %d", op, name,
                t->dim);
  const size_t es = dtype_size(t->dtype);
  if (es == 0) return unsupported_dtype(ctx, op, name, t->dtype);
  int64_t n = 1;
  for (int32_t i = 0; i < t->dim; ++i) {
    int64_t s = t->sizes[i];
    if (s < 0)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s: tensor '%s' has negative size %lld at dim %d", op, name,
                  static_cast<long long>(s), i);
    if (s != 0 && n > INT64_MAX / 16 / s)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensor '%s' is too large", op, name);
    n *= s;
  }
  // Offsets are formed as sum(idx * stride), idx <= size (iterators step
  // one past the end before wrapping): keep that far from overflow, and keep
  // the largest real offset inside the storage.
  int64_t span = 0, max_off = 0;
  for (int32_t i = 0; i < t->dim; ++i) {
    const int64_t st = t->strides[i], s = t->sizes[i];
    const int64_t room = INT64_MAX / 4 - span;
    if (st < 0 || (s > 0 && st > room / s))
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s: tensor '%s' has invalid stride %lld at dim %d", op, name,
                  static_cast<long long>(st), i);
    span += s * st;
    if (s > 0) max_off += (s - 1) * st;
  }
  if (n == 0) return PTERON_OK;
  if (max_off >= n)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: tensor '%s' strides exceed its size", op,
                name);
  if (!t->data || t->capacity_bytes < 0 ||
      static_cast<uint64_t>(n) * es > static_cast<uint64_t>(t->capacity_bytes))
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: tensor '%s' has no storage for %lld elements", op, name,
                static_cast<long long>(n));
  return PTERON_OK;
}

// Checks that a tensor's metadata is self-consistent so no kernel can read or
// write outside its storage: rank in range, a dtype with a known element size
// and not complex (PTERON_ERROR_UNSUPPORTED_DTYPE naming the dtype
// otherwise), sizes >= 0, no size overflow, strides in bounds of numel,
// storage present and large enough.
inline int32_t check_tensor(pteron_kernel_context* ctx, const char* op, const char* name,
                            const pteron_tensor* t) {
  if (is_complex(t->dtype)) return unsupported_dtype(ctx, op, name, t->dtype);
  return check_tensor_complex(ctx, op, name, t);
}

// Checks that `d` is one of the dtypes these kernels compute in.
inline int32_t check_supported(pteron_kernel_context* ctx, const char* op, const char* name,
                               int32_t d) {
  if (!is_supported(d)) return unsupported_dtype(ctx, op, name, d);
  return PTERON_OK;
}

// check_supported() for a kernel that accepts float16 and bfloat16 too
// (is_supported_half, kernel_util.h).
inline int32_t check_supported_half(pteron_kernel_context* ctx, const char* op, const char* name,
                                    int32_t d) {
  if (!is_supported_half(d)) return unsupported_dtype(ctx, op, name, d);
  return PTERON_OK;
}

// A tensor argument (or a tensor-or-None one), checked with check_tensor.
inline int32_t tensor_arg(const Args& a, size_t i, const char* name, pteron_tensor** out) {
  PTERON_CHECK_OK(a.tensor(i, name, out));
  return check_tensor(a.ctx, a.op, name, *out);
}
inline int32_t opt_tensor_arg(const Args& a, size_t i, const char* name, pteron_tensor** out) {
  PTERON_CHECK_OK(a.opt_tensor(i, name, out));
  if (*out == nullptr) return PTERON_OK;
  return check_tensor(a.ctx, a.op, name, *out);
}

// A dim argument (or list entry) `d` out of range for a tensor of `rank`.
inline int32_t bad_dim(const Args& a, const char* arg, int64_t d, int32_t rank) {
  int32_t r = rank == 0 ? 1 : rank;
  return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
              "%s: %s %lld is out of range for a tensor of rank %d (expected in [%d, %d])", a.op,
              arg, (long long)d, (int)rank, -r, r - 1);
}

// Validates sizes, resizes `t` through the runtime, confirms it took them
// and re-checks it.
inline int32_t resize_out(pteron_kernel_context* ctx, const char* op, const char* name,
                          pteron_tensor* t, const int64_t* sizes, int32_t dim) {
  if (dim < 0 || dim > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: output rank %d too large", op, dim);
  int64_t n = 1;
  for (int32_t i = 0; i < dim; ++i) {
    if (sizes[i] < 0)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: negative output size %lld", op,
                  static_cast<long long>(sizes[i]));
    if (sizes[i] != 0 && n > INT64_MAX / 16 / sizes[i])
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: output '%s' would be too large", op, name);
    n *= sizes[i];
  }
  PTERON_CHECK_OK(pteron_tensor_resize(ctx, t, sizes, dim));
  if (t->dim != dim)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: out tensor '%s' could not take rank %d", op,
                name, dim);
  for (int32_t i = 0; i < dim; ++i)
    if (t->sizes[i] != sizes[i])
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: out tensor '%s' could not be resized", op,
                  name);
  return check_tensor(ctx, op, name, t);
}

// Refuses tensor `name` unless its dtype is `dt` (kernels that take no mixed
// dtypes: every tensor must have the first input's dtype).
inline int32_t expect_dtype(pteron_kernel_context* ctx, const char* op, const pteron_tensor* t,
                            const char* name, int32_t dt) {
  if (t->dtype != dt)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: '%s' has dtype %s but expected %s", op,
                name, dtype_name(t->dtype), dtype_name(dt));
  return PTERON_OK;
}

// Refuses an out argument that is the same tensor as an input, for kernels
// whose out shape differs from that input's (a resize would change the
// input's sizes under the kernel) or that read inputs after writing out.
inline int32_t reject_alias(pteron_kernel_context* ctx, const char* op, const char* out_name,
                            const pteron_tensor* out, const pteron_tensor* a,
                            const pteron_tensor* b = nullptr, const pteron_tensor* c = nullptr) {
  if (out == a || (b && out == b) || (c && out == c))
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: out argument '%s' is also an input", op,
                out_name);
  return PTERON_OK;
}

inline int32_t cast_error(pteron_kernel_context* ctx, const char* op, int32_t from, int32_t to) {
  return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
              "%s: result type %s can't be cast to the out dtype %s", op, dtype_name(from),
              dtype_name(to));
}

// Product of sizes with overflow check (sizes already known >= 0).
inline bool checked_numel(const int64_t* sizes, int32_t dim, int64_t* out) {
  int64_t n = 1;
  bool zero = false, overflow = false;
  for (int32_t i = 0; i < dim; ++i) {
    if (sizes[i] == 0)
      zero = true;
    else if (n > INT64_MAX / sizes[i])
      overflow = true;
    else
      n *= sizes[i];
  }
  if (zero) {
    *out = 0;
    return true;
  }
  if (overflow) return false;
  *out = n;
  return true;
}

// ---- broadcasting -------------------------------------------------------------

// Broadcast shape of up to three tensors (nullptr entries are skipped).
inline bool broadcast_shape_n(const pteron_tensor* const* ts, size_t n, int64_t* out,
                              int32_t* out_dim) {
  int32_t nd = 0;
  for (size_t k = 0; k < n; ++k)
    if (ts[k] && ts[k]->dim > nd) nd = ts[k]->dim;
  for (int32_t i = 0; i < nd; ++i) out[i] = 1;
  for (size_t k = 0; k < n; ++k) {
    const pteron_tensor* t = ts[k];
    if (!t) continue;
    for (int32_t i = 0; i < t->dim; ++i) {
      int64_t s = t->sizes[i];
      int64_t& o = out[nd - t->dim + i];
      if (s == o || s == 1) continue;
      if (o != 1) return false;
      o = s;
    }
  }
  *out_dim = nd;
  return true;
}

// PTERON_ERROR_SHAPE_MISMATCH naming both shapes.
inline int32_t broadcast_error(pteron_kernel_context* ctx, const char* op, const pteron_tensor* a,
                               const pteron_tensor* b) {
  char sa[192], sb[192];
  auto fmt = [](const pteron_tensor* t, char* buf, size_t cap) {
    size_t k = 0;
    k += std::snprintf(buf + k, cap - k, "[");
    for (int32_t i = 0; i < t->dim && k < cap; ++i)
      k += std::snprintf(buf + k, cap - k, i ? ", %lld" : "%lld",
                         static_cast<long long>(t->sizes[i]));
    if (k < cap) std::snprintf(buf + k, cap - k, "]");
  };
  fmt(a, sa, sizeof sa);
  fmt(b, sb, sizeof sb);
  return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: shapes %s and %s are not broadcastable", op,
              sa, sb);
}

}  // namespace pteron::kern
