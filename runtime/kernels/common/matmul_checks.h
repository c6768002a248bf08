// matmul_checks.h - argument checks shared by the matrix-product operators
// (mm, bmm, addmm) of kernels_portable and kernels_optimized, so both report
// the same error for the same bad program. Shapes follow PyTorch's
// definitions: mm [n,k]x[k,m]; bmm [b,n,k]x[b,k,m]; addmm's self broadcasts
// to [n,m].
#pragma once

#include <cstdint>

#include "kernel_util.h"

namespace pteron::kern::ka {

// PTERON_ERROR_INVALID_PROGRAM unless a and b have one dtype.
inline int32_t same_dtype(pteron_kernel_context* ctx, const char* op, const char* a_name,
                          const pteron_tensor* a, const char* b_name, const pteron_tensor* b) {
  if (a->dtype != b->dtype)
    return fail(ctx, PTERON_ERROR_INVALID_PROGRAM,
                "%s: '%s' and '%s' must have the same dtype, got %s and %s", op, a_name, b_name,
                dtype_name(a->dtype), dtype_name(b->dtype));
  return PTERON_OK;
}

// PTERON_ERROR_SHAPE_MISMATCH unless t has `rank` dims.
inline int32_t check_rank(pteron_kernel_context* ctx, const char* op, const char* name,
                          const pteron_tensor* t, int32_t rank) {
  if (t->dim != rank)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: '%s' must be a %dD tensor, got %dD", op,
                name, rank, t->dim);
  return PTERON_OK;
}

// Rank, batch and inner-size checks of mm/addmm (rank 2) or bmm (rank 3)
// operands a @ b; PTERON_ERROR_SHAPE_MISMATCH naming the sizes.
inline int32_t check_product_shapes(pteron_kernel_context* ctx, const char* op,
                                    const char* a_name, const pteron_tensor* a,
                                    const char* b_name, const pteron_tensor* b, int32_t rank) {
  PTERON_CHECK_OK(check_rank(ctx, op, a_name, a, rank));
  PTERON_CHECK_OK(check_rank(ctx, op, b_name, b, rank));
  if (rank == 3 && a->sizes[0] != b->sizes[0])
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: batch sizes do not match (%lld and %lld)",
                op, static_cast<long long>(a->sizes[0]), static_cast<long long>(b->sizes[0]));
  if (a->sizes[rank - 1] != b->sizes[rank - 2])
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: inner sizes do not match (%lld x %lld and %lld x %lld)", op,
                static_cast<long long>(a->sizes[rank - 2]),
                static_cast<long long>(a->sizes[rank - 1]),
                static_cast<long long>(b->sizes[rank - 2]),
                static_cast<long long>(b->sizes[rank - 1]));
  return PTERON_OK;
}

// addmm's `self` must broadcast to `shape` [n, m]. On success `strides`
// holds self's element strides over [n, m] (0 along broadcast dims).
inline int32_t addmm_bias_strides(pteron_kernel_context* ctx, const char* op,
                                  const pteron_tensor* self, const int64_t shape[2],
                                  int64_t strides[2]) {
  if (self->dim > 2)
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: 'self' of rank %d cannot be expanded to [%lld, %lld]", op, self->dim,
                static_cast<long long>(shape[0]), static_cast<long long>(shape[1]));
  strides[0] = strides[1] = 0;
  for (int32_t i = 0; i < self->dim; ++i) {
    const int32_t od = 2 - self->dim + i;
    const int64_t s = self->sizes[i];
    if (s != shape[od] && s != 1)
      return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: 'self' size %lld at dim %d cannot be expanded to [%lld, %lld]", op,
                  static_cast<long long>(s), i, static_cast<long long>(shape[0]),
                  static_cast<long long>(shape[1]));
    strides[od] = s == 1 ? 0 : self->strides[i];
  }
  return PTERON_OK;
}

}  // namespace pteron::kern::ka
