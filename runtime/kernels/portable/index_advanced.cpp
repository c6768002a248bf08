// SPDX-License-Identifier: BSD-3-Clause
// index_advanced.cpp - portable kernels that read or write through lists of
// index tensors or through masks: index.Tensor, index_put (and the in-place
// index_put_ the exporter emits), masked_select, masked_scatter and nonzero.
//
// float16 / bfloat16 move as stored; accumulating index_put adds in float
// and rounds once per addition. Every index value is checked against its
// bound before anything is written; an out-of-range index is an error naming
// the value and the bound. Outputs whose size depends on the data (nonzero,
// masked_select, index with a bool mask) are resized through the runtime, so
// they need an out tensor planned with an upper bound.
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "arg_reading.h"
#include "dtype_convert.h"
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

bool is_mask_dtype(int32_t d) { return d == PTERON_DTYPE_BOOL || d == PTERON_DTYPE_UINT8; }
bool load_mask(const pteron_tensor* t, int64_t off) {
  return static_cast<const uint8_t*>(t->data)[off] != 0;
}

// ---- advanced indexing (index.Tensor, index_put) ----------------------------

// One index tensor of an advanced index, applied to self dim `self_dim`.
struct AdvIndex {
  int32_t self_dim = 0;
  const void* data = nullptr;
  int32_t dtype = PTERON_DTYPE_INT64;
  int32_t dim = 0;
  int64_t sizes[PTERON_MAX_DIM] = {};
  int64_t strides[PTERON_MAX_DIM] = {};
};

struct IndexPlan {
  int32_t count = 0;  // advanced index tensors
  AdvIndex adv[PTERON_MAX_DIM];
  bool indexed[PTERON_MAX_DIM] = {};
  int32_t bdim = 0;  // broadcast shape of the index tensors
  int64_t bsizes[PTERON_MAX_DIM] = {};
  int32_t bpos = 0;  // where the broadcast dims sit in the result
  int32_t rdim = 0;  // result shape
  int64_t rsizes[PTERON_MAX_DIM] = {};
  int32_t rsrc[PTERON_MAX_DIM] = {};  // per result dim: self dim, or -1 (broadcast)
};

int32_t plan_index(const Args& a, const pteron_tensor* self, size_t list_pos, IndexPlan* p) {
  pteron_tensor* const* ts = nullptr;
  size_t count = 0;
  PTERON_CHECK_OK(a.tensor_list(list_pos, "indices", &ts, &count));
  if (count > 0 && !ts)
    return fail(a.ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: indices list is null", a.op);
  // The masks' true positions go to one scratch block (one request: a
  // second one may move the first).
  int64_t need = 1;
  for (size_t k = 0; k < count; ++k) {
    const pteron_tensor* t = ts[k];
    if (!t) continue;
    PTERON_CHECK_OK(kern::check_tensor(a.ctx, a.op, "indices", t));
    if (!is_mask_dtype(t->dtype)) continue;
    if (t->dim == 0)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: 0-dim boolean indices are not supported", a.op);
    int64_t nnz = 0;
    kern::for_each_offset(kern::view_of(t), [&](int64_t off) { nnz += load_mask(t, off); });
    need += nnz * t->dim;
  }
  int64_t* scratch = static_cast<int64_t*>(
      pteron_kernel_scratch(a.ctx, static_cast<size_t>(need) * sizeof(int64_t)));
  if (!scratch) return PTERON_ERROR_OUT_OF_MEMORY;
  int32_t sd = 0;
  for (size_t k = 0; k < count; ++k) {
    const pteron_tensor* t = ts[k];
    if (!t) {
      ++sd;
      continue;
    }
    if (is_mask_dtype(t->dtype)) {
      if (sd + t->dim > self->dim)
        return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                    "%s: too many indices for a tensor of rank %d", a.op, (int)self->dim);
      for (int32_t i = 0; i < t->dim; ++i)
        if (t->sizes[i] != self->sizes[sd + i])
          return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                      "%s: the shape of the mask indices[%zu] (size %lld at dim %d) does not "
                      "match the shape of the indexed tensor (size %lld at dim %d)",
                      a.op, k, (long long)t->sizes[i], (int)i, (long long)self->sizes[sd + i],
                      (int)(sd + i));
      // The mask's true positions, as one 1-D coordinate list per mask dim.
      int64_t nnz = 0;
      kern::for_each_offset(kern::view_of(t), [&](int64_t off) { nnz += load_mask(t, off); });
      const int32_t md = t->dim;
      int64_t* coords = scratch;
      scratch += nnz * md;
      int64_t j = 0;
      su::for_each_index(t->sizes, t->dim, [&](const int64_t* ii) {
        if (!load_mask(t, su::offset_of(t, ii))) return;
        for (int32_t i = 0; i < md; ++i) coords[i * nnz + j] = ii[i];
        ++j;
      });
      for (int32_t i = 0; i < md; ++i) {
        AdvIndex& e = p->adv[p->count++];
        e.self_dim = sd + i;
        e.data = coords + i * nnz;
        e.dtype = PTERON_DTYPE_INT64;
        e.dim = 1;
        e.sizes[0] = nnz;
        e.strides[0] = 1;
        p->indexed[sd + i] = true;
      }
      sd += t->dim;
      continue;
    }
    if (!su::is_index_dtype(t->dtype))
      return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE,
                  "%s: tensors used as indices must be int32, int64 or bool, got %s (indices[%zu])",
                  a.op, kern::dtype_name(t->dtype), k);
    if (sd >= self->dim)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: too many indices for a tensor of rank %d", a.op, (int)self->dim);
    AdvIndex& e = p->adv[p->count++];
    e.self_dim = sd;
    e.data = t->data;
    e.dtype = t->dtype;
    e.dim = t->dim;
    for (int32_t i = 0; i < t->dim; ++i) {
      e.sizes[i] = t->sizes[i];
      e.strides[i] = t->strides[i];
    }
    p->indexed[sd] = true;
    ++sd;
  }
  // Broadcast the index tensors.
  for (int32_t k = 0; k < p->count; ++k)
    if (p->adv[k].dim > p->bdim) p->bdim = p->adv[k].dim;
  for (int32_t i = 0; i < p->bdim; ++i) p->bsizes[i] = 1;
  for (int32_t k = 0; k < p->count; ++k) {
    const AdvIndex& e = p->adv[k];
    for (int32_t i = 0; i < e.dim; ++i) {
      int64_t& o = p->bsizes[p->bdim - e.dim + i];
      if (e.sizes[i] == o || e.sizes[i] == 1) continue;
      if (o != 1)
        return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                    "%s: shape mismatch: indexing tensors could not be broadcast together", a.op);
      o = e.sizes[i];
    }
  }
  // Adjacent indexed dims keep their place; otherwise the broadcast dims lead.
  int32_t first = -1, last = -1;
  for (int32_t i = 0; i < self->dim; ++i)
    if (p->indexed[i]) {
      if (first < 0) first = i;
      last = i;
    }
  bool adjacent = true;
  for (int32_t i = first; first >= 0 && i <= last; ++i)
    if (!p->indexed[i]) adjacent = false;
  int32_t nrest = 0;
  for (int32_t i = 0; i < self->dim; ++i)
    if (!p->indexed[i]) ++nrest;
  p->rdim = nrest + (p->count > 0 ? p->bdim : 0);
  if (p->rdim > PTERON_MAX_DIM)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: result rank %d is too large", a.op,
                (int)p->rdim);
  p->bpos = p->count == 0 ? 0 : (adjacent ? first : 0);
  int32_t r = 0;
  bool placed = p->count == 0;
  for (int32_t i = 0; i <= self->dim; ++i) {
    if (!placed && ((adjacent && i == first) || (!adjacent && i == 0))) {
      for (int32_t j = 0; j < p->bdim; ++j) {
        p->rsizes[r] = p->bsizes[j];
        p->rsrc[r++] = -1;
      }
      placed = true;
    }
    if (i < self->dim && !p->indexed[i]) {
      p->rsizes[r] = self->sizes[i];
      p->rsrc[r++] = i;
    }
  }
  // Every index value in range (negative ones wrap once).
  for (int32_t k = 0; k < p->count; ++k) {
    const AdvIndex& e = p->adv[k];
    const int64_t bound = self->sizes[e.self_dim];
    kern::View v;
    v.dim = e.dim;
    for (int32_t i = 0; i < e.dim; ++i) {
      v.sizes[i] = e.sizes[i];
      v.strides[i] = e.strides[i];
    }
    bool ok = true;
    int64_t bad = 0;
    kern::for_each_offset(v, [&](int64_t off) {
      const int64_t x = su::load_index(e.data, e.dtype, off);
      if (ok && (x < -bound || x >= bound)) {
        ok = false;
        bad = x;
      }
    });
    if (!ok)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: index %lld is out of bounds for dimension %d with size %lld", a.op,
                  (long long)bad, (int)e.self_dim, (long long)bound);
  }
  return PTERON_OK;
}

// Offset in t (self's shape) of the element at result position ri.
int64_t plan_offset(const IndexPlan& p, const pteron_tensor* t, const int64_t* ri) {
  int64_t o = 0;
  const int64_t* bi = ri + p.bpos;
  for (int32_t r = 0; r < p.rdim; ++r)
    if (p.rsrc[r] >= 0) o += ri[r] * t->strides[p.rsrc[r]];
  for (int32_t k = 0; k < p.count; ++k) {
    const AdvIndex& e = p.adv[k];
    int64_t eo = 0;
    for (int32_t i = 0; i < e.dim; ++i)
      if (e.sizes[i] != 1) eo += bi[p.bdim - e.dim + i] * e.strides[i];
    int64_t x = su::load_index(e.data, e.dtype, eo);
    if (x < 0) x += t->sizes[e.self_dim];
    o += x * t->strides[e.self_dim];
  }
  return o;
}

// ---- index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) ---

int32_t index_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::index.Tensor_out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  IndexPlan p;
  PTERON_CHECK_OK(plan_index(a, self, 1, &p));
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, p.rsizes, p.rdim));
  su::map_elements(self, out, nullptr, [&](const int64_t* ri) { return plan_offset(p, self, ri); });
  return PTERON_OK;
}

// ---- index_put.out(Tensor self, Tensor?[] indices, Tensor values,
//                    bool accumulate=False, *, Tensor(a!) out) --------------

int32_t index_put_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::index_put.out"};
  PTERON_CHECK_OK(a.arity(5));
  pteron_tensor *self = nullptr, *values = nullptr, *out = nullptr;
  bool acc = false;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "values", &values));
  PTERON_CHECK_OK(a.boolean(3, "accumulate", &acc));
  PTERON_CHECK_OK(a.tensor(4, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(su::same_dtype(a, "values", values, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, values));
  if (!kern::is_supported_half(self->dtype))
    return kern::unsupported_dtype(ctx, a.op, "self", self->dtype);
  IndexPlan p;
  PTERON_CHECK_OK(plan_index(a, self, 1, &p));
  // values broadcast to the indexed result's shape.
  if (values->dim > p.rdim)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: shape mismatch: values of rank %d cannot be broadcast to the indexing "
                "result of rank %d",
                a.op, (int)values->dim, (int)p.rdim);
  int64_t vst[PTERON_MAX_DIM] = {};
  for (int32_t i = 0; i < values->dim; ++i) {
    const int32_t r = p.rdim - values->dim + i;
    if (values->sizes[i] != 1 && values->sizes[i] != p.rsizes[r])
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: shape mismatch: values of size %lld at dim %d cannot be broadcast to the "
                  "indexing result's size %lld",
                  a.op, (long long)values->sizes[i], (int)i, (long long)p.rsizes[r]);
    vst[r] = values->sizes[i] == 1 ? 0 : values->strides[i];
  }
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, self->sizes, self->dim));
  PTERON_CHECK_OK(kern::copy_tensor(a, self, kern::view_of(self), out, true));
  kern::dispatch_half(out->dtype, [&](auto t) {
    using T0 = decltype(t);
    constexpr bool kBool = std::is_same_v<T0, bool>;
    using S = std::conditional_t<kBool, uint8_t, T0>;
    S* o = static_cast<S*>(out->data);
    const S* v = static_cast<const S*>(values->data);
    su::for_each_index(p.rsizes, p.rdim, [&](const int64_t* ri) {
      const int64_t oo = plan_offset(p, out, ri);
      int64_t vo = 0;
      for (int32_t r = 0; r < p.rdim; ++r) vo += ri[r] * vst[r];
      if (!acc) {
        o[oo] = v[vo];
      } else if constexpr (std::is_same_v<T0, bool>) {  // not kBool: MSVC (nested lambda)
        o[oo] = (o[oo] != 0 || v[vo] != 0) ? 1 : 0;
      } else {
        o[oo] = su::add_values<T0>(o[oo], v[vo]);
      }
    });
  });
  return PTERON_OK;
}

// ---- masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out) --------
// ---- masked_scatter.out(Tensor self, Tensor mask, Tensor source, *,
//                         Tensor(a!) out) ------------------------------------

// Broadcast shape and element strides of self and mask.
struct MaskPlan {
  int32_t dim = 0;
  int64_t sizes[PTERON_MAX_DIM] = {};
  int64_t sst[PTERON_MAX_DIM] = {}, mst[PTERON_MAX_DIM] = {};
};

int32_t plan_mask(const Args& a, const pteron_tensor* self, const pteron_tensor* mask,
                  MaskPlan* p) {
  if (!is_mask_dtype(mask->dtype))
    return fail(a.ctx, PTERON_ERROR_UNSUPPORTED_DTYPE, "%s: mask must be a bool tensor, got %s",
                a.op, kern::dtype_name(mask->dtype));
  if (!kern::broadcast_shape(self, mask, p->sizes, &p->dim))
    return kern::broadcast_error(a.ctx, a.op, self, mask);
  kern::broadcast_strides(self, p->dim, p->sizes, p->sst);
  kern::broadcast_strides(mask, p->dim, p->sizes, p->mst);
  return PTERON_OK;
}

int64_t dot(const int64_t* idx, const int64_t* st, int32_t dim) {
  int64_t o = 0;
  for (int32_t i = 0; i < dim; ++i) o += idx[i] * st[i];
  return o;
}

int32_t masked_select_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::masked_select.out"};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *mask = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "mask", &mask));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self, mask));
  MaskPlan p;
  PTERON_CHECK_OK(plan_mask(a, self, mask, &p));
  int64_t count = 0;
  su::for_each_index(p.sizes, p.dim,
                     [&](const int64_t* ii) { count += load_mask(mask, dot(ii, p.mst, p.dim)); });
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, &count, 1));
  const size_t es = kern::dtype_size(self->dtype);
  int64_t k = 0;
  su::for_each_index(p.sizes, p.dim, [&](const int64_t* ii) {
    if (!load_mask(mask, dot(ii, p.mst, p.dim))) return;
    su::copy_elem(out->data, k * out->strides[0], self->data, dot(ii, p.sst, p.dim), es);
    ++k;
  });
  return PTERON_OK;
}

int32_t masked_scatter_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::masked_scatter.out"};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *self = nullptr, *mask = nullptr, *source = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(kern::tensor_arg(a, 1, "mask", &mask));
  PTERON_CHECK_OK(kern::tensor_arg(a, 2, "source", &source));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  PTERON_CHECK_OK(su::same_dtype(a, "self", self, out));
  PTERON_CHECK_OK(su::same_dtype(a, "source", source, out));
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self, mask, source));
  MaskPlan p;
  PTERON_CHECK_OK(plan_mask(a, self, mask, &p));
  int64_t count = 0;
  su::for_each_index(p.sizes, p.dim,
                     [&](const int64_t* ii) { count += load_mask(mask, dot(ii, p.mst, p.dim)); });
  if (count > kern::numel(source))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: number of elements of source (%lld) < number of ones in mask (%lld)", a.op,
                (long long)kern::numel(source), (long long)count);
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, p.sizes, p.dim));
  const size_t es = kern::dtype_size(self->dtype);
  // source is read in its logical row-major order.
  kern::Walker w(kern::view_of(source));
  int64_t left = count;
  su::for_each_index(p.sizes, p.dim, [&](const int64_t* ii) {
    const int64_t oo = su::offset_of(out, ii);
    if (load_mask(mask, dot(ii, p.mst, p.dim))) {
      su::copy_elem(out->data, oo, source->data, w.off, es);
      if (--left > 0) w.advance(1);
    } else {
      su::copy_elem(out->data, oo, self->data, dot(ii, p.sst, p.dim), es);
    }
  });
  return PTERON_OK;
}

// ---- nonzero.out(Tensor self, *, Tensor(a!) out) ---------------------------

int32_t nonzero_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::nonzero.out"};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  if (out->dtype != PTERON_DTYPE_INT64)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: out must be an int64 tensor, got %s", a.op,
                kern::dtype_name(out->dtype));
  if (!kern::is_supported_half(self->dtype))
    return kern::unsupported_dtype(ctx, a.op, "self", self->dtype);
  PTERON_CHECK_OK(kern::reject_alias(ctx, a.op, "out", out, self));
  int64_t count = 0;
  auto nz = [&](int64_t off) {
    bool r = false;
    kern::dispatch_half(self->dtype, [&](auto t) {
      using T = decltype(t);
      r = kern::load_typed<T>(self->data, off) != T(0);
    });
    return r;
  };
  kern::for_each_offset(kern::view_of(self), [&](int64_t off) { count += nz(off); });
  const int64_t sizes[2] = {count, self->dim};
  PTERON_CHECK_OK(kern::resize_out(ctx, a.op, "out", out, sizes, 2));
  int64_t* o = static_cast<int64_t*>(out->data);
  int64_t k = 0;
  su::for_each_index(self->sizes, self->dim, [&](const int64_t* ii) {
    if (!nz(su::offset_of(self, ii))) return;
    for (int32_t i = 0; i < self->dim; ++i) o[k * out->strides[0] + i * out->strides[1]] = ii[i];
    ++k;
  });
  return PTERON_OK;
}

// aten::index_put_ (in place): (self, indices, values, accumulate, returned
// self); index_put.out with out = self (its copy of self onto itself is an
// element-wise no-op).
int32_t index_put_inplace(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  if (n != 5) return index_put_out(ctx, args, n);  // index_put.out names the arity error
  pteron_value* const call[5] = {args[0], args[1], args[2], args[3], args[0]};
  return index_put_out(ctx, call, 5);
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::index", "Tensor_out", nullptr, index_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::index_put", "out", nullptr, index_put_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::index_put_", "", nullptr, index_put_inplace, PTERON_KERNEL_PRIORITY, 0},
    {"aten::masked_select", "out", nullptr, masked_select_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::masked_scatter", "out", nullptr, masked_scatter_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::nonzero", "out", nullptr, nonzero_out, PTERON_KERNEL_PRIORITY, 0})
