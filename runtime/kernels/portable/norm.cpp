// SPDX-License-Identifier: BSD-3-Clause
// norm.cpp - portable normalisation kernels:
// _native_batch_norm_legit_no_training (inference batch norm with running
// statistics) and native_layer_norm. float32 and float64; statistics are
// computed in double.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "kernel_util.h"
#include "strided_views.h"
#include "norm_checks.h"
#include "tensor_checks.h"
#include "arg_reading.h"
#include "channel_norm_checks.h"

#include "real_access.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

// float32, float64, float16 or bfloat16, computed in double (real_access.h).
using pteron::kern::real::load;
using pteron::kern::real::store;

// ---- _native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight,
//   Tensor? bias, Tensor running_mean, Tensor running_var, float momentum,
//   float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2): the
//   arguments are read and checked by channel_norm_checks.h; ATen returns
//   empty save_mean / save_invstd in inference mode ----------------------------

int32_t batch_norm_no_training_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                   size_t n) {
  Args a{ctx, args, n, "aten::_native_batch_norm_legit_no_training.out"};
  kern::ChannelNormOperands p;
  PTERON_CHECK_OK(kern::read_batch_norm_no_training(a, &p));
  const pteron_tensor *input = p.input, *weight = p.weight, *bias = p.bias;
  const pteron_tensor *mean = p.mean, *var = p.var;
  pteron_tensor* out0 = p.out0;
  const int32_t dt = input->dtype;
  const int64_t N = p.N, C = p.C;
  const double eps = p.eps;
  if (pteron::kern::numel(input) == 0) return PTERON_OK;
  for (int64_t c = 0; c < C; ++c) {
    const double invstd = 1.0 / std::sqrt(load(var, c * var->strides[0]) + eps);
    const double w = weight ? load(weight, c * weight->strides[0]) : 1.0;
    const double b = bias ? load(bias, c * bias->strides[0]) : 0.0;
    const double m = load(mean, c * mean->strides[0]);
    const double scale = invstd * w;
    const double shift = b - m * scale;
    for (int64_t i = 0; i < N; ++i) {
      const kern::View src =
          kern::sub_view(input, 2, i * input->strides[0] + c * input->strides[1]);
      const kern::View dst = kern::sub_view(out0, 2, i * out0->strides[0] + c * out0->strides[1]);
      if (dt == PTERON_DTYPE_FLOAT32) {
        const float* x = static_cast<const float*>(input->data);
        float* y = static_cast<float*>(out0->data);
        kern::zip_offsets(src, dst, [&](int64_t s, int64_t d) {
          y[d] = static_cast<float>(static_cast<double>(x[s]) * scale + shift);
        });
      } else if (dt == PTERON_DTYPE_FLOAT64) {
        const double* x = static_cast<const double*>(input->data);
        double* y = static_cast<double*>(out0->data);
        kern::zip_offsets(src, dst, [&](int64_t s, int64_t d) { y[d] = x[s] * scale + shift; });
      } else {  // float16, bfloat16
        kern::zip_offsets(src, dst, [&](int64_t s, int64_t d) {
          store(out0, d, load(input, s) * scale + shift);
        });
      }
    }
  }
  return PTERON_OK;
}

// ---- native_layer_norm.out(Tensor input, SymInt[] normalized_shape,
//   Tensor? weight, Tensor? bias, float eps, *, Tensor(a!) out0,
//   Tensor(b!) out1, Tensor(c!) out2) ----------------------------------------

int32_t layer_norm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::native_layer_norm.out"};
  kern::LayerNormOperands p;
  PTERON_CHECK_OK(kern::read_layer_norm_args(a, &p));
  pteron_tensor *input = p.input, *weight = p.weight, *bias = p.bias;
  pteron_tensor *out0 = p.out0, *out1 = p.out1, *out2 = p.out2;
  const double eps = p.eps;
  const int32_t axis = p.axis;
  int64_t stat_sizes[PTERON_MAX_DIM];
  int64_t M = 1;
  for (int32_t i = 0; i < input->dim; ++i) {
    stat_sizes[i] = i < axis ? input->sizes[i] : 1;
    if (i < axis) M *= input->sizes[i];
  }
  int64_t N = 1;
  for (int32_t i = axis; i < input->dim; ++i) N *= input->sizes[i];
  if (M == 0) N = 0;  // nothing to normalise; avoid reading rows
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out0", out0, input->sizes, input->dim));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out1", out1, stat_sizes, input->dim));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out2", out2, stat_sizes, input->dim));
  if (M == 0) return PTERON_OK;

  // Scratch: the current row, then weight and bias in logical order.
  double* buf = nullptr;
  if (N > 0) {
    if (N > std::numeric_limits<int64_t>::max() / 32)
      return fail(ctx, PTERON_ERROR_OUT_OF_MEMORY, "%s: row too large", a.op);
    buf = static_cast<double*>(
        pteron_kernel_scratch(ctx, static_cast<size_t>(N) * 3 * sizeof(double)));
    if (!buf)
      return fail(ctx, PTERON_ERROR_OUT_OF_MEMORY,
                  "%s: no scratch memory for a row of %lld elements", a.op, (long long)N);
  }
  double* row = buf;
  double* wv = buf ? buf + N : nullptr;
  double* bv = buf ? buf + 2 * N : nullptr;
  for (int64_t j = 0; j < N; ++j) {
    wv[j] = 1.0;
    bv[j] = 0.0;
  }
  if (weight && N > 0) {
    int64_t j = 0;
    kern::for_each_offset(kern::view_of(weight), [&](int64_t off) { wv[j++] = load(weight, off); });
  }
  if (bias && N > 0) {
    int64_t j = 0;
    kern::for_each_offset(kern::view_of(bias), [&](int64_t off) { bv[j++] = load(bias, off); });
  }

  // Leading (row) offsets of input, out0, out1 and out2, walked in lockstep.
  kern::Walker wi(kern::lead_view(input, axis)), wo(kern::lead_view(out0, axis)),
      wm(kern::lead_view(out1, axis)), wr(kern::lead_view(out2, axis));
  for (int64_t m = 0; m < M; ++m) {
    const kern::View src = kern::sub_view(input, axis, wi.off);
    const kern::View dst = kern::sub_view(out0, axis, wo.off);
    double mean = 0, var = std::numeric_limits<double>::quiet_NaN();
    if (N > 0) {
      int64_t j = 0;
      double sum = 0;
      kern::for_each_offset(src, [&](int64_t off) {
        row[j] = load(input, off);
        sum += row[j++];
      });
      mean = sum / static_cast<double>(N);
      double sq = 0;
      for (j = 0; j < N; ++j) {
        const double d = row[j] - mean;
        sq += d * d;
      }
      var = sq / static_cast<double>(N);
    }
    const double rstd = 1.0 / std::sqrt(var + eps);
    if (N > 0) {
      int64_t j = 0;
      kern::for_each_offset(dst, [&](int64_t off) {
        store(out0, off, (row[j] - mean) * rstd * wv[j] + bv[j]);
        ++j;
      });
    }
    store(out1, wm.off, mean);
    store(out2, wr.off, rstd);
    if (m + 1 < M) {
      wi.advance(1);
      wo.advance(1);
      wm.advance(1);
      wr.advance(1);
    }
  }
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS({"aten::_native_batch_norm_legit_no_training", "out", nullptr,
                         batch_norm_no_training_out, PTERON_KERNEL_PRIORITY, 0},
                        {"aten::native_layer_norm", "out", nullptr, layer_norm_out,
                         PTERON_KERNEL_PRIORITY, 0})
