// SPDX-License-Identifier: BSD-3-Clause
// strided_views.h - walking tensors by logical position whatever their dim
// order: views (sizes, element strides, offset), a walker that merges
// contiguous dims, a dtype-converting strided copy, and per-lane iteration
// (header-only, private to the kernel libraries). Views are built from
// tensors that check_tensor (tensor_checks.h) accepted, so every offset a
// walk forms lies inside the storage.
#pragma once

#include <cstdint>
#include <limits>
#include <cstring>
#include <type_traits>

#include "dtype_convert.h"
#include "kernel_util.h"
#include "tensor_checks.h"

namespace pteron::kern {

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

// ---- slices (aten::slice_copy, aten::slice_scatter) --------------------------

// A slice of one dim: its first index and its length.
struct SliceBounds {
  int64_t start = 0, len = 0;
};

// PyTorch's slice bounds on a dim of `size` elements: a missing start is 0
// and a missing end the dim's end; a negative one counts from the end once
// (below -size: 0); both are then clamped into [0, size], end to at least
// start. step must be positive.
inline int32_t slice_bounds(const Args& a, int64_t size, bool has_start, int64_t start,
                            bool has_end, int64_t end, int64_t step, SliceBounds* s) {
  if (step <= 0)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: slice step must be positive, got %lld",
                a.op, (long long)step);
  if (!has_start) start = 0;
  if (!has_end) end = std::numeric_limits<int64_t>::max();
  if (start < 0) start = start < -size ? 0 : start + size;
  if (end < 0) end = end < -size ? 0 : end + size;
  if (start > size) start = size;
  if (end > size) end = size;
  if (end < start) end = start;
  s->start = start;
  s->len = end > start ? (end - start - 1) / step + 1 : 0;
  return PTERON_OK;
}

// Narrows dim d of v to the slice s taken every `step` elements.
inline void slice_view(View* v, int32_t d, const SliceBounds& s, int64_t step) {
  if (s.len > 0) v->offset += s.start * v->strides[d];
  v->sizes[d] = s.len;
  // step < size when len > 1, so the product stays inside the storage span.
  if (s.len > 1) v->strides[d] *= step;
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

template <typename To, typename From, bool kBoolSrc = false>
inline void copy_typed(const From* src, const View& sv, To* dst, const View& dv, int64_t n) {
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
      for (int64_t j = 0; j < k; ++j) d[j * ds] = load_convert<To, From, kBoolSrc>(s[j * ss]);
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
// converting from src_dtype to dst_dtype. Both dtypes must be supported
// (float16 and bfloat16 included: a caller that refuses them checks first) and
// the views must lie inside their storages (the callers build them from
// checked tensors). Returns false for an unsupported dtype.
inline bool copy_view(const void* src, int32_t src_dtype, const View& sv, void* dst,
                      int32_t dst_dtype, const View& dv) {
  const int64_t n = numel(dv);
  if (!is_supported_half(src_dtype) || !is_supported_half(dst_dtype)) return false;
  if (n == 0) return true;
  if (src_dtype == dst_dtype) {
    // Same dtype: move bytes by element width.
    switch (dtype_size(src_dtype)) {
      case 1:
        copy_typed(static_cast<const uint8_t*>(src), sv, static_cast<uint8_t*>(dst), dv, n);
        return true;
      case 2:
        copy_typed(static_cast<const uint16_t*>(src), sv, static_cast<uint16_t*>(dst), dv, n);
        return true;
      case 4:
        copy_typed(static_cast<const uint32_t*>(src), sv, static_cast<uint32_t*>(dst), dv, n);
        return true;
      case 8:
        copy_typed(static_cast<const uint64_t*>(src), sv, static_cast<uint64_t*>(dst), dv, n);
        return true;
      default: return false;
    }
  }
  return dispatch_half(src_dtype, [&](auto s) {
    using S0 = decltype(s);
    constexpr bool kBool = std::is_same_v<S0, bool>;
    using S = std::conditional_t<kBool, uint8_t, S0>;
    dispatch_half(dst_dtype, [&](auto d) {
      using D = decltype(d);
      // std::is_same_v, not kBool: MSVC cannot read an enclosing lambda's constexpr local.
      copy_typed<D, S, std::is_same_v<S0, bool>>(static_cast<const S*>(src), sv,
                                                 static_cast<D*>(dst), dv, n);
    });
  });
}

// Copies a whole tensor into another of the same number of elements; a
// kernel that accepts float16 and bfloat16 passes accept_half.
inline int32_t copy_tensor(const Args& a, const pteron_tensor* src, const View& sv,
                           pteron_tensor* dst, bool accept_half = false) {
  auto ok = [accept_half](int32_t d) {
    return accept_half ? is_supported_half(d) : is_supported(d);
  };
  if (!ok(src->dtype)) return unsupported_dtype(a.ctx, a.op, "self", src->dtype);
  if (!ok(dst->dtype)) return unsupported_dtype(a.ctx, a.op, "out", dst->dtype);
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

// Iterates the positions of `t` along every dim but `dim`, calling
// f(off_a, off_b) with the base offsets in two tensors of the same shape
// (a and b may have different dim orders). Each call then walks `dim` with
// a->strides[dim] / b->strides[dim].
template <typename F>
inline void for_each_lane(const pteron_tensor* a, const pteron_tensor* b, int32_t dim, F&& f) {
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

// ---- permute_copy -------------------------------------------------------------

// permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out): reads and
// checks the arguments (self's metadata, out's dtype, dims a permutation of
// self's dims) and gives self's permuted view: self's storage with sizes and
// strides in the order of dims. out is left to the caller to resize.
inline int32_t read_permute_copy(const Args& a, pteron_tensor** self, pteron_tensor** out,
                                 pteron_tensor* view) {
  PTERON_CHECK_OK(a.arity(3));
  const int64_t* dims = nullptr;
  size_t nd = 0;
  PTERON_CHECK_OK(tensor_arg(a, 0, "self", self));
  PTERON_CHECK_OK(a.int_list(1, "dims", &dims, &nd));
  PTERON_CHECK_OK(a.tensor(2, "out", out));
  PTERON_CHECK_OK(check_supported_half(a.ctx, a.op, "out", (*out)->dtype));
  const pteron_tensor* s = *self;
  if (nd != static_cast<size_t>(s->dim))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: dims has %zu entries but self has rank %d", a.op, nd, (int)s->dim);
  bool seen[PTERON_MAX_DIM] = {};
  *view = *s;
  for (size_t i = 0; i < nd; ++i) {
    int64_t d = dims[i];
    if (!wrap_dim(d, s->dim) || d >= s->dim) return bad_dim(a, "dims entry", dims[i], s->dim);
    if (seen[d])
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: dim %lld appears more than once in dims", a.op, (long long)d);
    seen[d] = true;
    view->sizes[i] = s->sizes[d];
    view->strides[i] = s->strides[d];
  }
  return PTERON_OK;
}

}  // namespace pteron::kern
