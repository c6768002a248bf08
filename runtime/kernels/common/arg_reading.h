// SPDX-License-Identifier: BSD-3-Clause
// arg_reading.h - reading an operator's non-tensor arguments by schema
// position: Python Scalars (integers kept exact), optional ints, int lists,
// dtypes, strings, memory formats and per-spatial-dim parameters
// (header-only, private to the kernel libraries). Every failure is
// PTERON_ERROR_INVALID_PROGRAM or _INVALID_ARGUMENT naming the operator,
// the argument's position and its schema name. Tensor arguments: Args
// (kernel_util.h) and tensor_arg (tensor_checks.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "dtype_convert.h"
#include "kernel_util.h"

namespace pteron::kern {

// A Python Scalar argument, with integers kept exact.
struct Scalar {
  ScalarKind kind = ScalarKind::Int;
  int64_t i = 0;
  double d = 0;

  // Conversion as PyTorch does for a wrapped-number operand (integers wrap).
  template <typename C>
  C to() const {
    if (kind == ScalarKind::Float) return convert<C>(d);
    return convert<C>(i);
  }
  // True if the value fits C (PyTorch's checked Scalar::to<C>; fractions
  // are fine, only the range is checked).
  template <typename C>
  bool fits() const {
    if constexpr (std::is_same_v<C, bool> || is_float_type_v<C>) {
      return true;
    } else {
      if (kind == ScalarKind::Float) {
        if (std::isnan(d)) return false;
        return !(d < static_cast<double>(std::numeric_limits<C>::min())) &&
               !(d > static_cast<double>(std::numeric_limits<C>::max()));
      }
      if (kind == ScalarKind::Bool) return true;
      if constexpr (std::is_signed_v<C>) {
        return i >= static_cast<int64_t>(std::numeric_limits<C>::min()) &&
               i <= static_cast<int64_t>(std::numeric_limits<C>::max());
      } else {
        return i >= 0 &&
               static_cast<uint64_t>(i) <= static_cast<uint64_t>(std::numeric_limits<C>::max());
      }
    }
  }
};

inline int32_t read_scalar(const Args& a, size_t i, const char* name, Scalar* s) {
  if (i < a.n) {
    const pteron_value* v = a.v[i];
    switch (v->tag) {
      case PTERON_VALUE_INT:
        s->kind = ScalarKind::Int;
        s->i = v->u.i;
        s->d = static_cast<double>(v->u.i);
        return PTERON_OK;
      case PTERON_VALUE_BOOL:
        s->kind = ScalarKind::Bool;
        s->i = v->u.b != 0;
        s->d = static_cast<double>(s->i);
        return PTERON_OK;
      case PTERON_VALUE_DOUBLE:
        s->kind = ScalarKind::Float;
        s->d = v->u.d;
        s->i = 0;
        return PTERON_OK;
      default: break;
    }
  }
  return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('%s') is not a scalar", a.op,
              i, name);
}

// Scalar or None (`present` tells which).
inline int32_t read_opt_scalar(const Args& a, size_t i, const char* name, Scalar* s,
                               bool* present) {
  if (a.is_none(i)) {
    *present = false;
    return PTERON_OK;
  }
  *present = true;
  return read_scalar(a, i, name, s);
}

// ScalarType? argument: -1 for None, else a dtype the portable kernels know
// (a complex one is refused by name: no kernel that reads a dtype argument
// makes complex tensors).
inline int32_t read_opt_dtype(const Args& a, size_t i, const char* name, int32_t* out) {
  if (a.is_none(i)) {
    *out = -1;
    return PTERON_OK;
  }
  if (i < a.n && a.v[i]->tag == PTERON_VALUE_INT) {
    int64_t d = a.v[i]->u.i;
    if (d >= 0 && d <= 64 && is_complex(static_cast<int32_t>(d)))
      return unsupported_dtype(a.ctx, a.op, name, static_cast<int32_t>(d));
    if (d >= 0 && d <= 64 && dtype_size(static_cast<int32_t>(d)) != 0) {
      *out = static_cast<int32_t>(d);
      return PTERON_OK;
    }
    return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: argument %zu ('%s') is not a valid dtype (%lld)", a.op, i, name,
                static_cast<long long>(d));
  }
  return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('%s') is not a dtype or None",
              a.op, i, name);
}

// str? argument: sets *present and copies at most cap-1 chars into buf.
// A string longer than that is reported as such (it matches no keyword).
inline int32_t read_opt_string(const Args& a, size_t i, const char* name, char* buf, size_t cap,
                               bool* present) {
  if (a.is_none(i)) {
    *present = false;
    buf[0] = 0;
    return PTERON_OK;
  }
  if (i < a.n && a.v[i]->tag == PTERON_VALUE_STRING) {
    *present = true;
    const char* s = a.v[i]->u.string.data;
    size_t n = a.v[i]->u.string.size;
    if (!s) n = 0;
    if (n >= cap) n = cap - 1;
    if (n) std::memcpy(buf, s, n);
    buf[n] = 0;
    // embedded NULs or truncation make it unequal to every keyword
    if (a.v[i]->u.string.size != n || std::strlen(buf) != n) buf[0] = '?', buf[1] = 0;
    return PTERON_OK;
  }
  return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
              "%s: argument %zu ('%s') is not a string or None", a.op, i, name);
}

// clamp.out's `Scalar? min, Scalar? max` (arguments 1 and 2): at least one
// is given, else INVALID_ARGUMENT.
inline int32_t read_clamp_bounds(const Args& a, Scalar* lo, bool* has_lo, Scalar* hi,
                                 bool* has_hi) {
  PTERON_CHECK_OK(read_opt_scalar(a, 1, "min", lo, has_lo));
  PTERON_CHECK_OK(read_opt_scalar(a, 2, "max", hi, has_hi));
  if (!*has_lo && !*has_hi)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: at least one of 'min' or 'max' must not be None", a.op);
  return PTERON_OK;
}

// gelu's `str approximate='none'` argument: *tanh true for "tanh", false for
// "none" (or None); any other string is INVALID_ARGUMENT.
inline int32_t read_gelu_approximate(const Args& a, size_t i, bool* tanh) {
  char mode[16];
  bool present = false;
  PTERON_CHECK_OK(read_opt_string(a, i, "approximate", mode, sizeof mode, &present));
  if (!present || std::strcmp(mode, "none") == 0)
    *tanh = false;
  else if (std::strcmp(mode, "tanh") == 0)
    *tanh = true;
  else
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: approximate must be 'none' or 'tanh', got '%s'", a.op, mode);
  return PTERON_OK;
}

// int[]? argument (a bare int counts as a one-element list, stored in
// *single). *present is false for None.
inline int32_t read_opt_int_list(const Args& a, size_t i, const char* name, int64_t* single,
                                 const int64_t** data, size_t* size, bool* present) {
  if (a.is_none(i)) {
    *present = false;
    *data = nullptr;
    *size = 0;
    return PTERON_OK;
  }
  *present = true;
  if (i < a.n && a.v[i]->tag == PTERON_VALUE_INT) {
    *single = a.v[i]->u.i;
    *data = single;
    *size = 1;
    return PTERON_OK;
  }
  PTERON_CHECK_OK(a.int_list(i, name, data, size));
  if (*size > 0 && !*data)
    return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: argument %zu ('%s') is an int list without data", a.op, i, name);
  return PTERON_OK;
}

// An int list, or None (then *present is false).
inline int32_t opt_int_list(const Args& a, size_t i, const char* name, const int64_t** data,
                            size_t* size, bool* present) {
  if (a.is_none(i)) {
    *data = nullptr;
    *size = 0;
    *present = false;
    return PTERON_OK;
  }
  *present = true;
  return a.int_list(i, name, data, size);
}

// An int, or None (then *present is false).
inline int32_t opt_integer(const Args& a, size_t i, const char* name, int64_t* out, bool* present) {
  if (a.is_none(i)) {
    *present = false;
    *out = 0;
    return PTERON_OK;
  }
  *present = true;
  return a.integer(i, name, out);
}

// MemoryFormat? arguments: the out tensor's declared dim order decides the
// layout, so the value only has to be well-formed.
inline int32_t memory_format(const Args& a, size_t i) {
  if (a.is_none(i)) return PTERON_OK;
  int64_t mf = 0;
  return a.integer(i, "memory_format", &mf);
}

// Per-spatial-dim int parameters (stride, padding, ...): a list of one value
// (applied to every spatial dim) or of exactly `count` values, ATen's rule
// for convolution and pooling. Each value must be >= min_value.
inline int32_t spatial_params(const Args& a, size_t i, const char* name, int32_t count,
                              int64_t min_value, int64_t* out) {
  const int64_t* data = nullptr;
  size_t size = 0;
  PTERON_CHECK_OK(a.int_list(i, name, &data, &size));
  if (size != 1 && size != static_cast<size_t>(count))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: expected %s to be a single integer value or a list of %d "
                "values, got %zu values",
                a.op, name, (int)count, size);
  for (int32_t k = 0; k < count; ++k) {
    int64_t v = data[size == 1 ? 0 : k];
    // The upper limit keeps the shape arithmetic far from int64 overflow.
    if (v < min_value || v > (int64_t{1} << 31))
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: %s value %lld is out of range (expected %lld .. %lld)", a.op, name,
                  (long long)v, (long long)min_value, (long long)(int64_t{1} << 31));
    out[k] = v;
  }
  return PTERON_OK;
}

}  // namespace pteron::kern
