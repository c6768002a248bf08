// SPDX-License-Identifier: BSD-3-Clause
// kernel_util.h - the base of the kernel helper library shared by pteron's
// kernel libraries (header-only, private: compiled into each kernel library,
// never exported): errors, dtype rules, argument access (Args), broadcast
// iteration and registration. The other headers here build on it, one topic
// each:
//   half.h             Half and BFloat16 (float16 / bfloat16 storage types,
//                      round-to-nearest-even conversions)
//   dtype_convert.h    element conversion (PyTorch's float -> int rule),
//                      can_cast, result_type, typed loads and stores
//   tensor_checks.h    check_tensor, resize_out, aliasing, broadcast shapes
//   arg_reading.h      Scalars, optional ints/lists/dtypes/strings, spatial
//                      parameters
//   strided_views.h    views, walkers, strided copies, per-lane iteration,
//                      slice bounds, permute_copy's arguments
//   elementwise.h      element-wise maps, the arguments of unary and binary
//                      operators (alpha, rounding_mode), floor division
//   reduction_plan.h   reduction dims, output shape and iteration
//   softmax.h          softmax argument checks and lanes
//   conv_checks.h, matmul_checks.h   convolution / matrix-product arguments
//
// Conventions every kernel follows:
//  - args arrive in the operator schema's order, out argument(s) last.
//  - the kernel checks arity and tags, resizes its out tensor(s) with
//    pteron_tensor_resize(), and writes them; it never allocates memory that
//    outlives the call (scratch comes from pteron_kernel_scratch()).
//  - dtype promotion follows PyTorch's promote_types / result_type rules
//    (torch/_prims_common and c10/core/ScalarType.h describe them): bool <
//    integral < floating; a Python scalar only lifts the category.
#pragma once

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "half.h"
#include "pteron/kernel.h"

namespace pteron::kern {

// ---- errors ---------------------------------------------------------------

inline int32_t fail(pteron_kernel_context* ctx, int32_t code, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return pteron_kernel_fail(ctx, code, buf);
}

#define PTERON_CHECK_OK(expr)                       \
  do {                                              \
    int32_t pteron_rc_ = (expr);                    \
    if (pteron_rc_ != PTERON_OK) return pteron_rc_; \
  } while (0)

// ---- dtypes ---------------------------------------------------------------

// The runtime's one dtype-name table (pteron/kernel.h).
inline const char* dtype_name(int32_t d) { return pteron_dtype_name(d); }

inline size_t dtype_size(int32_t d) {
  switch (d) {
    case PTERON_DTYPE_UINT8:
    case PTERON_DTYPE_INT8:
    case PTERON_DTYPE_BOOL:
    case PTERON_DTYPE_QINT8:
    case PTERON_DTYPE_QUINT8: return 1;
    case PTERON_DTYPE_INT16:
    case PTERON_DTYPE_FLOAT16:
    case PTERON_DTYPE_BFLOAT16:
    case PTERON_DTYPE_UINT16: return 2;
    case PTERON_DTYPE_INT32:
    case PTERON_DTYPE_FLOAT32:
    case PTERON_DTYPE_QINT32:
    case PTERON_DTYPE_UINT32: return 4;
    case PTERON_DTYPE_INT64:
    case PTERON_DTYPE_FLOAT64:
    case PTERON_DTYPE_COMPLEX64:
    case PTERON_DTYPE_UINT64: return 8;
    case PTERON_DTYPE_COMPLEX128: return 16;
    default: return 0;
  }
}

// complex64 / complex128: storage dtypes (pteron/types.h). check_tensor
// (tensor_checks.h) refuses them by name; a kernel that takes them checks its
// complex arguments with check_tensor_complex instead.
inline bool is_complex(int32_t d) {
  return d == PTERON_DTYPE_COMPLEX64 || d == PTERON_DTYPE_COMPLEX128;
}

inline bool is_floating(int32_t d) {
  return d == PTERON_DTYPE_FLOAT32 || d == PTERON_DTYPE_FLOAT64 || d == PTERON_DTYPE_FLOAT16 ||
         d == PTERON_DTYPE_BFLOAT16;
}
inline bool is_integral(int32_t d, bool include_bool) {
  switch (d) {
    case PTERON_DTYPE_UINT8:
    case PTERON_DTYPE_INT8:
    case PTERON_DTYPE_INT16:
    case PTERON_DTYPE_INT32:
    case PTERON_DTYPE_INT64: return true;
    case PTERON_DTYPE_BOOL: return include_bool;
    default: return false;
  }
}

// The dtypes the portable kernels compute in.
inline bool is_supported(int32_t d) {
  switch (d) {
    case PTERON_DTYPE_UINT8:
    case PTERON_DTYPE_INT8:
    case PTERON_DTYPE_INT16:
    case PTERON_DTYPE_INT32:
    case PTERON_DTYPE_INT64:
    case PTERON_DTYPE_FLOAT32:
    case PTERON_DTYPE_FLOAT64:
    case PTERON_DTYPE_BOOL: return true;
    default: return false;
  }
}

// is_supported() and the two 16-bit floating dtypes (float16, bfloat16): the
// dtypes of a kernel that opted in to them (see dispatch_half below).
inline bool is_supported_half(int32_t d) {
  return is_supported(d) || d == PTERON_DTYPE_FLOAT16 || d == PTERON_DTYPE_BFLOAT16;
}

inline int32_t unsupported_dtype(pteron_kernel_context* ctx, const char* op, const char* arg,
                                 int32_t d) {
  return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "unsupported dtype %s for argument '%s' of %s",
              dtype_name(d), arg, op);
}

// PyTorch's promote_types over the supported dtypes.
inline int32_t promote_types(int32_t a, int32_t b) {
  if (a == b) return a;
  if (a == PTERON_DTYPE_BOOL) return b;
  if (b == PTERON_DTYPE_BOOL) return a;
  if (is_floating(a) || is_floating(b)) {
    if (is_floating(a) && is_floating(b)) {
      if (dtype_size(a) == 2 && dtype_size(b) == 2) return PTERON_DTYPE_FLOAT32;  // f16, bf16
      return dtype_size(a) >= dtype_size(b) ? a : b;
    }
    return is_floating(a) ? a : b;
  }
  // both integral, different
  if (a == PTERON_DTYPE_UINT8 || b == PTERON_DTYPE_UINT8) {
    int32_t o = a == PTERON_DTYPE_UINT8 ? b : a;
    if (o == PTERON_DTYPE_INT8) return PTERON_DTYPE_INT16;
    return o;  // int16/int32/int64 hold every uint8
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

// Category of a Python scalar argument.
enum class ScalarKind { Bool, Int, Float };

// result_type(tensor, scalar): the scalar only lifts the category.
inline int32_t promote_with_scalar(int32_t t, ScalarKind s) {
  if (s == ScalarKind::Float && !is_floating(t)) return PTERON_DTYPE_FLOAT32;
  if (s == ScalarKind::Int && t == PTERON_DTYPE_BOOL) return PTERON_DTYPE_INT64;
  return t;
}

// Calls f(T{}) with T the C++ type of dtype d (supported dtypes only).
// Returns false if d is not supported.
template <typename F>
inline bool dispatch(int32_t d, F&& f) {
  switch (d) {
    case PTERON_DTYPE_UINT8: f(uint8_t{}); return true;
    case PTERON_DTYPE_INT8: f(int8_t{}); return true;
    case PTERON_DTYPE_INT16: f(int16_t{}); return true;
    case PTERON_DTYPE_INT32: f(int32_t{}); return true;
    case PTERON_DTYPE_INT64: f(int64_t{}); return true;
    case PTERON_DTYPE_FLOAT32: f(float{}); return true;
    case PTERON_DTYPE_FLOAT64: f(double{}); return true;
    case PTERON_DTYPE_BOOL: f(bool{}); return true;
    default: return false;
  }
}

// Floating dtypes only (float32, float64).
template <typename F>
inline bool dispatch_float(int32_t d, F&& f) {
  switch (d) {
    case PTERON_DTYPE_FLOAT32: f(float{}); return true;
    case PTERON_DTYPE_FLOAT64: f(double{}); return true;
    default: return false;
  }
}

// The 16-bit floating dtypes, opted in per kernel. A kernel accepts them by
// checking its dtypes with is_supported_half() / check_supported_half()
// (tensor_checks.h) instead of is_supported() / check_supported(), and by
// dispatching with one of:
//   dispatch_half(d, f)        every supported dtype and Half / BFloat16, as
//                              storage types (copies, selections, kernels that
//                              read through load_typed and convert)
//   dispatch_compute(d, f)     the same dtypes, the 16-bit ones as float: the
//                              type to compute in when the kernel reads and
//                              writes through load()/store() (map_elements)
//   dispatch_float_half(d, f)  float32, float64, Half, BFloat16 (storage)
// A kernel that keeps dispatch()/dispatch_float() must keep refusing them.
template <typename F>
inline bool dispatch_half(int32_t d, F&& f) {
  switch (d) {
    case PTERON_DTYPE_FLOAT16: f(Half{}); return true;
    case PTERON_DTYPE_BFLOAT16: f(BFloat16{}); return true;
    default: return dispatch(d, f);
  }
}

template <typename F>
inline bool dispatch_compute(int32_t d, F&& f) {
  switch (d) {
    case PTERON_DTYPE_FLOAT16:
    case PTERON_DTYPE_BFLOAT16: f(float{}); return true;
    default: return dispatch(d, f);
  }
}

template <typename F>
inline bool dispatch_float_half(int32_t d, F&& f) {
  switch (d) {
    case PTERON_DTYPE_FLOAT16: f(Half{}); return true;
    case PTERON_DTYPE_BFLOAT16: f(BFloat16{}); return true;
    default: return dispatch_float(d, f);
  }
}

// ---- tensors --------------------------------------------------------------

inline int64_t numel(const pteron_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->dim; ++i) n *= t->sizes[i];
  return n;
}

// Calls f(b, e) over sub-ranges covering [begin, end) through the runtime's
// pteron_parallel_for (serial until a thread pool installs itself). Runs f
// inline when there is one thread or the range is within one grain.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& f) {
  if (end <= begin) return;
  if (grain < 1) grain = 1;
  if (end - begin <= grain || pteron_parallel_threads() <= 1) {
    f(begin, end);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  pteron_parallel_for(
      begin, end, grain, [](void* user, int64_t b, int64_t e) { (*static_cast<Fn*>(user))(b, e); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

// Collapses dims [d0, d1) of a tensor into one dim of `*size` elements with a
// single element stride `*stride`, if the tensor's strides allow it (size-1
// dims are ignored). False otherwise.
inline bool collapse(const pteron_tensor* t, int32_t d0, int32_t d1, int64_t* size,
                     int64_t* stride) {
  int64_t n = 1, st = 1;
  bool have = false;
  for (int32_t i = d1 - 1; i >= d0; --i) {
    const int64_t s = t->sizes[i];
    if (s == 1) continue;
    if (!have) {
      st = t->strides[i];
      have = true;
    } else if (t->strides[i] != st * n) {
      return false;
    }
    n *= s;
  }
  for (int32_t i = d0; i < d1; ++i)
    if (t->sizes[i] == 0) n = 0;
  *size = n;
  *stride = have ? st : 1;
  return true;
}

inline bool is_contiguous(const pteron_tensor* t) {
  for (int32_t i = 0; i < t->dim; ++i)
    if (t->dim_order[i] != i) return false;
  return true;
}

template <typename T>
inline T* data(pteron_tensor* t) {
  return static_cast<T*>(t->data);
}
template <typename T>
inline const T* data(const pteron_tensor* t) {
  return static_cast<const T*>(t->data);
}

inline int32_t resize(pteron_kernel_context* ctx, pteron_tensor* t, const int64_t* sizes,
                      int32_t dim) {
  return pteron_tensor_resize(ctx, t, sizes, dim);
}

// Normalises a possibly negative dim against rank `dim` (rank 0 accepts
// -1 and 0, as PyTorch does). Returns false if out of range.
inline bool wrap_dim(int64_t& d, int32_t rank) {
  int32_t r = rank == 0 ? 1 : rank;
  if (d < -r || d >= r) return false;
  if (d < 0) d += r;
  return true;
}

// ---- argument access ------------------------------------------------------

struct Args {
  pteron_kernel_context* ctx;
  pteron_value* const* v;
  size_t n;
  const char* op;

  // A KernelCall passes the schema's arguments (out arguments included) and
  // then ONE more value for the operator's return (it aliases the out
  // argument, or is a tuple/list value for several outs). So n is
  // `expected` (schema args) or `expected + 1`. Kernels must read every
  // argument, outs included, by its schema position, never as v[n-1].
  int32_t arity(size_t expected) const {
    if (n != expected && n != expected + 1)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s expects %zu arguments (+1 return value), got %zu", op, expected, n);
    return PTERON_OK;
  }
  int32_t tensor(size_t i, const char* name, pteron_tensor** out) const {
    if (i >= n || v[i]->tag != PTERON_VALUE_TENSOR || !v[i]->u.tensor)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('%s') is not a tensor", op,
                  i, name);
    *out = v[i]->u.tensor;
    return PTERON_OK;
  }
  // Tensor or None.
  int32_t opt_tensor(size_t i, const char* name, pteron_tensor** out) const {
    if (i < n && v[i]->tag == PTERON_VALUE_NONE) {
      *out = nullptr;
      return PTERON_OK;
    }
    return tensor(i, name, out);
  }
  int32_t integer(size_t i, const char* name, int64_t* out) const {
    if (i < n && v[i]->tag == PTERON_VALUE_INT) {
      *out = v[i]->u.i;
      return PTERON_OK;
    }
    if (i < n && v[i]->tag == PTERON_VALUE_BOOL) {
      *out = v[i]->u.b;
      return PTERON_OK;
    }
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('%s') is not an int", op, i,
                name);
  }
  bool is_none(size_t i) const { return i < n && v[i]->tag == PTERON_VALUE_NONE; }
  int32_t boolean(size_t i, const char* name, bool* out) const {
    if (i < n && (v[i]->tag == PTERON_VALUE_BOOL || v[i]->tag == PTERON_VALUE_INT)) {
      *out = v[i]->tag == PTERON_VALUE_BOOL ? v[i]->u.b != 0 : v[i]->u.i != 0;
      return PTERON_OK;
    }
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('%s') is not a bool", op, i,
                name);
  }
  // double, int or bool, as double.
  int32_t real(size_t i, const char* name, double* out) const {
    if (i < n) {
      switch (v[i]->tag) {
        case PTERON_VALUE_DOUBLE: *out = v[i]->u.d; return PTERON_OK;
        case PTERON_VALUE_INT: *out = static_cast<double>(v[i]->u.i); return PTERON_OK;
        case PTERON_VALUE_BOOL: *out = static_cast<double>(v[i]->u.b); return PTERON_OK;
        default: break;
      }
    }
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('%s') is not a number", op, i,
                name);
  }
  // A Python Scalar: value plus its category.
  int32_t scalar(size_t i, const char* name, double* out, ScalarKind* kind) const {
    PTERON_CHECK_OK(real(i, name, out));
    *kind = v[i]->tag == PTERON_VALUE_DOUBLE ? ScalarKind::Float
            : v[i]->tag == PTERON_VALUE_BOOL ? ScalarKind::Bool
                                             : ScalarKind::Int;
    return PTERON_OK;
  }
  int32_t int_list(size_t i, const char* name, const int64_t** data, size_t* size) const {
    if (i < n && v[i]->tag == PTERON_VALUE_INT_LIST) {
      *data = v[i]->u.int_list.data;
      *size = v[i]->u.int_list.size;
      return PTERON_OK;
    }
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('%s') is not an int list", op,
                i, name);
  }
  int32_t tensor_list(size_t i, const char* name, pteron_tensor* const** data, size_t* size) const {
    if (i < n &&
        (v[i]->tag == PTERON_VALUE_TENSOR_LIST || v[i]->tag == PTERON_VALUE_OPTIONAL_TENSOR_LIST)) {
      *data = v[i]->u.tensor_list.data;
      *size = v[i]->u.tensor_list.size;
      return PTERON_OK;
    }
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: argument %zu ('%s') is not a tensor list",
                op, i, name);
  }
};

// ---- broadcasting ---------------------------------------------------------

// Output shape of broadcasting a and b (PyTorch rules, aligned from the
// right). Returns false if they are not broadcastable.
inline bool broadcast_shape(const pteron_tensor* a, const pteron_tensor* b, int64_t* out,
                            int32_t* out_dim) {
  int32_t nd = a->dim > b->dim ? a->dim : b->dim;
  for (int32_t i = 0; i < nd; ++i) {
    int32_t ia = a->dim - nd + i, ib = b->dim - nd + i;
    int64_t sa = ia >= 0 ? a->sizes[ia] : 1;
    int64_t sb = ib >= 0 ? b->sizes[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) return false;
    out[i] = sa == 1 ? sb : sa;
  }
  *out_dim = nd;
  return true;
}

// Element strides of `t` when viewed with the output's rank and shape
// (0 for broadcast dims).
inline void broadcast_strides(const pteron_tensor* t, int32_t out_dim, const int64_t* out_sizes,
                              int64_t* strides) {
  for (int32_t i = 0; i < out_dim; ++i) {
    int32_t it = t->dim - out_dim + i;
    strides[i] = (it >= 0 && t->sizes[it] != 1) ? t->strides[it] : 0;
    (void)out_sizes;
  }
}

// Iterates the output (dense, in its own dim order) and calls
// f(out_offset, off_0, ..., off_{N-1}) with the storage offsets of each input.
// Inputs are given as tensors (any dim order, broadcastable to `out`).
template <size_t N, typename F>
inline void for_each_broadcast(const pteron_tensor* out, const pteron_tensor* const (&ins)[N],
                               F&& f) {
  const int32_t nd = out->dim;
  const int64_t total = numel(out);
  if (total == 0) return;
  bool fast = true;
  for (size_t k = 0; k < N; ++k) {
    const pteron_tensor* t = ins[k];
    if (t->dim != nd) {
      fast = false;
      break;
    }
    for (int32_t i = 0; i < nd; ++i)
      if (t->sizes[i] != out->sizes[i] || t->strides[i] != out->strides[i]) fast = false;
  }
  if (fast) {
    int64_t offs[N > 0 ? N : 1];
    for (int64_t i = 0; i < total; ++i) {
      for (size_t k = 0; k < N; ++k) offs[k] = i;
      if constexpr (N == 1)
        f(i, offs[0]);
      else if constexpr (N == 2)
        f(i, offs[0], offs[1]);
      else
        f(i, offs[0], offs[1], offs[2]);
    }
    return;
  }
  int64_t st[N > 0 ? N : 1][PTERON_MAX_DIM];
  for (size_t k = 0; k < N; ++k) broadcast_strides(ins[k], nd, out->sizes, st[k]);
  int64_t idx[PTERON_MAX_DIM] = {0};
  int64_t offs[N > 0 ? N : 1] = {0};
  for (int64_t n = 0; n < total; ++n) {
    int64_t o = 0;
    for (int32_t i = 0; i < nd; ++i) o += idx[i] * out->strides[i];
    if constexpr (N == 1)
      f(o, offs[0]);
    else if constexpr (N == 2)
      f(o, offs[0], offs[1]);
    else
      f(o, offs[0], offs[1], offs[2]);
    // increment logical index (row-major over logical dims)
    for (int32_t i = nd - 1; i >= 0; --i) {
      ++idx[i];
      for (size_t k = 0; k < N; ++k) offs[k] += st[k][i];
      if (idx[i] < out->sizes[i]) break;
      for (size_t k = 0; k < N; ++k) offs[k] -= st[k][i] * idx[i];
      idx[i] = 0;
    }
  }
}

// Copies sizes of `src` into `out` via resize (same rank).
inline int32_t resize_like(pteron_kernel_context* ctx, pteron_tensor* out,
                           const pteron_tensor* src) {
  return pteron_tensor_resize(ctx, out, src->sizes, src->dim);
}

}  // namespace pteron::kern

// Library name and rank used when a kernel library registers. The build sets
// PTERON_COMPONENT_NAME (e.g. "kernels_portable") and PTERON_KERNEL_PRIORITY.
#ifndef PTERON_COMPONENT_NAME
#define PTERON_COMPONENT_NAME "unnamed"
#endif
#ifndef PTERON_KERNEL_PRIORITY
#define PTERON_KERNEL_PRIORITY 0
#endif

#define PTERON_KERNEL_CAT2_(a, b) a##b
#define PTERON_KERNEL_CAT_(a, b) PTERON_KERNEL_CAT2_(a, b)

// Registers a table of kernels when the library loads, e.g.
//   PTERON_REGISTER_KERNELS(
//       {"aten::add", "out", nullptr, add_out, PTERON_KERNEL_PRIORITY, 0},
//       {"aten::add", "Scalar_out", nullptr, add_scalar_out, PTERON_KERNEL_PRIORITY, 0});
// Each source file may register its own table. A refused registration (ABI
// mismatch) is reported by the runtime; the library then provides nothing.
#define PTERON_REGISTER_KERNELS(...)                                          \
  namespace {                                                                 \
  const int PTERON_KERNEL_CAT_(pteron_kernels_registered_, __LINE__) = [] {   \
    static const pteron_kernel_registration table[] = {__VA_ARGS__};          \
    pteron_register_kernels(PTERON_ABI_VERSION, PTERON_COMPONENT_NAME, table, \
                            sizeof table / sizeof table[0]);                  \
    return 0;                                                                 \
  }();                                                                        \
  }
