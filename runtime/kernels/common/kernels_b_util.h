// kernels_b_util.h - helpers for the portable shape, index, convolution,
// pooling and normalisation kernels (header-only, private to the kernel
// library): argument checks that survive malformed programs, strided views
// and a dtype-converting strided copy.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernel_util.h"

namespace pteron::kern::kb {

// ---- arguments ------------------------------------------------------------

// Arity as the runtime passes it: the schema's arguments, then possibly one
// return value (see Args::arity).
inline int32_t arity(const Args& a, size_t expected) {
  return a.arity(expected);
}

// An int list, or None (then *present is false).
inline int32_t opt_int_list(const Args& a, size_t i, const char* name,
                            const int64_t** data, size_t* size,
                            bool* present) {
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
inline int32_t opt_integer(const Args& a, size_t i, const char* name,
                           int64_t* out, bool* present) {
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
inline int32_t spatial_params(const Args& a, size_t i, const char* name,
                              int32_t count, int64_t min_value, int64_t* out) {
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
                  "%s: %s value %lld is out of range (expected %lld .. %lld)",
                  a.op, name, (long long)v, (long long)min_value,
                  (long long)(int64_t{1} << 31));
    out[k] = v;
  }
  return PTERON_OK;
}

// ---- tensors ----------------------------------------------------------------

// Checks that a tensor's metadata is sane and that every element its sizes
// and strides address lies inside its storage, so later loops cannot read
// or write out of bounds whatever the program declared.
inline int32_t check_tensor(pteron_kernel_context* ctx, const char* op,
                            const char* name, const pteron_tensor* t) {
  if (t->dim < 0 || t->dim > PTERON_MAX_DIM)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: tensor '%s' has invalid rank %d", op, name, (int)t->dim);
  size_t es = dtype_size(t->dtype);
  if (es == 0)
    return fail(ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                "unsupported dtype %s for argument '%s' of %s",
                dtype_name(t->dtype), name, op);
  int64_t n = 1;
  bool overflow = false;
  for (int32_t i = 0; i < t->dim; ++i) {
    int64_t s = t->sizes[i];
    if (s < 0)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s: tensor '%s' has negative size %lld in dim %d", op,
                  name, (long long)s, (int)i);
    if (s != 0 && n > std::numeric_limits<int64_t>::max() / s)
      overflow = true;
    else
      n *= s;
  }
  if (n == 0) return PTERON_OK;
  if (overflow || n > std::numeric_limits<int64_t>::max() / (int64_t)es)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: tensor '%s' is too large", op, name);
  if (t->data == nullptr)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: tensor '%s' has no storage", op, name);
  // Highest element offset the sizes/strides reach.
  const int64_t cap_elems = t->capacity_bytes < 0 ? 0 : t->capacity_bytes / (int64_t)es;
  int64_t max_off = 0;
  for (int32_t i = 0; i < t->dim; ++i) {
    int64_t st = t->strides[i];
    if (st < 0)
      return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                  "%s: tensor '%s' has negative stride in dim %d", op, name,
                  (int)i);
    int64_t span = t->sizes[i] - 1;
    if (span > 0 && st > 0) {
      if (st > (cap_elems - max_off) / span)
        return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                    "%s: tensor '%s' addresses memory beyond its storage "
                    "(%lld bytes)",
                    op, name, (long long)t->capacity_bytes);
      max_off += st * span;
    }
  }
  if (max_off >= cap_elems)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: tensor '%s' needs more storage than its %lld bytes", op,
                name, (long long)t->capacity_bytes);
  return PTERON_OK;
}

// A tensor argument, checked.
inline int32_t tensor_arg(const Args& a, size_t i, const char* name,
                          pteron_tensor** out) {
  PTERON_CHECK_OK(a.tensor(i, name, out));
  return check_tensor(a.ctx, a.op, name, *out);
}
inline int32_t opt_tensor_arg(const Args& a, size_t i, const char* name,
                              pteron_tensor** out) {
  PTERON_CHECK_OK(a.opt_tensor(i, name, out));
  if (*out == nullptr) return PTERON_OK;
  return check_tensor(a.ctx, a.op, name, *out);
}

// Resizes an out tensor and re-checks it.
inline int32_t resize_out(const Args& a, pteron_tensor* out, const char* name,
                          const int64_t* sizes, int32_t dim) {
  PTERON_CHECK_OK(pteron_tensor_resize(a.ctx, out, sizes, dim));
  if (out->dim != dim)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: out tensor '%s' could not take rank %d", a.op, name,
                (int)dim);
  for (int32_t i = 0; i < dim; ++i)
    if (out->sizes[i] != sizes[i])
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: out tensor '%s' could not be resized", a.op, name);
  return check_tensor(a.ctx, a.op, name, out);
}

// PyTorch's canCast: no float -> integral, no non-bool -> bool.
inline bool can_cast(int32_t from, int32_t to) {
  if (is_floating(from) && is_integral(to, true)) return false;
  if (from != PTERON_DTYPE_BOOL && to == PTERON_DTYPE_BOOL) return false;
  return true;
}

// Product of sizes with overflow check (sizes already known >= 0).
inline bool checked_numel(const int64_t* sizes, int32_t dim, int64_t* out) {
  int64_t n = 1;
  bool zero = false, overflow = false;
  for (int32_t i = 0; i < dim; ++i) {
    if (sizes[i] == 0) zero = true;
    else if (n > std::numeric_limits<int64_t>::max() / sizes[i]) overflow = true;
    else n *= sizes[i];
  }
  if (zero) { *out = 0; return true; }
  if (overflow) return false;
  *out = n;
  return true;
}

// ---- conversion -------------------------------------------------------------

// Element conversion as PyTorch's copy_/to() does it on x86, without C++
// undefined behaviour: float -> integral truncates; NaN and out-of-range
// values become the target's "integer indefinite" (INT_MIN) for 32/64-bit
// targets and wrap through int32 for narrower ones.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if constexpr (sizeof(To) == 8) {
      if (!(v >= From(-9223372036854775808.0) && v < From(9223372036854775808.0)))
        return static_cast<To>(std::numeric_limits<int64_t>::min());
      return static_cast<To>(static_cast<int64_t>(v));
    } else {
      int32_t i;
      if (!(v > From(-2147483649.0) && v < From(2147483648.0)))
        i = std::numeric_limits<int32_t>::min();
      else
        i = static_cast<int32_t>(v);
      return static_cast<To>(i);
    }
  } else {
    return static_cast<To>(v);
  }
}

// ---- strided views ------------------------------------------------------------

// Logical shape + element strides + base offset over some storage.
struct View {
  int32_t dim = 0;
  int64_t sizes[PTERON_MAX_DIM] = {};
  int64_t strides[PTERON_MAX_DIM] = {};
  int64_t offset = 0;
};

inline View view_of(const pteron_tensor* t) {
  View v;
  v.dim = t->dim;
  for (int32_t i = 0; i < t->dim; ++i) {
    v.sizes[i] = t->sizes[i];
    v.strides[i] = t->strides[i];
  }
  return v;
}

inline int64_t numel(const View& v) {
  int64_t n = 1;
  for (int32_t i = 0; i < v.dim; ++i) n *= v.sizes[i];
  return n;
}

// Walks a view's elements in logical row-major order. Dims of size 1 are
// dropped and adjacent dims that are contiguous with each other merged, so
// the innermost run is as long as possible.
struct Walker {
  int32_t nd = 1;
  int64_t sizes[PTERON_MAX_DIM];
  int64_t strides[PTERON_MAX_DIM];
  int64_t idx[PTERON_MAX_DIM];
  int64_t off = 0;

  explicit Walker(const View& v) {
    nd = 0;
    for (int32_t i = 0; i < v.dim; ++i) {
      if (v.sizes[i] == 1) continue;
      if (nd > 0 && strides[nd - 1] == v.strides[i] * v.sizes[i]) {
        sizes[nd - 1] *= v.sizes[i];
        strides[nd - 1] = v.strides[i];
      } else {
        sizes[nd] = v.sizes[i];
        strides[nd] = v.strides[i];
        ++nd;
      }
    }
    if (nd == 0) {
      nd = 1;
      sizes[0] = 1;
      strides[0] = 0;
    }
    for (int32_t i = 0; i < nd; ++i) idx[i] = 0;
    off = v.offset;
  }
  int64_t inner_left() const { return sizes[nd - 1] - idx[nd - 1]; }
  int64_t inner_stride() const { return strides[nd - 1]; }
  // Advances by k <= inner_left() elements.
  void advance(int64_t k) {
    int32_t i = nd - 1;
    idx[i] += k;
    off += k * strides[i];
    while (idx[i] == sizes[i] && i > 0) {
      off -= strides[i] * sizes[i];
      idx[i] = 0;
      --i;
      ++idx[i];
      off += strides[i];
    }
  }
};

// Bool storage is read as bytes (kBoolSrc): a malformed program can hand a
// kernel bool tensors whose bytes are not 0/1, and loading such a byte as
// C++ bool is undefined behaviour. Any nonzero byte reads as true.
template <typename To, typename From, bool kBoolSrc = false>
inline To load_convert(From v) {
  if constexpr (kBoolSrc)
    return convert<To>(v != From(0));
  else
    return convert<To>(v);
}

template <typename To, typename From, bool kBoolSrc = false>
inline void copy_typed(const From* src, const View& sv, To* dst,
                       const View& dv, int64_t n) {
  Walker a(sv), b(dv);
  while (n > 0) {
    int64_t k = a.inner_left();
    if (b.inner_left() < k) k = b.inner_left();
    if (n < k) k = n;
    const From* s = src + a.off;
    To* d = dst + b.off;
    const int64_t ss = a.inner_stride(), ds = b.inner_stride();
    if (ss == 1 && ds == 1) {
      // memmove: a malformed program may plan overlapping in/out storage.
      if constexpr (std::is_same_v<To, From> && !kBoolSrc)
        std::memmove(d, s, static_cast<size_t>(k) * sizeof(To));
      else
        for (int64_t j = 0; j < k; ++j) d[j] = load_convert<To, From, kBoolSrc>(s[j]);
    } else {
      for (int64_t j = 0; j < k; ++j)
        d[j * ds] = load_convert<To, From, kBoolSrc>(s[j * ss]);
    }
    n -= k;
    if (n > 0) {
      a.advance(k);
      b.advance(k);
    }
  }
}

// Copies numel(dst view) elements from a source view to a destination view,
// both walked in logical row-major order (their shapes may differ: view_copy),
// converting from src_dtype to dst_dtype. Both dtypes must be supported and
// the views must lie inside their storages (the callers build them from
// checked tensors). Returns false for an unsupported dtype.
inline bool copy_view(const void* src, int32_t src_dtype, const View& sv,
                      void* dst, int32_t dst_dtype, const View& dv) {
  const int64_t n = numel(dv);
  if (!is_supported(src_dtype) || !is_supported(dst_dtype)) return false;
  if (n == 0) return true;
  if (src_dtype == dst_dtype) {
    // Same dtype: move bytes by element width.
    switch (dtype_size(src_dtype)) {
      case 1: copy_typed(static_cast<const uint8_t*>(src), sv, static_cast<uint8_t*>(dst), dv, n); return true;
      case 2: copy_typed(static_cast<const uint16_t*>(src), sv, static_cast<uint16_t*>(dst), dv, n); return true;
      case 4: copy_typed(static_cast<const uint32_t*>(src), sv, static_cast<uint32_t*>(dst), dv, n); return true;
      case 8: copy_typed(static_cast<const uint64_t*>(src), sv, static_cast<uint64_t*>(dst), dv, n); return true;
      default: return false;
    }
  }
  return dispatch(src_dtype, [&](auto s) {
    using S0 = decltype(s);
    constexpr bool kBool = std::is_same_v<S0, bool>;
    using S = std::conditional_t<kBool, uint8_t, S0>;
    dispatch(dst_dtype, [&](auto d) {
      using D = decltype(d);
      copy_typed<D, S, kBool>(static_cast<const S*>(src), sv,
                              static_cast<D*>(dst), dv, n);
    });
  });
}

// Copies a whole tensor into another of the same number of elements.
inline int32_t copy_tensor(const Args& a, const pteron_tensor* src,
                           const View& sv, pteron_tensor* dst) {
  if (!is_supported(src->dtype))
    return unsupported_dtype(a.ctx, a.op, "self", src->dtype);
  if (!is_supported(dst->dtype))
    return unsupported_dtype(a.ctx, a.op, "out", dst->dtype);
  copy_view(src->data, src->dtype, sv, dst->data, dst->dtype, view_of(dst));
  return PTERON_OK;
}

// Logical-order element offsets of a tensor: calls f(storage_offset) for
// each element in row-major order of its logical shape.
template <typename F>
inline void for_each_offset(const View& v, F&& f) {
  int64_t n = numel(v);
  if (n == 0) return;
  Walker w(v);
  while (n > 0) {
    int64_t k = w.inner_left();
    if (n < k) k = n;
    const int64_t base = w.off, st = w.inner_stride();
    for (int64_t j = 0; j < k; ++j) f(base + j * st);
    n -= k;
    if (n > 0) w.advance(k);
  }
}

// Calls f(offset_in_a, offset_in_b) for the elements of two views of the
// same number of elements, both walked in logical row-major order.
template <typename F>
inline void zip_offsets(const View& va, const View& vb, F&& f) {
  int64_t n = numel(va);
  if (n == 0 || numel(vb) != n) return;
  Walker a(va), b(vb);
  while (n > 0) {
    int64_t k = a.inner_left();
    if (b.inner_left() < k) k = b.inner_left();
    if (n < k) k = n;
    const int64_t ab = a.off, as = a.inner_stride();
    const int64_t bb = b.off, bs = b.inner_stride();
    for (int64_t j = 0; j < k; ++j) f(ab + j * as, bb + j * bs);
    n -= k;
    if (n > 0) {
      a.advance(k);
      b.advance(k);
    }
  }
}

// The view of dims [from, dim) of a tensor, at a given base offset.
inline View sub_view(const pteron_tensor* t, int32_t from, int64_t offset) {
  View v;
  v.dim = t->dim - from;
  for (int32_t i = from; i < t->dim; ++i) {
    v.sizes[i - from] = t->sizes[i];
    v.strides[i - from] = t->strides[i];
  }
  v.offset = offset;
  return v;
}

// The view of dims [0, count) of a tensor.
inline View lead_view(const pteron_tensor* t, int32_t count) {
  View v;
  v.dim = count;
  for (int32_t i = 0; i < count; ++i) {
    v.sizes[i] = t->sizes[i];
    v.strides[i] = t->strides[i];
  }
  return v;
}

}  // namespace pteron::kern::kb
