// SPDX-License-Identifier: BSD-3-Clause
// norm.cpp - optimized float32 aten::_softmax.out, aten::_log_softmax.out
// and aten::native_layer_norm.out.
//
// Fast path: the reduced dims are innermost in memory (the usual case:
// softmax over the last dim, layer norm over trailing dims of a contiguous
// tensor), so each row is a contiguous block handled by the ISA-dispatched
// Eigen row kernels (vectorised exp and sums), rows split over the thread
// pool. Any other dim order takes a strided path with the same results.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "opt_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "norm_checks.h"
#include "softmax.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

// Offset of the row-major index `r` over dims [0, count) of t.
int64_t lead_offset(const pteron_tensor* t, int32_t count, int64_t r) {
  int64_t off = 0;
  for (int32_t d = count - 1; d >= 0; --d) {
    const int64_t s = t->sizes[d];
    off += (r % s) * t->strides[d];
    r /= s;
  }
  return off;
}

// True when t's dims [0, dim) are in row-major order with unit innermost
// stride (size-1 dims ignored), i.e. it is contiguous in the standard order.
bool row_major(const pteron_tensor* t) {
  int64_t n = 0, st = 0;
  return collapse(t, 0, t->dim, &n, &st) && (st == 1 || n <= 1);
}

// ---- softmax ----------------------------------------------------------------

int32_t softmax_impl(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                     const char* op, bool log) {
  Args a{ctx, args, n, op};
  pteron_tensor *self = nullptr, *out = nullptr;
  int32_t d = 0;
  PTERON_CHECK_OK(read_softmax_args(a, &self, &out, &d));
  // Registered for float32 (PTERON_OPT_KEY); the float64 lanes are portable's.
  if (self->dtype != PTERON_DTYPE_FLOAT32) return unsupported_dtype(ctx, op, "self", self->dtype);
  const int64_t total = numel(self);
  if (total == 0) return PTERON_OK;
  const float* x = static_cast<const float*>(self->data);
  float* y = static_cast<float*>(out->data);
  if (self->dim == 0) {
    softmax_lane(x, 0, y, 0, 1, log);
    return PTERON_OK;
  }
  const int64_t len = self->sizes[d];
  bool same = true;
  for (int32_t i = 0; i < self->dim; ++i) same = same && self->strides[i] == out->strides[i];
  if (same && len > 1 && self->strides[d] == 1) {
    // Dense storage with the softmax dim innermost: lanes are the
    // consecutive blocks of len elements, in the same place in x and y.
    const IsaOps& isa = ops();
    const int64_t rows = total / len;
    const int64_t grain = len >= 16384 ? 1 : 16384 / len;
    parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
      isa.softmax_rows(x + r0 * len, y + r0 * len, r1 - r0, len, log);
    });
    return PTERON_OK;
  }
  const int64_t xs = self->strides[d], ys = out->strides[d];
  for_each_lane(self, out, d,
                [&](int64_t ox, int64_t oy) { softmax_lane(x + ox, xs, y + oy, ys, len, log); });
  return PTERON_OK;
}

constexpr pteron_kernel_fn softmax_out = softmax_kernel<softmax_impl, false>;
constexpr pteron_kernel_fn log_softmax_out = softmax_kernel<softmax_impl, true>;

// ---- layer norm -------------------------------------------------------------

// native_layer_norm.out(Tensor input, SymInt[] normalized_shape,
//   Tensor? weight, Tensor? bias, float eps, *, Tensor(a!) out0,
//   Tensor(b!) out1, Tensor(c!) out2)
int32_t layer_norm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  static const char* op = "aten::native_layer_norm.out";
  Args a{ctx, args, n, op};
  LayerNormOperands p;
  PTERON_CHECK_OK(read_layer_norm_args(a, &p));
  pteron_tensor *input = p.input, *weight = p.weight, *bias = p.bias;
  pteron_tensor *out0 = p.out0, *out1 = p.out1, *out2 = p.out2;
  const double eps = p.eps;
  const int32_t axis = p.axis;
  const size_t k = p.k;
  // Registered for float32 (PTERON_OPT_KEY); the float64 rows are portable's.
  if (input->dtype != PTERON_DTYPE_FLOAT32)
    return unsupported_dtype(ctx, op, "input", input->dtype);
  int64_t M = 0, N = 0;
  PTERON_CHECK_OK(resize_layer_norm_outs(a, p, &M, &N));
  if (M == 0) return PTERON_OK;

  const float* x = static_cast<const float*>(input->data);
  float* y = static_cast<float*>(out0->data);
  float* mean = static_cast<float*>(out1->data);
  float* rstd = static_cast<float*>(out2->data);
  const float feps = static_cast<float>(eps);
  const IsaOps& isa = ops();
  const bool fast = row_major(input) && row_major(out0) && row_major(out1) && row_major(out2) &&
                    (!weight || row_major(weight)) && (!bias || row_major(bias));
  if (fast) {
    const float* w = weight ? static_cast<const float*>(weight->data) : nullptr;
    const float* b = bias ? static_cast<const float*>(bias->data) : nullptr;
    const int64_t grain = N >= 8192 ? 1 : 8192 / (N > 0 ? N : 1);
    parallel_for(0, M, grain, [&](int64_t r0, int64_t r1) {
      isa.layer_norm_rows(x + r0 * N, y + r0 * N, r1 - r0, N, w, b, feps, mean + r0, rstd + r0);
    });
    return PTERON_OK;
  }
  // Strided path: each row gathered into scratch, normalised, scattered.
  ScratchPlan plan;
  const size_t irow = plan.add(2 * N), iw = plan.add(weight ? N : 0), ib = plan.add(bias ? N : 0);
  if (!plan.acquire(ctx)) return PTERON_ERROR_OUT_OF_MEMORY;
  float* row = plan.get(irow);
  float* res = row + N;
  const int64_t* inner = input->sizes + axis;
  int64_t dense[PTERON_MAX_DIM];
  dense_strides(inner, static_cast<int32_t>(k), dense);
  float* w = nullptr;
  float* b = nullptr;
  if (weight) {
    w = plan.get(iw);
    copy_strided(static_cast<const float*>(weight->data), weight->strides, w, dense, inner,
                 static_cast<int32_t>(k));
  }
  if (bias) {
    b = plan.get(ib);
    copy_strided(static_cast<const float*>(bias->data), bias->strides, b, dense, inner,
                 static_cast<int32_t>(k));
  }
  for (int64_t m = 0; m < M; ++m) {
    const int64_t xo = lead_offset(input, axis, m), yo = lead_offset(out0, axis, m);
    copy_strided(x + xo, input->strides + axis, row, dense, inner, static_cast<int32_t>(k));
    float mu = 0, rs = 0;
    isa.layer_norm_rows(row, res, 1, N, w, b, feps, &mu, &rs);
    copy_strided(res, dense, y + yo, out0->strides + axis, inner, static_cast<int32_t>(k));
    mean[lead_offset(out1, axis, m)] = mu;
    rstd[lead_offset(out2, axis, m)] = rs;
  }
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::_softmax", "out", PTERON_OPT_KEY, softmax_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::_log_softmax", "out", PTERON_OPT_KEY, log_softmax_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::native_layer_norm", "out", PTERON_OPT_KEY, layer_norm_out, PTERON_KERNEL_PRIORITY, 0})
