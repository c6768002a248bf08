// SPDX-License-Identifier: BSD-3-Clause
// activation.cpp - portable activations: aten::relu, clamp (Scalar and
// Tensor bounds), hardtanh, sigmoid, tanh, gelu, hardswish, _softmax,
// _log_softmax (out variants).
//
// Every operator here accepts float16 and bfloat16 too, computing in float
// and rounding once (dispatch_compute / dispatch_float_half).
//
// Element-wise ops honour any dim order (for_each_broadcast); softmax walks
// the reduced dim with its stride, so it does too. NaN propagates as in
// PyTorch (clamp/relu/hardtanh keep a NaN input).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "softmax.h"
#include "strided_views.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

int32_t resize_and_cast_check(const Args& a, int32_t ct, pteron_tensor* self, pteron_tensor* out) {
  if (!can_cast(ct, out->dtype)) return cast_error(a.ctx, a.op, ct, out->dtype);
  return resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim);
}

// clamp(x, lo, hi) = min(max(x, lo), hi); NaN in x or a bound propagates.
template <typename C>
C clamp_one(C x, bool has_lo, C lo, bool has_hi, C hi) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(x)) return x;
    if (has_lo) x = std::isnan(lo) ? lo : (x < lo ? lo : x);
    if (has_hi) x = std::isnan(hi) ? hi : (x > hi ? hi : x);
    return x;
  } else {
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
  }
}

// ---- relu -------------------------------------------------------------------

int32_t relu_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::relu.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 2, &self, &out));
  if (self->dtype == PTERON_DTYPE_BOOL) return unsupported_dtype(ctx, a.op, "self", self->dtype);
  PTERON_CHECK_OK(resize_and_cast_check(a, self->dtype, self, out));
  dispatch_compute(self->dtype, [&](auto t) {
    using C = decltype(t);
    if constexpr (!std::is_same_v<C, bool>) {
      const pteron_tensor* ins[1] = {self};
      // x < 0 is false for NaN: NaN passes through, as in PyTorch
      map_elements<C, C>(ins, out, [](C x) { return x < C(0) ? C(0) : x; });
    }
  });
  return PTERON_OK;
}

// ---- clamp / hardtanh -------------------------------------------------------

// Scalar bounds; `promote` decides whether the bounds take part in the result
// type (clamp) or are converted to self's dtype (hardtanh).
int32_t clamp_scalar_impl(const Args& a, pteron_tensor* self, bool has_lo, const Scalar& lo,
                          bool has_hi, const Scalar& hi, bool promote, pteron_tensor* out) {
  int32_t ct = self->dtype;
  if (promote) {
    ResultType rt;
    rt.add_tensor(self);
    if (has_lo) rt.add_scalar(lo.kind);
    if (has_hi) rt.add_scalar(hi.kind);
    ct = rt.get();
  }
  if (ct == PTERON_DTYPE_BOOL) return unsupported_dtype(a.ctx, a.op, "self", ct);
  bool fits = true;
  dispatch_compute(ct, [&](auto t) {
    using C = decltype(t);
    fits = (!has_lo || lo.fits<C>()) && (!has_hi || hi.fits<C>());
  });
  if (!fits)
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: a bound cannot be converted to %s without overflow", a.op, dtype_name(ct));
  PTERON_CHECK_OK(resize_and_cast_check(a, ct, self, out));
  dispatch_compute(ct, [&](auto t) {
    using C = decltype(t);
    if constexpr (!std::is_same_v<C, bool>) {
      const C l = has_lo ? lo.to<C>() : C(0), h = has_hi ? hi.to<C>() : C(0);
      const pteron_tensor* ins[1] = {self};
      map_elements<C, C>(ins, out, [&](C x) { return clamp_one(x, has_lo, l, has_hi, h); });
    }
  });
  return PTERON_OK;
}

int32_t clamp_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::clamp.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 4, &self, &out));
  Scalar lo, hi;
  bool has_lo = false, has_hi = false;
  PTERON_CHECK_OK(read_clamp_bounds(a, &lo, &has_lo, &hi, &has_hi));
  return clamp_scalar_impl(a, self, has_lo, lo, has_hi, hi, true, out);
}

int32_t hardtanh_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::hardtanh.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 4, &self, &out));
  Scalar lo, hi;
  PTERON_CHECK_OK(read_scalar(a, 1, "min_val", &lo));
  PTERON_CHECK_OK(read_scalar(a, 2, "max_val", &hi));
  return clamp_scalar_impl(a, self, true, lo, true, hi, false, out);
}

int32_t clamp_tensor_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::clamp.Tensor_out"};
  pteron_tensor *self = nullptr, *out = nullptr, *lo = nullptr, *hi = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 4, &self, &out));
  PTERON_CHECK_OK(a.opt_tensor(1, "min", &lo));
  PTERON_CHECK_OK(a.opt_tensor(2, "max", &hi));
  if (!lo && !hi)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: at least one of 'min' or 'max' must not be None", a.op);
  ResultType rt;
  rt.add_tensor(self);
  if (lo) {
    PTERON_CHECK_OK(check_supported_half(ctx, a.op, "min", lo->dtype));
    PTERON_CHECK_OK(check_tensor(ctx, a.op, "min", lo));
    rt.add_tensor(lo);
  }
  if (hi) {
    PTERON_CHECK_OK(check_supported_half(ctx, a.op, "max", hi->dtype));
    PTERON_CHECK_OK(check_tensor(ctx, a.op, "max", hi));
    rt.add_tensor(hi);
  }
  const int32_t ct = rt.get();
  if (ct == PTERON_DTYPE_BOOL) return unsupported_dtype(ctx, a.op, "self", ct);
  if (!can_cast(ct, out->dtype)) return cast_error(ctx, a.op, ct, out->dtype);
  const pteron_tensor* all[3] = {self, lo, hi};
  int64_t shape[PTERON_MAX_DIM];
  int32_t nd = 0;
  if (!broadcast_shape_n(all, 3, shape, &nd)) return broadcast_error(ctx, a.op, self, lo ? lo : hi);
  PTERON_CHECK_OK(resize_out(ctx, a.op, "out", out, shape, nd));
  const bool has_lo = lo != nullptr, has_hi = hi != nullptr;
  dispatch_compute(ct, [&](auto t) {
    using C = decltype(t);
    if constexpr (!std::is_same_v<C, bool>) {
      // an absent bound is replaced by self and ignored
      const pteron_tensor* ins[3] = {self, lo ? lo : self, hi ? hi : self};
      map_elements<C, C>(ins, out,
                         [&](C x, C l, C h) { return clamp_one(x, has_lo, l, has_hi, h); });
    }
  });
  return PTERON_OK;
}

// ---- float-valued unary ops -------------------------------------------------

enum class Fn { Sigmoid, Tanh, GeluErf, GeluTanh, Hardswish };

template <typename C>
C apply(Fn f, C x) {
  switch (f) {
    case Fn::Sigmoid: return C(1) / (C(1) + std::exp(-x));
    case Fn::Tanh: return std::tanh(x);
    case Fn::GeluErf: return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
    case Fn::GeluTanh: {
      const C k = C(0.79788456080286535588);  // sqrt(2 / pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    }
    case Fn::Hardswish: {
      C r = x + C(3);
      r = r < C(0) ? C(0) : (r > C(6) ? C(6) : r);  // NaN stays NaN
      return x * r / C(6);
    }
  }
  return x;
}

// int_to_float: integer/bool inputs compute in float32 (sigmoid, tanh);
// otherwise only float32/float64 inputs are accepted (gelu, hardswish).
int32_t float_unary(const Args& a, pteron_tensor* self, pteron_tensor* out, Fn f,
                    bool int_to_float) {
  int32_t ct = self->dtype;
  if (!is_floating(ct)) {
    if (!int_to_float) return unsupported_dtype(a.ctx, a.op, "self", ct);
    ct = PTERON_DTYPE_FLOAT32;
  }
  PTERON_CHECK_OK(resize_and_cast_check(a, ct, self, out));
  dispatch_compute(ct, [&](auto t) {
    using C = decltype(t);
    if constexpr (std::is_floating_point_v<C>) {
      const pteron_tensor* ins[1] = {self};
      map_elements<C, C>(ins, out, [f](C x) { return apply<C>(f, x); });
    }
  });
  return PTERON_OK;
}

int32_t sigmoid_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::sigmoid.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 2, &self, &out));
  return float_unary(a, self, out, Fn::Sigmoid, true);
}

int32_t tanh_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::tanh.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 2, &self, &out));
  return float_unary(a, self, out, Fn::Tanh, true);
}

int32_t hardswish_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::hardswish.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 2, &self, &out));
  return float_unary(a, self, out, Fn::Hardswish, false);
}

int32_t gelu_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::gelu.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 3, &self, &out));
  bool use_tanh = false;
  PTERON_CHECK_OK(read_gelu_approximate(a, 1, &use_tanh));
  const Fn f = use_tanh ? Fn::GeluTanh : Fn::GeluErf;
  return float_unary(a, self, out, f, false);
}

// ---- softmax ----------------------------------------------------------------

int32_t softmax_impl(pteron_kernel_context* ctx, pteron_value* const* args, size_t n,
                     const char* op, bool log) {
  Args a{ctx, args, n, op};
  pteron_tensor *self = nullptr, *out = nullptr;
  int32_t d = 0;
  PTERON_CHECK_OK(read_softmax_args(a, &self, &out, &d));
  if (numel(self) == 0) return PTERON_OK;
  dispatch_float_half(self->dtype, [&](auto t) {
    using C = decltype(t);
    const C* x = static_cast<const C*>(self->data);
    C* y = static_cast<C*>(out->data);
    if (self->dim == 0) {
      softmax_lane(x, 0, y, 0, 1, log);
      return;
    }
    const int64_t len = self->sizes[d], xs = self->strides[d], ys = out->strides[d];
    for_each_lane(self, out, d,
                  [&](int64_t ox, int64_t oy) { softmax_lane(x + ox, xs, y + oy, ys, len, log); });
  });
  return PTERON_OK;
}

constexpr pteron_kernel_fn softmax_out = softmax_kernel<softmax_impl, false>;
constexpr pteron_kernel_fn log_softmax_out = softmax_kernel<softmax_impl, true>;

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::relu", "out", nullptr, relu_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::clamp", "out", nullptr, clamp_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::clamp", "Tensor_out", nullptr, clamp_tensor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::hardtanh", "out", nullptr, hardtanh_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sigmoid", "out", nullptr, sigmoid_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::tanh", "out", nullptr, tanh_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::gelu", "out", nullptr, gelu_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::hardswish", "out", nullptr, hardswish_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::_softmax", "out", nullptr, softmax_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::_log_softmax", "out", nullptr, log_softmax_out, PTERON_KERNEL_PRIORITY, 0})
