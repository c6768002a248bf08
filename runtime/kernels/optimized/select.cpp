// SPDX-License-Identifier: BSD-3-Clause
// select.cpp - optimized aten::where.self_out and aten::logical_not.out for
// a bool condition / self (the registry key: the first tensor argument's
// dtype), and aten::eq.Scalar_out for a float32 self (the mask's source). The argument checks and
// the general path are kernels_portable's (compare.cpp), with the same helpers of
// runtime/kernels/common and the same messages; the fast paths below take the case attention masks
// reach (ViT's exported scaled_dot_product_attention: where(cond [B, H, L, 1], x [B, H, L, L], y
// [B, H, L, L])): float32 self, other and out, all dense row-major with out's shape, the condition
// broadcast along any dims. Rows of the innermost dim are split over the thread pool.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "opt_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

constexpr int64_t kGrain = 32768;  // elements per parallel chunk, at least

// Dense row-major with exactly `sizes` (strides of size-1 dims ignored).
bool dense_as(const pteron_tensor* t, const int64_t* sizes, int32_t nd) {
  if (t->dim != nd) return false;
  int64_t want = 1;
  for (int32_t i = nd - 1; i >= 0; --i) {
    if (t->sizes[i] != sizes[i]) return false;
    if (sizes[i] != 1 && t->strides[i] != want) return false;
    want *= sizes[i];
  }
  return true;
}

// out = cond ? x : y over out's rows; x, y, out dense with out's shape,
// cond read through its broadcast strides `sc` (bytes, 0 or 1 each).
void where_rows(const uint8_t* c, const int64_t* sc, const float* x, const float* y, float* o,
                const pteron_tensor* out) {
  const int32_t nd = out->dim;
  const int64_t total = numel(out);
  const int64_t len = nd > 0 ? out->sizes[nd - 1] : 1;
  const int64_t rows = len > 0 ? total / len : 0;
  const int64_t cl = nd > 0 ? sc[nd - 1] : 0;
  const int64_t grain = len >= kGrain ? 1 : kGrain / len;
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rest = r, co = 0;
      for (int32_t d = nd - 2; d >= 0; --d) {
        co += (rest % out->sizes[d]) * sc[d];
        rest /= out->sizes[d];
      }
      const int64_t base = r * len;
      if (cl == 0) {  // one condition per row: a copy
        std::memcpy(o + base, (c[co] ? x : y) + base, size_t(len) * sizeof(float));
        continue;
      }
      const uint8_t* cr = c + co;
      for (int64_t i = 0; i < len; ++i) o[base + i] = cr[i * cl] ? x[base + i] : y[base + i];
    }
  });
}

int32_t where_self_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::where.self_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(4));
  pteron_tensor *cond = nullptr, *self = nullptr, *other = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "condition", &cond));
  PTERON_CHECK_OK(a.tensor(1, "self", &self));
  PTERON_CHECK_OK(a.tensor(2, "other", &other));
  PTERON_CHECK_OK(a.tensor(3, "out", &out));
  if (cond->dtype != PTERON_DTYPE_BOOL && cond->dtype != PTERON_DTYPE_UINT8)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM, "%s: condition must be a bool tensor, got %s",
                op, dtype_name(cond->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "other", other->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "condition", cond));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  PTERON_CHECK_OK(check_tensor(ctx, op, "other", other));
  ResultType rt;
  rt.add_tensor(self);
  rt.add_tensor(other);
  const int32_t ct = rt.get();
  if (!can_cast(ct, out->dtype)) return cast_error(ctx, op, ct, out->dtype);
  const pteron_tensor* all[3] = {cond, self, other};
  int64_t shape[PTERON_MAX_DIM];
  int32_t nd = 0;
  if (!broadcast_shape_n(all, 3, shape, &nd)) {
    const pteron_tensor* bad = broadcast_shape(cond, self, shape, &nd) ? other : self;
    return broadcast_error(ctx, op, cond, bad);
  }
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, shape, nd));
  if (numel(out) == 0) return PTERON_OK;
  if (ct == PTERON_DTYPE_FLOAT32 && self->dtype == ct && other->dtype == ct && out->dtype == ct &&
      cond->dim <= nd && dense_as(self, shape, nd) && dense_as(other, shape, nd) &&
      dense_as(out, shape, nd)) {
    int64_t sc[PTERON_MAX_DIM] = {0};
    broadcast_strides(cond, nd, shape, sc);
    where_rows(static_cast<const uint8_t*>(cond->data), sc, static_cast<const float*>(self->data),
               static_cast<const float*>(other->data), static_cast<float*>(out->data), out);
    return PTERON_OK;
  }
  dispatch_half(ct, [&](auto t) {
    using C = decltype(t);
    const pteron_tensor* ins[3] = {cond, self, other};
    if constexpr (!std::is_same_v<C, bool>) {
      if (self->dtype == ct && other->dtype == ct && out->dtype == ct) {
        const uint8_t* c = static_cast<const uint8_t*>(cond->data);
        const C* x = static_cast<const C*>(self->data);
        const C* y = static_cast<const C*>(other->data);
        C* o = static_cast<C*>(out->data);
        for_each_broadcast(out, ins, [&](int64_t oi, int64_t ci, int64_t xi, int64_t yi) {
          o[oi] = c[ci] ? x[xi] : y[yi];
        });
        return;
      }
    }
    map_elements<C, C>(ins, out, [](C c, C x, C y) { return c != C(0) ? x : y; });
  });
  return PTERON_OK;
}

int32_t logical_not_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::logical_not.out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(2));
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(a.tensor(1, "out", &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, self->sizes, self->dim));
  if (self->dtype == PTERON_DTYPE_BOOL && out->dtype == PTERON_DTYPE_BOOL &&
      dense_as(self, self->sizes, self->dim) && dense_as(out, self->sizes, self->dim)) {
    const uint8_t* x = static_cast<const uint8_t*>(self->data);
    uint8_t* o = static_cast<uint8_t*>(out->data);
    parallel_for(0, numel(out), kGrain * 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = x[i] == 0;
    });
    return PTERON_OK;
  }
  dispatch_compute(self->dtype, [&](auto t) {
    using C = decltype(t);
    const pteron_tensor* ins[1] = {self};
    map_elements<C, bool>(ins, out, [](C x) { return x == C(0); });
  });
  return PTERON_OK;
}

// eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out): the scalar
// is converted to the result type first, as kernels_portable does.
int32_t eq_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::eq.Scalar_out";
  Args a{ctx, args, n, op};
  PTERON_CHECK_OK(a.arity(3));
  pteron_tensor *self = nullptr, *out = nullptr;
  Scalar other_s;
  PTERON_CHECK_OK(a.tensor(0, "self", &self));
  PTERON_CHECK_OK(read_scalar(a, 1, "other", &other_s));
  PTERON_CHECK_OK(a.tensor(2, "out", &out));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", self->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", self));
  ResultType rt;
  rt.add_tensor(self);
  rt.add_scalar(other_s.kind);
  const int32_t ct = rt.get();
  PTERON_CHECK_OK(resize_out(ctx, op, "out", out, self->sizes, self->dim));
  if (ct == PTERON_DTYPE_FLOAT32 && self->dtype == ct && out->dtype == PTERON_DTYPE_BOOL &&
      dense_as(self, self->sizes, self->dim) && dense_as(out, self->sizes, self->dim)) {
    const float y = other_s.to<float>();
    const float* x = static_cast<const float*>(self->data);
    uint8_t* o = static_cast<uint8_t*>(out->data);
    parallel_for(0, numel(out), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = x[i] == y;
    });
    return PTERON_OK;
  }
  dispatch_half(ct, [&](auto t) {
    using C = decltype(t);
    const C y = other_s.to<C>();
    const pteron_tensor* ins[1] = {self};
    map_elements<C, bool>(ins, out, [y](C x) { return x == y; });
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::eq", "Scalar_out", PTERON_OPT_KEY, eq_scalar_out,
                         PTERON_KERNEL_PRIORITY, 0},
                        {"aten::where", "self_out", pteron_kernel_key_for_dtype(PTERON_DTYPE_BOOL),
                         where_self_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::logical_not", "out", pteron_kernel_key_for_dtype(PTERON_DTYPE_BOOL),
                         logical_not_out, PTERON_KERNEL_PRIORITY, 0})
