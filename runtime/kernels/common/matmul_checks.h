// SPDX-License-Identifier: BSD-3-Clause
// matmul_checks.h - argument checks shared by the matrix-product operators
// (mm, bmm, addmm) of kernels_portable and kernels_optimized, so both report
// the same error for the same bad program. Shapes follow PyTorch's
// definitions: mm [n,k]x[k,m]; bmm [b,n,k]x[b,k,m]; addmm's self broadcasts
// to [n,m].
#pragma once

#include <cstdint>

#include "kernel_util.h"
#include "arg_reading.h"
#include "tensor_checks.h"

namespace pteron::kern {

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
inline int32_t check_product_shapes(pteron_kernel_context* ctx, const char* op, const char* a_name,
                                    const pteron_tensor* a, const char* b_name,
                                    const pteron_tensor* b, int32_t rank) {
  PTERON_CHECK_OK(check_rank(ctx, op, a_name, a, rank));
  PTERON_CHECK_OK(check_rank(ctx, op, b_name, b, rank));
  if (rank == 3 && a->sizes[0] != b->sizes[0])
    return fail(ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: batch sizes do not match (%lld and %lld)",
                op, static_cast<long long>(a->sizes[0]), static_cast<long long>(b->sizes[0]));
  if (a->sizes[rank - 1] != b->sizes[rank - 2])
    return fail(
        ctx, PTERON_ERROR_SHAPE_MISMATCH,
        "%s: inner sizes do not match (%lld x %lld and %lld x %lld)", op,
        static_cast<long long>(a->sizes[rank - 2]), static_cast<long long>(a->sizes[rank - 1]),
        static_cast<long long>(b->sizes[rank - 2]), static_cast<long long>(b->sizes[rank - 1]));
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

// The operands of a matrix product, read from the operator's arguments:
// mm.out(self, mat2, *, out)          a = self, b = mat2, rank 2
// bmm.out(self, mat2, *, out)         a = self, b = mat2, rank 3
// addmm.out(self, mat1, mat2, *, beta, alpha, out)
//                                     bias = self, a = mat1, b = mat2, rank 2
enum class ProductKind { mm, bmm, addmm };
struct ProductOperands {
  pteron_tensor *bias = nullptr, *a = nullptr, *b = nullptr, *out = nullptr;
  Scalar beta, alpha;     // addmm only
  int64_t shape[3] = {};  // out's sizes (rank entries)
  int32_t rank = 2;
  int64_t bias_strides[2] = {};  // addmm: self's strides over [n, m]
};

// Reads and checks the arguments of `kind` (arity, dtypes, storage, ranks,
// batch/inner sizes, addmm's broadcast); does not resize `out`.
// float32_only: the caller computes float32 only (PTERON_ERROR_UNSUPPORTED_DTYPE
// otherwise); else any supported dtype but bool, float16 and bfloat16 included.
inline int32_t read_product(const Args& args, ProductKind kind, bool float32_only,
                            ProductOperands* p) {
  pteron_kernel_context* ctx = args.ctx;
  const char* op = args.op;
  const bool addmm = kind == ProductKind::addmm;
  const char* a_name = addmm ? "mat1" : "self";
  p->rank = kind == ProductKind::bmm ? 3 : 2;
  PTERON_CHECK_OK(args.arity(addmm ? 6 : 3));
  size_t i = 0;
  if (addmm) PTERON_CHECK_OK(args.tensor(i++, "self", &p->bias));
  PTERON_CHECK_OK(args.tensor(i++, a_name, &p->a));
  PTERON_CHECK_OK(args.tensor(i++, "mat2", &p->b));
  if (addmm) {
    PTERON_CHECK_OK(read_scalar(args, i++, "beta", &p->beta));
    PTERON_CHECK_OK(read_scalar(args, i++, "alpha", &p->alpha));
  }
  PTERON_CHECK_OK(args.tensor(i, "out", &p->out));
  const int32_t dt = p->a->dtype;
  if (float32_only ? dt != PTERON_DTYPE_FLOAT32
                   : (!is_supported_half(dt) || dt == PTERON_DTYPE_BOOL))
    return unsupported_dtype(ctx, op, a_name, dt);
  PTERON_CHECK_OK(same_dtype(ctx, op, a_name, p->a, "mat2", p->b));
  if (addmm) PTERON_CHECK_OK(same_dtype(ctx, op, "self", p->bias, "mat2", p->b));
  PTERON_CHECK_OK(same_dtype(ctx, op, a_name, p->a, "out", p->out));
  if (addmm) PTERON_CHECK_OK(check_tensor(ctx, op, "self", p->bias));
  PTERON_CHECK_OK(check_tensor(ctx, op, a_name, p->a));
  PTERON_CHECK_OK(check_tensor(ctx, op, "mat2", p->b));
  PTERON_CHECK_OK(check_product_shapes(ctx, op, a_name, p->a, "mat2", p->b, p->rank));
  const int32_t r = p->rank;
  if (r == 3) p->shape[0] = p->a->sizes[0];
  p->shape[r - 2] = p->a->sizes[r - 2];
  p->shape[r - 1] = p->b->sizes[r - 1];
  if (addmm) PTERON_CHECK_OK(addmm_bias_strides(ctx, op, p->bias, p->shape, p->bias_strides));
  return PTERON_OK;
}

}  // namespace pteron::kern
