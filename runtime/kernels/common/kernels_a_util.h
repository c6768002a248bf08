// kernels_a_util.h - helpers for the portable arithmetic, activation,
// comparison, matmul and reduction kernels (binary.cpp, matmul.cpp,
// activation.cpp, reduce.cpp, compare.cpp). Header-only and private to the
// kernel library; everything lives in pteron::kern::ka so it cannot clash
// with other kernel sources linked into the same library.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernel_util.h"

namespace pteron::kern::ka {

// ---- conversions ----------------------------------------------------------

// Converts without undefined behaviour: bool from nonzero, float -> integer
// truncates toward zero and saturates out-of-range values (NaN becomes 0;
// PyTorch leaves those cases unspecified), integer -> integer wraps.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (std::isnan(v)) return To(0);
    constexpr int digits = std::numeric_limits<To>::digits;  // value bits
    const double hi = std::ldexp(1.0, digits);                // max + 1
    const double lo = std::is_signed_v<To> ? -hi : 0.0;       // min
    const double d = static_cast<double>(v);
    if (d >= hi) return std::numeric_limits<To>::max();
    if (d <= lo) return std::numeric_limits<To>::min();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

// Reads element i of a tensor storage of dtype `dt` converted to C.
template <typename C>
inline C load(const void* p, int32_t dt, int64_t i) {
  switch (dt) {
    case PTERON_DTYPE_UINT8: return convert<C>(static_cast<const uint8_t*>(p)[i]);
    case PTERON_DTYPE_INT8: return convert<C>(static_cast<const int8_t*>(p)[i]);
    case PTERON_DTYPE_INT16: return convert<C>(static_cast<const int16_t*>(p)[i]);
    case PTERON_DTYPE_INT32: return convert<C>(static_cast<const int32_t*>(p)[i]);
    case PTERON_DTYPE_INT64: return convert<C>(static_cast<const int64_t*>(p)[i]);
    case PTERON_DTYPE_FLOAT32: return convert<C>(static_cast<const float*>(p)[i]);
    case PTERON_DTYPE_FLOAT64: return convert<C>(static_cast<const double*>(p)[i]);
    case PTERON_DTYPE_BOOL: {
      uint8_t b;  // any nonzero byte is true; never read a bool object
      std::memcpy(&b, static_cast<const uint8_t*>(p) + i, 1);
      return convert<C>(b != 0);
    }
    default: return C(0);
  }
}

// Writes v (of type C) as element i of a storage of dtype `dt`.
template <typename C>
inline void store(void* p, int32_t dt, int64_t i, C v) {
  switch (dt) {
    case PTERON_DTYPE_UINT8: static_cast<uint8_t*>(p)[i] = convert<uint8_t>(v); break;
    case PTERON_DTYPE_INT8: static_cast<int8_t*>(p)[i] = convert<int8_t>(v); break;
    case PTERON_DTYPE_INT16: static_cast<int16_t*>(p)[i] = convert<int16_t>(v); break;
    case PTERON_DTYPE_INT32: static_cast<int32_t*>(p)[i] = convert<int32_t>(v); break;
    case PTERON_DTYPE_INT64: static_cast<int64_t*>(p)[i] = convert<int64_t>(v); break;
    case PTERON_DTYPE_FLOAT32: static_cast<float*>(p)[i] = convert<float>(v); break;
    case PTERON_DTYPE_FLOAT64: static_cast<double*>(p)[i] = convert<double>(v); break;
    case PTERON_DTYPE_BOOL: static_cast<uint8_t*>(p)[i] = convert<bool>(v) ? 1 : 0; break;
    default: break;
  }
}

// Wrapping integer arithmetic (no signed-overflow UB).
template <typename T>
inline T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename T>
inline T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
template <typename T>
inline T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// ---- dtype rules ----------------------------------------------------------

// PyTorch's canCast: no floating -> integral, no non-bool -> bool.
inline bool can_cast(int32_t from, int32_t to) {
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != PTERON_DTYPE_BOOL && to == PTERON_DTYPE_BOOL) return false;
  return true;
}

// PyTorch's result_type over tensors and Python scalars: dimensioned tensors
// decide the dtype, zero-dim tensors and scalars only lift the category.
struct ResultType {
  static constexpr int32_t kUndef = -1;
  int32_t dim_result = kUndef, zero_result = kUndef, wrapped_result = kUndef;

  static int32_t promote_skip(int32_t a, int32_t b) {
    if (a == kUndef) return b;
    if (b == kUndef) return a;
    return promote_types(a, b);
  }
  static int32_t combine(int32_t higher, int32_t lower) {
    if (higher != kUndef && is_floating(higher)) return higher;
    if (higher == PTERON_DTYPE_BOOL || (lower != kUndef && is_floating(lower)))
      return promote_skip(higher, lower);
    if (higher != kUndef) return higher;
    return lower;
  }
  void add_tensor(const pteron_tensor* t) {
    if (t->dim == 0) zero_result = promote_skip(zero_result, t->dtype);
    else dim_result = promote_skip(dim_result, t->dtype);
  }
  void add_scalar(ScalarKind k) {
    int32_t d = k == ScalarKind::Float ? PTERON_DTYPE_FLOAT32
              : k == ScalarKind::Int   ? PTERON_DTYPE_INT64
                                       : PTERON_DTYPE_BOOL;
    wrapped_result = promote_skip(wrapped_result, d);
  }
  int32_t get() const {
    return combine(dim_result, combine(zero_result, wrapped_result));
  }
};

// ---- scalars --------------------------------------------------------------

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
    if constexpr (std::is_same_v<C, bool> || std::is_floating_point_v<C>) {
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
        return i >= 0 && static_cast<uint64_t>(i) <=
                             static_cast<uint64_t>(std::numeric_limits<C>::max());
      }
    }
  }
};

inline int32_t read_scalar(const Args& a, size_t i, const char* name, Scalar* s) {
  if (i < a.n) {
    const pteron_value* v = a.v[i];
    switch (v->tag) {
      case PTERON_VALUE_INT: s->kind = ScalarKind::Int; s->i = v->u.i;
        s->d = static_cast<double>(v->u.i); return PTERON_OK;
      case PTERON_VALUE_BOOL: s->kind = ScalarKind::Bool; s->i = v->u.b != 0;
        s->d = static_cast<double>(s->i); return PTERON_OK;
      case PTERON_VALUE_DOUBLE: s->kind = ScalarKind::Float; s->d = v->u.d;
        s->i = 0; return PTERON_OK;
      default: break;
    }
  }
  return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
              "%s: argument %zu ('%s') is not a scalar", a.op, i, name);
}

// Scalar or None (`present` tells which).
inline int32_t read_opt_scalar(const Args& a, size_t i, const char* name,
                               Scalar* s, bool* present) {
  if (a.is_none(i)) { *present = false; return PTERON_OK; }
  *present = true;
  return read_scalar(a, i, name, s);
}

// ScalarType? argument: -1 for None, else a dtype the portable kernels know.
inline int32_t read_opt_dtype(const Args& a, size_t i, const char* name,
                              int32_t* out) {
  if (a.is_none(i)) { *out = -1; return PTERON_OK; }
  if (i < a.n && a.v[i]->tag == PTERON_VALUE_INT) {
    int64_t d = a.v[i]->u.i;
    if (d >= 0 && d <= 64 && dtype_size(static_cast<int32_t>(d)) != 0) {
      *out = static_cast<int32_t>(d);
      return PTERON_OK;
    }
    return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: argument %zu ('%s') is not a valid dtype (%lld)", a.op, i,
                name, static_cast<long long>(d));
  }
  return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM,
              "%s: argument %zu ('%s') is not a dtype or None", a.op, i, name);
}

// str? argument: sets *present and copies at most cap-1 chars into buf.
// A string longer than that is reported as such (it matches no keyword).
inline int32_t read_opt_string(const Args& a, size_t i, const char* name,
                               char* buf, size_t cap, bool* present) {
  if (a.is_none(i)) { *present = false; buf[0] = 0; return PTERON_OK; }
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

// int[]? argument (a bare int counts as a one-element list, stored in
// *single). *present is false for None.
inline int32_t read_opt_int_list(const Args& a, size_t i, const char* name,
                                 int64_t* single, const int64_t** data,
                                 size_t* size, bool* present) {
  if (a.is_none(i)) { *present = false; *data = nullptr; *size = 0; return PTERON_OK; }
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

// Element i of a typed storage; bool storage is read as a byte.
template <typename T>
inline T load_typed(const void* p, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) {
    uint8_t b;
    std::memcpy(&b, static_cast<const uint8_t*>(p) + i, 1);
    return b != 0;
  } else {
    return static_cast<const T*>(p)[i];
  }
}

// ---- tensor validation ----------------------------------------------------

// Checks that a tensor's metadata is self-consistent so no kernel can read or
// write outside its storage: rank in range, sizes >= 0, no size overflow,
// strides in bounds of numel, storage large enough and present.
inline int32_t check_tensor(pteron_kernel_context* ctx, const char* op,
                            const char* name, const pteron_tensor* t) {
  if (t->dim < 0 || t->dim > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: tensor '%s' has invalid rank %d", op, name, t->dim);
  const size_t es = dtype_size(t->dtype);
  int64_t n = 1;
  for (int32_t i = 0; i < t->dim; ++i) {
    int64_t s = t->sizes[i];
    if (s < 0)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s: tensor '%s' has negative size %lld at dim %d", op, name,
                  static_cast<long long>(s), i);
    if (s != 0 && n > INT64_MAX / 16 / s)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s: tensor '%s' is too large", op, name);
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
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: tensor '%s' strides exceed its size", op, name);
  if (es != 0) {
    if (!t->data || t->capacity_bytes < 0 ||
        static_cast<uint64_t>(n) * es > static_cast<uint64_t>(t->capacity_bytes))
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s: tensor '%s' has no storage for %lld elements", op, name,
                  static_cast<long long>(n));
  }
  return PTERON_OK;
}

// Checks that `d` is one of the dtypes these kernels compute in.
inline int32_t check_supported(pteron_kernel_context* ctx, const char* op,
                               const char* name, int32_t d) {
  if (!is_supported(d)) return unsupported_dtype(ctx, op, name, d);
  return PTERON_OK;
}

// Validates sizes, resizes `t` and re-validates it.
inline int32_t resize_out(pteron_kernel_context* ctx, const char* op,
                          const char* name, pteron_tensor* t,
                          const int64_t* sizes, int32_t dim) {
  if (dim < 0 || dim > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: output rank %d too large",
                op, dim);
  int64_t n = 1;
  for (int32_t i = 0; i < dim; ++i) {
    if (sizes[i] < 0)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: negative output size %lld", op,
                  static_cast<long long>(sizes[i]));
    if (sizes[i] != 0 && n > INT64_MAX / 16 / sizes[i])
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: output '%s' would be too large", op, name);
    n *= sizes[i];
  }
  PTERON_CHECK_OK(pteron_tensor_resize(ctx, t, sizes, dim));
  return check_tensor(ctx, op, name, t);
}

// Refuses an out argument that is the same tensor as an input, for kernels
// whose out shape differs from that input's (a resize would change the
// input's sizes under the kernel) or that read inputs after writing out.
inline int32_t reject_alias(pteron_kernel_context* ctx, const char* op,
                            const char* out_name, const pteron_tensor* out,
                            const pteron_tensor* a, const pteron_tensor* b = nullptr,
                            const pteron_tensor* c = nullptr) {
  if (out == a || (b && out == b) || (c && out == c))
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: out argument '%s' is also an input", op, out_name);
  return PTERON_OK;
}

inline int32_t cast_error(pteron_kernel_context* ctx, const char* op,
                          int32_t from, int32_t to) {
  return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
              "%s: result type %s can't be cast to the out dtype %s", op,
              dtype_name(from), dtype_name(to));
}

// ---- element-wise maps ------------------------------------------------------

template <typename T> constexpr int32_t dtype_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return PTERON_DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, int8_t>) return PTERON_DTYPE_INT8;
  else if constexpr (std::is_same_v<T, int16_t>) return PTERON_DTYPE_INT16;
  else if constexpr (std::is_same_v<T, int32_t>) return PTERON_DTYPE_INT32;
  else if constexpr (std::is_same_v<T, int64_t>) return PTERON_DTYPE_INT64;
  else if constexpr (std::is_same_v<T, float>) return PTERON_DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>) return PTERON_DTYPE_FLOAT64;
  else if constexpr (std::is_same_v<T, bool>) return PTERON_DTYPE_BOOL;
  else return -1;
}

// out = f(in_0, ..., in_{N-1}) element-wise with broadcasting (out already
// resized to the broadcast shape). Inputs are read converted to C, f returns
// R, the result is converted to out's dtype. When every dtype already matches
// the typed pointers are used directly. bool inputs always go through load()
// so a stray byte value in a bool tensor is never read as a bool object.
template <typename C, typename R, size_t N, typename F>
inline void map_elements(const pteron_tensor* const (&ins)[N], pteron_tensor* out,
                         F&& f) {
  static_assert(N >= 1 && N <= 3, "1 to 3 inputs");
  bool direct = !std::is_same_v<C, bool> && out->dtype == dtype_of<R>();
  for (size_t k = 0; k < N; ++k) direct = direct && ins[k]->dtype == dtype_of<C>();
  if (direct) {
    R* o = static_cast<R*>(out->data);
    const C* p[N];
    for (size_t k = 0; k < N; ++k) p[k] = static_cast<const C*>(ins[k]->data);
    if constexpr (N == 1)
      for_each_broadcast(out, ins, [&](int64_t oi, int64_t a) { o[oi] = f(p[0][a]); });
    else if constexpr (N == 2)
      for_each_broadcast(out, ins, [&](int64_t oi, int64_t a, int64_t b) {
        o[oi] = f(p[0][a], p[1][b]);
      });
    else
      for_each_broadcast(out, ins, [&](int64_t oi, int64_t a, int64_t b, int64_t c) {
        o[oi] = f(p[0][a], p[1][b], p[2][c]);
      });
    return;
  }
  void* od = out->data;
  const int32_t odt = out->dtype;
  const void* p[N];
  int32_t dt[N];
  for (size_t k = 0; k < N; ++k) { p[k] = ins[k]->data; dt[k] = ins[k]->dtype; }
  if constexpr (N == 1)
    for_each_broadcast(out, ins, [&](int64_t oi, int64_t a) {
      store<R>(od, odt, oi, f(load<C>(p[0], dt[0], a)));
    });
  else if constexpr (N == 2)
    for_each_broadcast(out, ins, [&](int64_t oi, int64_t a, int64_t b) {
      store<R>(od, odt, oi, f(load<C>(p[0], dt[0], a), load<C>(p[1], dt[1], b)));
    });
  else
    for_each_broadcast(out, ins, [&](int64_t oi, int64_t a, int64_t b, int64_t c) {
      store<R>(od, odt, oi,
               f(load<C>(p[0], dt[0], a), load<C>(p[1], dt[1], b),
                 load<C>(p[2], dt[2], c)));
    });
}

// Broadcast shape of up to three tensors (nullptr entries are skipped).
inline bool broadcast_shape_n(const pteron_tensor* const* ts, size_t n,
                              int64_t* out, int32_t* out_dim) {
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

inline int32_t broadcast_error(pteron_kernel_context* ctx, const char* op,
                               const pteron_tensor* a, const pteron_tensor* b) {
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
  return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
              "%s: shapes %s and %s are not broadcastable", op, sa, sb);
}

// ---- dim lists and reductions ---------------------------------------------

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
inline int32_t make_reduce_plan(pteron_kernel_context* ctx, const char* op,
                                const pteron_tensor* in, const int64_t* dims,
                                size_t ndims, bool empty_means_all,
                                bool keepdim, ReducePlan* p) {
  p->in_dim = in->dim;
  p->keepdim = keepdim;
  for (int32_t i = 0; i < PTERON_MAX_DIM; ++i) p->reduced[i] = false;
  if (!dims || (ndims == 0 && empty_means_all)) {
    for (int32_t i = 0; i < in->dim; ++i) p->reduced[i] = true;
  } else {
    if (ndims > PTERON_MAX_DIM)
      return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: too many dims (%zu)",
                  op, ndims);
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
                      "%s: dim %lld appears multiple times in the list of dims",
                      op, static_cast<long long>(d));
        seen0 = true;
        continue;
      }
      if (p->reduced[d])
        return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: dim %lld appears multiple times in the list of dims",
                    op, static_cast<long long>(d));
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

  ReduceIter(const pteron_tensor* in_, const pteron_tensor* out_,
             const ReducePlan* p_)
      : in(in_), out(out_), p(p_) {
    for (int32_t i = 0; i < in->dim; ++i) {
      if (p->reduced[i]) rd[nr++] = i;
      else kd[nk++] = i;
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

// Iterates the positions of `t` along every dim but `dim`, calling
// f(off_a, off_b) with the base offsets in two tensors of the same shape
// (a and b may have different dim orders). Each call then walks `dim` with
// a->strides[dim] / b->strides[dim].
template <typename F>
inline void for_each_lane(const pteron_tensor* a, const pteron_tensor* b,
                          int32_t dim, F&& f) {
  int64_t total = 1;
  for (int32_t i = 0; i < a->dim; ++i)
    if (i != dim) total *= a->sizes[i];
  if (total == 0) return;
  int64_t idx[PTERON_MAX_DIM] = {0};
  int64_t oa = 0, ob = 0;
  for (int64_t n = 0; n < total; ++n) {
    f(oa, ob);
    for (int32_t i = a->dim - 1; i >= 0; --i) {
      if (i == dim) continue;
      ++idx[i];
      oa += a->strides[i];
      ob += b->strides[i];
      if (idx[i] < a->sizes[i]) break;
      oa -= a->strides[i] * idx[i];
      ob -= b->strides[i] * idx[i];
      idx[i] = 0;
    }
  }
}

// ---- binary arithmetic (add, sub, mul, div: Tensor or Scalar other) ----

// The operands of add/sub/mul/div(.Scalar)(.out): self, other (a tensor, or
// other_s for the .Scalar overloads), alpha (Int 1 when absent), out.
struct BinaryOperands {
  pteron_tensor *self = nullptr, *other = nullptr, *out = nullptr;
  Scalar other_s, alpha;
};

// Reads self (argument 0), other (1: tensor, or Scalar when scalar_other)
// and alpha (2, when has_alpha). `out` is left to the caller: its index
// depends on the operator's further arguments (rounding_mode).
inline int32_t read_binary_inputs(const Args& a, bool scalar_other, bool has_alpha,
                                  BinaryOperands* b) {
  b->alpha.kind = ScalarKind::Int;
  b->alpha.i = 1;
  b->alpha.d = 1;
  PTERON_CHECK_OK(a.tensor(0, "self", &b->self));
  if (scalar_other) PTERON_CHECK_OK(read_scalar(a, 1, "other", &b->other_s));
  else PTERON_CHECK_OK(a.tensor(1, "other", &b->other));
  if (has_alpha) PTERON_CHECK_OK(read_scalar(a, 2, "alpha", &b->alpha));
  return PTERON_OK;
}

// Checks the dtypes and storage of self, other and out, and gives the
// computation dtype: PyTorch's result_type of self and other (a Scalar other
// only by its kind).
inline int32_t binary_result_type(pteron_kernel_context* ctx, const char* op,
                                  const BinaryOperands& b, int32_t* ct) {
  PTERON_CHECK_OK(check_supported(ctx, op, "self", b.self->dtype));
  if (b.other) PTERON_CHECK_OK(check_supported(ctx, op, "other", b.other->dtype));
  PTERON_CHECK_OK(check_supported(ctx, op, "out", b.out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", b.self));
  if (b.other) PTERON_CHECK_OK(check_tensor(ctx, op, "other", b.other));
  ResultType rt;
  rt.add_tensor(b.self);
  if (b.other) rt.add_tensor(b.other);
  else rt.add_scalar(b.other_s.kind);
  *ct = rt.get();
  return PTERON_OK;
}

// sub refuses bool operands, as PyTorch does.
inline int32_t reject_bool_subtraction(pteron_kernel_context* ctx, const char* op,
                                       const BinaryOperands& b) {
  const bool other_bool =
      b.other ? b.other->dtype == PTERON_DTYPE_BOOL : b.other_s.kind == ScalarKind::Bool;
  if (b.self->dtype == PTERON_DTYPE_BOOL || other_bool)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: subtraction with a bool operand is not supported "
                "(use logical_xor / logical_not)", op);
  return PTERON_OK;
}

// Resizes out to the broadcast shape of self and other (self's shape for a
// Scalar other); PTERON_ERROR_SHAPE_MISMATCH naming both shapes otherwise.
inline int32_t resize_binary_out(pteron_kernel_context* ctx, const char* op,
                                 const BinaryOperands& b) {
  int64_t shape[PTERON_MAX_DIM];
  int32_t nd = 0;
  if (b.other) {
    if (!broadcast_shape(b.self, b.other, shape, &nd)) return broadcast_error(ctx, op, b.self, b.other);
  } else {
    nd = b.self->dim;
    for (int32_t i = 0; i < nd; ++i) shape[i] = b.self->sizes[i];
  }
  return resize_out(ctx, op, "out", b.out, shape, nd);
}

// Softmax (log=false) or log-softmax (log=true) of one lane of `len`
// elements, x and y strided by xs / ys elements; y may alias x (every x[i]
// is read before y[i] is written). Computed in double from the lane's max,
// so exp never overflows; a NaN in the lane makes the whole lane NaN, as in
// PyTorch. Used by kernels_portable and kernels_optimized.
template <typename C>
void softmax_lane(const C* x, int64_t xs, C* y, int64_t ys, int64_t len, bool log) {
  C mx = x[0];
  for (int64_t i = 1; i < len; ++i) {
    const C v = x[i * xs];
    if (v > mx || std::isnan(v)) mx = v;
    if (std::isnan(mx)) break;
  }
  double sum = 0;
  for (int64_t i = 0; i < len; ++i) sum += std::exp(double(x[i * xs]) - double(mx));
  if (log) {
    const double ls = std::log(sum);
    for (int64_t i = 0; i < len; ++i)
      y[i * ys] = static_cast<C>(double(x[i * xs]) - double(mx) - ls);
  } else {
    const double inv = 1.0 / sum;
    for (int64_t i = 0; i < len; ++i)
      y[i * ys] = static_cast<C>(std::exp(double(x[i * xs]) - double(mx)) * inv);
  }
}

}  // namespace pteron::kern::ka
