// SPDX-License-Identifier: BSD-3-Clause
// channel_norm_checks.h - reading and checking the arguments of
// aten::_native_batch_norm_legit_no_training.out and
// aten::native_group_norm.out (header-only, private to the kernel
// libraries). kernels_portable (norm.cpp) and kernels_optimized
// (channel_norm.cpp) both read them here, so both libraries accept the same
// programs and report the same errors.
//
// Signatures (PyTorch native_functions.yaml):
//   _native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight,
//     Tensor? bias, Tensor running_mean, Tensor running_var, float momentum,
//     float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
//   native_group_norm.out(Tensor input, Tensor? weight, Tensor? bias,
//     SymInt N, SymInt C, SymInt HxW, int group, float eps, *,
//     Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2)
// input (N, C, ...) float32, float64, float16 or bfloat16 (kernels_optimized
// registers for float32 only, so it sees float32 inputs alone); weight / bias
// / running stats 1-D of C elements and input's dtype; out0 input's shape;
// group norm's out1 / out2 (mean / rstd) are (N, group); batch norm's out1 /
// out2 become empty where the program lets them shrink (ATen returns empty
// saved statistics).
#pragma once

#include <cstdint>

#include "kernel_util.h"
#include "real_access.h"
#include "tensor_checks.h"

namespace pteron::kern {

inline int32_t norm_same_dtype(const Args& a, const pteron_tensor* t, const char* name,
                               int32_t dt) {
  if (t && t->dtype != dt)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: '%s' has dtype %s but input has dtype %s (mixed dtypes are not supported)",
                a.op, name, dtype_name(t->dtype), dtype_name(dt));
  return PTERON_OK;
}

inline int32_t norm_per_channel(const Args& a, const pteron_tensor* t, const char* name,
                                int64_t C) {
  if (t && (t->dim != 1 || t->sizes[0] != C))
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: '%s' should be 1-D with %lld elements (the channel count)", a.op, name,
                (long long)C);
  return PTERON_OK;
}

inline int32_t norm_rank_at_least_2(const Args& a, const pteron_tensor* input) {
  if (input->dim < 2)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: input must have at least 2 dims (N, C, ...), got rank %d", a.op,
                (int)input->dim);
  return PTERON_OK;
}

// A tensor the program lets shrink becomes empty; a static one stays.
inline int32_t norm_empty_if_allowed(const Args& a, pteron_tensor* t, const char* name) {
  if (t->dynamism == PTERON_SHAPE_STATIC || t->dim == 0) return PTERON_OK;
  if (numel(t) == 0) return PTERON_OK;
  int64_t sizes[PTERON_MAX_DIM];
  for (int32_t i = 0; i < t->dim; ++i) sizes[i] = t->sizes[i];
  sizes[0] = 0;
  return resize_out(a.ctx, a.op, name, t, sizes, t->dim);
}

struct ChannelNormOperands {
  pteron_tensor *input = nullptr, *weight = nullptr, *bias = nullptr;
  pteron_tensor *mean = nullptr, *var = nullptr;  // batch norm's running statistics
  pteron_tensor *out0 = nullptr, *out1 = nullptr, *out2 = nullptr;
  int64_t N = 0, C = 0, HxW = 0, group = 0;  // group norm's integers
  double eps = 0;
};

// Reads and checks _native_batch_norm_legit_no_training.out; resizes the
// outs. `op` is the operator's name for messages.
inline int32_t read_batch_norm_no_training(const Args& a, ChannelNormOperands* p) {
  PTERON_CHECK_OK(a.arity(10));
  double momentum = 0;  // only used when training
  PTERON_CHECK_OK(tensor_arg(a, 0, "input", &p->input));
  PTERON_CHECK_OK(opt_tensor_arg(a, 1, "weight", &p->weight));
  PTERON_CHECK_OK(opt_tensor_arg(a, 2, "bias", &p->bias));
  PTERON_CHECK_OK(tensor_arg(a, 3, "running_mean", &p->mean));
  PTERON_CHECK_OK(tensor_arg(a, 4, "running_var", &p->var));
  PTERON_CHECK_OK(a.real(5, "momentum", &momentum));
  PTERON_CHECK_OK(a.real(6, "eps", &p->eps));
  PTERON_CHECK_OK(a.tensor(7, "out0", &p->out0));
  PTERON_CHECK_OK(a.tensor(8, "out1", &p->out1));
  PTERON_CHECK_OK(a.tensor(9, "out2", &p->out2));
  const int32_t dt = p->input->dtype;
  if (!real::is_float_half_dtype(dt)) return unsupported_dtype(a.ctx, a.op, "input", dt);
  PTERON_CHECK_OK(norm_same_dtype(a, p->weight, "weight", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, p->bias, "bias", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, p->mean, "running_mean", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, p->var, "running_var", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, p->out0, "out0", dt));
  PTERON_CHECK_OK(norm_rank_at_least_2(a, p->input));
  p->N = p->input->sizes[0];
  p->C = p->input->sizes[1];
  PTERON_CHECK_OK(norm_per_channel(a, p->weight, "weight", p->C));
  PTERON_CHECK_OK(norm_per_channel(a, p->bias, "bias", p->C));
  PTERON_CHECK_OK(norm_per_channel(a, p->mean, "running_mean", p->C));
  PTERON_CHECK_OK(norm_per_channel(a, p->var, "running_var", p->C));
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out0", p->out0, p->input->sizes, p->input->dim));
  PTERON_CHECK_OK(norm_empty_if_allowed(a, p->out1, "out1"));
  return norm_empty_if_allowed(a, p->out2, "out2");
}

// Reads and checks native_group_norm.out; resizes the outs.
inline int32_t read_group_norm(const Args& a, ChannelNormOperands* p) {
  PTERON_CHECK_OK(a.arity(11));
  PTERON_CHECK_OK(tensor_arg(a, 0, "input", &p->input));
  PTERON_CHECK_OK(opt_tensor_arg(a, 1, "weight", &p->weight));
  PTERON_CHECK_OK(opt_tensor_arg(a, 2, "bias", &p->bias));
  PTERON_CHECK_OK(a.integer(3, "N", &p->N));
  PTERON_CHECK_OK(a.integer(4, "C", &p->C));
  PTERON_CHECK_OK(a.integer(5, "HxW", &p->HxW));
  PTERON_CHECK_OK(a.integer(6, "group", &p->group));
  PTERON_CHECK_OK(a.real(7, "eps", &p->eps));
  PTERON_CHECK_OK(a.tensor(8, "out0", &p->out0));
  PTERON_CHECK_OK(a.tensor(9, "out1", &p->out1));
  PTERON_CHECK_OK(a.tensor(10, "out2", &p->out2));
  pteron_tensor* input = p->input;
  const int32_t dt = input->dtype;
  if (!real::is_float_half_dtype(dt)) return unsupported_dtype(a.ctx, a.op, "input", dt);
  PTERON_CHECK_OK(norm_same_dtype(a, p->weight, "weight", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, p->bias, "bias", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, p->out0, "out0", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, p->out1, "out1", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, p->out2, "out2", dt));
  PTERON_CHECK_OK(norm_rank_at_least_2(a, input));
  int64_t spatial = 1;
  for (int32_t i = 2; i < input->dim; ++i) spatial *= input->sizes[i];
  if (input->sizes[0] != p->N || input->sizes[1] != p->C || spatial != p->HxW)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: N=%lld, C=%lld, HxW=%lld do not match the input's shape", a.op,
                (long long)p->N, (long long)p->C, (long long)p->HxW);
  if (p->group <= 0 || p->C % p->group != 0)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: expected the number of channels (%lld) to be divisible by group (%lld)", a.op,
                (long long)p->C, (long long)p->group);
  PTERON_CHECK_OK(norm_per_channel(a, p->weight, "weight", p->C));
  PTERON_CHECK_OK(norm_per_channel(a, p->bias, "bias", p->C));
  PTERON_CHECK_OK(reject_alias(a.ctx, a.op, "out0", p->out0, input));
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out0", p->out0, input->sizes, input->dim));
  const int64_t stat_sizes[2] = {p->N, p->group};
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out1", p->out1, stat_sizes, 2));
  return resize_out(a.ctx, a.op, "out2", p->out2, stat_sizes, 2);
}

}  // namespace pteron::kern
