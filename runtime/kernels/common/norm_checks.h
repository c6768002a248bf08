// SPDX-License-Identifier: BSD-3-Clause
// norm_checks.h - reading and checking aten::native_layer_norm.out's
// arguments, shared by kernels_portable and kernels_optimized so both accept
// the same programs and report the same errors (header-only, private to the
// kernel libraries).
//
// Signature (PyTorch native_functions.yaml): native_layer_norm.out(Tensor
// input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps,
// *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2). input [*, ns...],
// weight and bias of shape normalized_shape; out0 has input's shape, out1
// (mean) and out2 (rstd) keep input's leading dims with size 1 elsewhere
// (resize_layer_norm_outs).
#pragma once

#include <cstdint>
#include <initializer_list>

#include "kernel_util.h"
#include "tensor_checks.h"

namespace pteron::kern {

struct LayerNormOperands {
  pteron_tensor *input = nullptr, *weight = nullptr, *bias = nullptr;
  pteron_tensor *out0 = nullptr, *out1 = nullptr, *out2 = nullptr;
  const int64_t* ns = nullptr;  // normalized_shape
  size_t k = 0;                 // its length
  double eps = 0;
  int32_t axis = 0;  // first normalized dim of input
};

// Reads and checks the arguments: input float32, float64, float16 or
// bfloat16 (weight, bias and the outs of the same dtype), normalized_shape
// non-empty and equal to input's trailing sizes, weight and bias of that shape. The outs are left
// to the caller to resize.
inline int32_t read_layer_norm_args(const Args& a, LayerNormOperands* p) {
  PTERON_CHECK_OK(a.arity(8));
  PTERON_CHECK_OK(tensor_arg(a, 0, "input", &p->input));
  PTERON_CHECK_OK(a.int_list(1, "normalized_shape", &p->ns, &p->k));
  PTERON_CHECK_OK(opt_tensor_arg(a, 2, "weight", &p->weight));
  PTERON_CHECK_OK(opt_tensor_arg(a, 3, "bias", &p->bias));
  PTERON_CHECK_OK(a.real(4, "eps", &p->eps));
  PTERON_CHECK_OK(a.tensor(5, "out0", &p->out0));
  PTERON_CHECK_OK(a.tensor(6, "out1", &p->out1));
  PTERON_CHECK_OK(a.tensor(7, "out2", &p->out2));
  const pteron_tensor* input = p->input;
  const int32_t dt = input->dtype;
  if (dt != PTERON_DTYPE_FLOAT32 && dt != PTERON_DTYPE_FLOAT64 && dt != PTERON_DTYPE_FLOAT16 &&
      dt != PTERON_DTYPE_BFLOAT16)
    return unsupported_dtype(a.ctx, a.op, "input", dt);
  const pteron_tensor* same[5] = {p->weight, p->bias, p->out0, p->out1, p->out2};
  const char* names[5] = {"weight", "bias", "out0", "out1", "out2"};
  for (int i = 0; i < 5; ++i)
    if (same[i] && same[i]->dtype != dt)
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: '%s' has dtype %s but input has dtype %s (mixed dtypes "
                  "are not supported)",
                  a.op, names[i], dtype_name(same[i]->dtype), dtype_name(dt));
  const size_t k = p->k;
  if (k == 0)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: normalized_shape must have at least one element", a.op);
  if (k > static_cast<size_t>(input->dim))
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: normalized_shape has %zu dims but input has rank %d", a.op, k,
                (int)input->dim);
  p->axis = input->dim - static_cast<int32_t>(k);
  for (size_t i = 0; i < k; ++i)
    if (input->sizes[p->axis + i] != p->ns[i])
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                  "%s: normalized_shape[%zu] = %lld does not match input size "
                  "%lld in dim %d",
                  a.op, i, (long long)p->ns[i], (long long)input->sizes[p->axis + i],
                  (int)(p->axis + i));
  for (const pteron_tensor* t : {p->weight, p->bias}) {
    if (!t) continue;
    bool ok = t->dim == static_cast<int32_t>(k);
    for (size_t i = 0; ok && i < k; ++i) ok = t->sizes[i] == p->ns[i];
    if (!ok)
      return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH, "%s: %s must have the shape normalized_shape",
                  a.op, t == p->weight ? "weight" : "bias");
  }
  return PTERON_OK;
}

// Resizes out0 to input's shape and out1 / out2 (mean, rstd) to input's
// leading dims with size 1 in the normalized ones. *rows: how many rows are
// normalized (the product of the leading sizes), *row_len: their length.
inline int32_t resize_layer_norm_outs(const Args& a, const LayerNormOperands& p, int64_t* rows,
                                      int64_t* row_len) {
  const pteron_tensor* input = p.input;
  int64_t stat_sizes[PTERON_MAX_DIM];
  int64_t M = 1, N = 1;
  for (int32_t i = 0; i < input->dim; ++i) {
    stat_sizes[i] = i < p.axis ? input->sizes[i] : 1;
    if (i < p.axis)
      M *= input->sizes[i];
    else
      N *= input->sizes[i];
  }
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out0", p.out0, input->sizes, input->dim));
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out1", p.out1, stat_sizes, input->dim));
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out2", p.out2, stat_sizes, input->dim));
  *rows = M;
  *row_len = N;
  return PTERON_OK;
}

}  // namespace pteron::kern
