// SPDX-License-Identifier: BSD-3-Clause
// select.cpp - optimized aten::where.self_out and aten::logical_not.out for
// a bool condition / self (the registry key: the first tensor argument's
// dtype), and aten::eq.Scalar_out for a float32 self (the mask's source).
// The argument checks and the general path are select_ops.h's (shared with
// kernels_portable); the fast paths below take the case attention masks
// reach (ViT's exported scaled_dot_product_attention: where(cond [B, H, L,
// 1], x [B, H, L, L], y [B, H, L, L])): float32 self, other and out, all
// dense row-major with out's shape, the condition broadcast along any dims.
// Rows of the innermost dim are split over the thread pool.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "opt_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "select_ops.h"
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
  return where_self_impl(
      ctx, args, n,
      [](const pteron_tensor* cond, const pteron_tensor* self, const pteron_tensor* other,
         int32_t ct, const int64_t* shape, int32_t nd, pteron_tensor* out) {
        if (numel(out) == 0) return false;
        if (ct != PTERON_DTYPE_FLOAT32 || self->dtype != ct || other->dtype != ct ||
            out->dtype != ct || cond->dim > nd || !dense_as(self, shape, nd) ||
            !dense_as(other, shape, nd) || !dense_as(out, shape, nd))
          return false;
        int64_t sc[PTERON_MAX_DIM] = {0};
        broadcast_strides(cond, nd, shape, sc);
        where_rows(static_cast<const uint8_t*>(cond->data), sc,
                   static_cast<const float*>(self->data), static_cast<const float*>(other->data),
                   static_cast<float*>(out->data), out);
        return true;
      });
}

int32_t logical_not_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return logical_not_impl(ctx, args, n, [](const pteron_tensor* self, pteron_tensor* out) {
    if (self->dtype != PTERON_DTYPE_BOOL || out->dtype != PTERON_DTYPE_BOOL ||
        !dense_as(self, self->sizes, self->dim) || !dense_as(out, self->sizes, self->dim))
      return false;
    const uint8_t* x = static_cast<const uint8_t*>(self->data);
    uint8_t* o = static_cast<uint8_t*>(out->data);
    parallel_for(0, numel(out), kGrain * 4, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = x[i] == 0;
    });
    return true;
  });
}

// eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out): the scalar
// is converted to the result type first, as kernels_portable does.
int32_t eq_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return compare_impl(
      ctx, args, n, "aten::eq.Scalar_out", Cmp::Eq, true,
      [](const pteron_tensor* self, const pteron_tensor*, const Scalar& other_s, int32_t ct,
         pteron_tensor* out) {
        if (ct != PTERON_DTYPE_FLOAT32 || self->dtype != ct || out->dtype != PTERON_DTYPE_BOOL ||
            !dense_as(self, self->sizes, self->dim) || !dense_as(out, self->sizes, self->dim))
          return false;
        const float y = other_s.to<float>();
        const float* x = static_cast<const float*>(self->data);
        uint8_t* o = static_cast<uint8_t*>(out->data);
        parallel_for(0, numel(out), kGrain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) o[i] = x[i] == y;
        });
        return true;
      });
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::eq", "Scalar_out", PTERON_OPT_KEY, eq_scalar_out,
                         PTERON_KERNEL_PRIORITY, 0},
                        {"aten::where", "self_out", pteron_kernel_key_for_dtype(PTERON_DTYPE_BOOL),
                         where_self_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::logical_not", "out", pteron_kernel_key_for_dtype(PTERON_DTYPE_BOOL),
                         logical_not_out, PTERON_KERNEL_PRIORITY, 0})
