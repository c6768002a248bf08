// SPDX-License-Identifier: BSD-3-Clause
// norm.cpp - portable normalisation kernels: native_layer_norm.out,
// native_group_norm.out, _native_batch_norm_legit_no_training.out
// (inference with running statistics), _native_batch_norm_legit.out
// (training updates running_mean / running_var in place, inference uses
// them) and _native_batch_norm_legit.no_stats_out. float32, float64,
// float16 and bfloat16; statistics in double; any dim order.
//
// As in ATen: the normalisation uses the biased variance; save_invstd is
// 1 / sqrt(var + eps); training updates running = (1 - momentum) * running
// + momentum * batch, with the unbiased variance for running_var.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "arg_reading.h"
#include "channel_norm_checks.h"
#include "kernel_util.h"
#include "norm_checks.h"
#include "real_access.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using pteron::kern::Args;
using pteron::kern::fail;
namespace kern = pteron::kern;

// float32, float64, float16 or bfloat16, computed in double (real_access.h).
using pteron::kern::real::load;
using pteron::kern::real::store;
bool is_norm_dtype(int32_t d) { return pteron::kern::real::is_float_half_dtype(d); }

// The shared checks (channel_norm_checks.h).
using kern::norm_per_channel;
using kern::norm_same_dtype;

// Sum and sum of squared deviations of the (n, c) planes of `x` for n in
// [0, N), c in [c0, c1): two passes, in double.
void plane_stats(const pteron_tensor* x, int64_t n0, int64_t n1, int64_t c0, int64_t c1,
                 double* mean, double* m2, int64_t* count) {
  double sum = 0;
  int64_t cnt = 0;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t c = c0; c < c1; ++c)
      kern::for_each_offset(kern::sub_view(x, 2, n * x->strides[0] + c * x->strides[1]),
                            [&](int64_t off) {
                              sum += load(x, off);
                              ++cnt;
                            });
  const double mu = cnt ? sum / static_cast<double>(cnt) : 0.0;
  double sq = 0;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t c = c0; c < c1; ++c)
      kern::for_each_offset(kern::sub_view(x, 2, n * x->strides[0] + c * x->strides[1]),
                            [&](int64_t off) {
                              const double d = load(x, off) - mu;
                              sq += d * d;
                            });
  *mean = mu;
  *m2 = sq;
  *count = cnt;
}

// y[n, c, ...] = x[n, c, ...] * scale + shift (x and y of one dtype).
void affine_plane(const pteron_tensor* x, pteron_tensor* y, int64_t n, int64_t c, double scale,
                  double shift) {
  const kern::View src = kern::sub_view(x, 2, n * x->strides[0] + c * x->strides[1]);
  const kern::View dst = kern::sub_view(y, 2, n * y->strides[0] + c * y->strides[1]);
  if (x->dtype == PTERON_DTYPE_FLOAT32 && y->dtype == PTERON_DTYPE_FLOAT32) {
    const float* xd = static_cast<const float*>(x->data);
    float* yd = static_cast<float*>(y->data);
    kern::zip_offsets(src, dst, [&](int64_t s, int64_t d) {
      yd[d] = static_cast<float>(static_cast<double>(xd[s]) * scale + shift);
    });
  } else if (x->dtype == PTERON_DTYPE_FLOAT64 && y->dtype == PTERON_DTYPE_FLOAT64) {
    const double* xd = static_cast<const double*>(x->data);
    double* yd = static_cast<double*>(y->data);
    kern::zip_offsets(src, dst, [&](int64_t s, int64_t d) { yd[d] = xd[s] * scale + shift; });
  } else {  // float16, bfloat16
    kern::zip_offsets(src, dst,
                      [&](int64_t s, int64_t d) { store(y, d, load(x, s) * scale + shift); });
  }
}

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
    for (int64_t i = 0; i < N; ++i) affine_plane(input, out0, i, c, scale, shift);
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
  int64_t M = 0, N = 0;
  PTERON_CHECK_OK(kern::resize_layer_norm_outs(a, p, &M, &N));
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

// ---- native_group_norm.out(Tensor input, Tensor? weight, Tensor? bias,
//   SymInt N, SymInt C, SymInt HxW, int group, float eps, *, Tensor(a!) out0,
//   Tensor(b!) out1, Tensor(c!) out2): out1 / out2 are mean / rstd of shape
//   (N, group) -----------------------------------------------------------------

int32_t group_norm_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::native_group_norm.out"};
  kern::ChannelNormOperands p;
  PTERON_CHECK_OK(kern::read_group_norm(a, &p));
  const pteron_tensor *input = p.input, *weight = p.weight, *bias = p.bias;
  pteron_tensor *out0 = p.out0, *out1 = p.out1, *out2 = p.out2;
  const int64_t N = p.N, C = p.C, G = p.group;
  const double eps = p.eps;
  const int64_t D = C / G;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t g = 0; g < G; ++g) {
      double mean = 0, m2 = 0;
      int64_t cnt = 0;
      plane_stats(input, b, b + 1, g * D, (g + 1) * D, &mean, &m2, &cnt);
      const double var = cnt ? m2 / static_cast<double>(cnt) : 0.0;
      const double rstd = 1.0 / std::sqrt(var + eps);
      for (int64_t c = g * D; c < (g + 1) * D; ++c) {
        const double w = weight ? load(weight, c * weight->strides[0]) : 1.0;
        const double bb = bias ? load(bias, c * bias->strides[0]) : 0.0;
        affine_plane(input, out0, b, c, rstd * w, bb - mean * rstd * w);
      }
      store(out1, b * out1->strides[0] + g * out1->strides[1], mean);
      store(out2, b * out2->strides[0] + g * out2->strides[1], rstd);
    }
  return PTERON_OK;
}

// ---- batch norm with batch statistics ---------------------------------------

struct BatchNorm {
  pteron_tensor *input = nullptr, *weight = nullptr, *bias = nullptr;
  pteron_tensor *rmean = nullptr, *rvar = nullptr;  // both or neither
  pteron_tensor *out = nullptr, *save_mean = nullptr, *save_invstd = nullptr;
  bool training = false;
  double momentum = 0, eps = 0;
};

int32_t batch_norm_run(const Args& a, BatchNorm& B) {
  const int32_t dt = B.input->dtype;
  if (!is_norm_dtype(dt)) return kern::unsupported_dtype(a.ctx, a.op, "input", dt);
  PTERON_CHECK_OK(norm_same_dtype(a, B.weight, "weight", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, B.bias, "bias", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, B.rmean, "running_mean", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, B.rvar, "running_var", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, B.out, "out", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, B.save_mean, "save_mean", dt));
  PTERON_CHECK_OK(norm_same_dtype(a, B.save_invstd, "save_invstd", dt));
  const pteron_tensor* x = B.input;
  if (x->dim < 2)
    return fail(a.ctx, PTERON_ERROR_SHAPE_MISMATCH,
                "%s: input must have at least 2 dims (N, C, ...), got rank %d", a.op, (int)x->dim);
  const int64_t N = x->sizes[0], C = x->sizes[1];
  PTERON_CHECK_OK(norm_per_channel(a, B.weight, "weight", C));
  PTERON_CHECK_OK(norm_per_channel(a, B.bias, "bias", C));
  PTERON_CHECK_OK(norm_per_channel(a, B.rmean, "running_mean", C));
  PTERON_CHECK_OK(norm_per_channel(a, B.rvar, "running_var", C));
  if (!B.training && !B.rmean)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: inference without running statistics has nothing to normalise with", a.op);
  for (const pteron_tensor* o : {B.out, B.save_mean, B.save_invstd})
    PTERON_CHECK_OK(kern::reject_alias(a.ctx, a.op, "out", o, x, B.rmean, B.rvar));
  PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, "out", B.out, x->sizes, x->dim));
  // ATen gives (C,) statistics in training and empty ones in inference; a
  // static out keeps its declared shape.
  int64_t stat = B.training ? C : 0;
  for (pteron_tensor* t : {B.save_mean, B.save_invstd}) {
    const char* nm = t == B.save_mean ? "save_mean" : "save_invstd";
    if (!B.training && (t->dynamism == PTERON_SHAPE_STATIC || kern::numel(t) == 0)) continue;
    PTERON_CHECK_OK(kern::resize_out(a.ctx, a.op, nm, t, &stat, 1));
  }
  int64_t spatial = 1;
  for (int32_t i = 2; i < x->dim; ++i) spatial *= x->sizes[i];
  if (B.training && N * spatial == 0 && C > 0)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: training needs more than 0 values per channel", a.op);
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0, invstd = 0;
    if (B.training) {
      double m2 = 0;
      int64_t cnt = 0;
      plane_stats(x, 0, N, c, c + 1, &mean, &m2, &cnt);
      invstd = 1.0 / std::sqrt(m2 / static_cast<double>(cnt) + B.eps);
      store(B.save_mean, c * B.save_mean->strides[0], mean);
      store(B.save_invstd, c * B.save_invstd->strides[0], invstd);
      if (B.rmean) {
        const int64_t om = c * B.rmean->strides[0], ov = c * B.rvar->strides[0];
        const double unbiased =
            cnt > 1 ? m2 / static_cast<double>(cnt - 1) : std::numeric_limits<double>::infinity();
        store(B.rmean, om, (1 - B.momentum) * load(B.rmean, om) + B.momentum * mean);
        store(B.rvar, ov, (1 - B.momentum) * load(B.rvar, ov) + B.momentum * unbiased);
      }
    } else {
      mean = load(B.rmean, c * B.rmean->strides[0]);
      invstd = 1.0 / std::sqrt(load(B.rvar, c * B.rvar->strides[0]) + B.eps);
    }
    const double w = B.weight ? load(B.weight, c * B.weight->strides[0]) : 1.0;
    const double b = B.bias ? load(B.bias, c * B.bias->strides[0]) : 0.0;
    for (int64_t i = 0; i < N; ++i) affine_plane(x, B.out, i, c, invstd * w, b - mean * invstd * w);
  }
  return PTERON_OK;
}

// _native_batch_norm_legit.out(Tensor input, Tensor? weight, Tensor? bias,
//   Tensor(a!) running_mean, Tensor(b!) running_var, bool training,
//   float momentum, float eps, *, Tensor(d!) out, Tensor(e!) save_mean,
//   Tensor(f!) save_invstd) and _native_batch_norm_legit.no_stats_out (the
//   same without running_mean and running_var).
int32_t batch_norm_legit(const Args& a, bool running_stats) {
  const size_t k = running_stats ? 2 : 0;  // the arguments after bias move by k
  PTERON_CHECK_OK(a.arity(9 + k));
  BatchNorm B;
  PTERON_CHECK_OK(kern::tensor_arg(a, 0, "input", &B.input));
  PTERON_CHECK_OK(kern::opt_tensor_arg(a, 1, "weight", &B.weight));
  PTERON_CHECK_OK(kern::opt_tensor_arg(a, 2, "bias", &B.bias));
  if (running_stats) {
    PTERON_CHECK_OK(kern::tensor_arg(a, 3, "running_mean", &B.rmean));
    PTERON_CHECK_OK(kern::tensor_arg(a, 4, "running_var", &B.rvar));
  }
  PTERON_CHECK_OK(a.boolean(3 + k, "training", &B.training));
  PTERON_CHECK_OK(a.real(4 + k, "momentum", &B.momentum));
  PTERON_CHECK_OK(a.real(5 + k, "eps", &B.eps));
  PTERON_CHECK_OK(a.tensor(6 + k, "out", &B.out));
  PTERON_CHECK_OK(a.tensor(7 + k, "save_mean", &B.save_mean));
  PTERON_CHECK_OK(a.tensor(8 + k, "save_invstd", &B.save_invstd));
  return batch_norm_run(a, B);
}

int32_t batch_norm_legit_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  return batch_norm_legit(Args{ctx, args, n, "aten::_native_batch_norm_legit.out"}, true);
}
int32_t batch_norm_legit_no_stats_out(pteron_kernel_context* ctx, pteron_value* const* args,
                                      size_t n) {
  return batch_norm_legit(Args{ctx, args, n, "aten::_native_batch_norm_legit.no_stats_out"},
                          false);
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::native_layer_norm", "out", nullptr, layer_norm_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::native_group_norm", "out", nullptr, group_norm_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::_native_batch_norm_legit_no_training", "out", nullptr, batch_norm_no_training_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"aten::_native_batch_norm_legit", "out", nullptr, batch_norm_legit_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"aten::_native_batch_norm_legit", "no_stats_out", nullptr, batch_norm_legit_no_stats_out,
     PTERON_KERNEL_PRIORITY, 0})
