// SPDX-License-Identifier: BSD-3-Clause
// unary.cpp - optimized float32 element-wise unary operators (out
// variants): aten::exp, sigmoid, tanh, gelu (approximate 'none' and
// 'tanh'), neg, sqrt, rsqrt, clamp (Scalar bounds), hardtanh and
// pow.Tensor_Scalar (exponent 2 and -1 as x * x and 1 / x). (hardswish,
// hardsigmoid and silu reach a program decomposed into these and mul / div.)
//
// The argument and dtype checks are kernels_portable's (activation.cpp,
// unary_math.cpp): the same helpers of runtime/kernels/common, the same
// messages. A float32 self (the registry key) computes in float32 for all of
// them; the out tensor may be any dtype float32 can be cast to.
//
// Fast path: out float32, self and out walked as one iteration space in
// out's memory order (opt_util.h make_iter), so contiguous and channels-last
// tensors alike become long unit-stride runs for the ISA loop. Other strides
// (a transposed view) and other out dtypes go through a small buffer: gather,
// the same ISA loop, scatter with conversion. Runs split over the thread pool.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "opt_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "tensor_checks.h"

namespace {

using namespace pteron_opt;
using namespace pteron::kern;

constexpr int64_t kGrain = 16384;
constexpr int64_t kChunk = 256;

// out = f(self) element-wise; self float32, out already resized to self's
// shape and of a dtype float32 casts to.
void run_unary(const pteron_tensor* self, pteron_tensor* out, Unary f, float p0, float p1) {
  const int64_t total = numel(out);
  if (total == 0) return;
  int64_t sx[PTERON_MAX_DIM] = {0}, zero[PTERON_MAX_DIM] = {0};
  broadcast_strides(self, out->dim, out->sizes, sx);
  Iter it;
  make_iter(out, sx, zero, &it);
  const float* px = static_cast<const float*>(self->data);
  const bool f32 = out->dtype == PTERON_DTYPE_FLOAT32;
  float* po = f32 ? static_cast<float*>(out->data) : nullptr;
  const IsaOps& isa = ops();
  const int32_t last = it.nd - 1;
  const int64_t xs = it.sa[last], os = it.so[last];
  parallel_for(0, total, kGrain, [&](int64_t begin, int64_t end) {
    for_runs(it, begin, end, [&](int64_t oo, int64_t ox, int64_t, int64_t len) {
      if (f32 && xs == 1 && os == 1) {
        isa.unary(f, px + ox, po + oo, len, p0, p1);
        return;
      }
      float buf[kChunk];
      for (int64_t i0 = 0; i0 < len; i0 += kChunk) {
        const int64_t m = len - i0 < kChunk ? len - i0 : kChunk;
        for (int64_t i = 0; i < m; ++i) buf[i] = px[ox + (i0 + i) * xs];
        isa.unary(f, buf, buf, m, p0, p1);
        if (f32) {
          for (int64_t i = 0; i < m; ++i) po[oo + (i0 + i) * os] = buf[i];
        } else {
          for (int64_t i = 0; i < m; ++i)
            store<float>(out->data, out->dtype, oo + (i0 + i) * os, buf[i]);
        }
      }
    });
  });
}

// self (argument 0, float32 by the key) and out (argument nargs - 1), read
// and checked as kernels_portable reads them (read_unary_args); out resized.
int32_t self_out(const Args& a, size_t nargs, pteron_tensor** self, pteron_tensor** out) {
  PTERON_CHECK_OK(read_unary_args(a, nargs, self, out));
  // Registered for float32 (PTERON_OPT_KEY): every other dtype is portable's.
  if ((*self)->dtype != PTERON_DTYPE_FLOAT32)
    return unsupported_dtype(a.ctx, a.op, "self", (*self)->dtype);
  if (!can_cast(PTERON_DTYPE_FLOAT32, (*out)->dtype))
    return cast_error(a.ctx, a.op, PTERON_DTYPE_FLOAT32, (*out)->dtype);
  return resize_out(a.ctx, a.op, "out", *out, (*self)->sizes, (*self)->dim);
}

int32_t simple(pteron_kernel_context* ctx, pteron_value* const* args, size_t n, const char* op,
               Unary f) {
  Args a{ctx, args, n, op};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(self_out(a, 2, &self, &out));
  run_unary(self, out, f, 0.0f, 0.0f);
  return PTERON_OK;
}

#define PTERON_OPT_UNARY(fn, opname, f)                                         \
  int32_t fn(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) { \
    return simple(ctx, args, n, opname, f);                                     \
  }

PTERON_OPT_UNARY(sigmoid_out, "aten::sigmoid.out", Unary::Sigmoid)
PTERON_OPT_UNARY(tanh_out, "aten::tanh.out", Unary::Tanh)
PTERON_OPT_UNARY(exp_out, "aten::exp.out", Unary::Exp)
PTERON_OPT_UNARY(neg_out, "aten::neg.out", Unary::Neg)
PTERON_OPT_UNARY(sqrt_out, "aten::sqrt.out", Unary::Sqrt)
PTERON_OPT_UNARY(rsqrt_out, "aten::rsqrt.out", Unary::Rsqrt)

#undef PTERON_OPT_UNARY

int32_t gelu_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::gelu.out"};
  PTERON_CHECK_OK(a.arity(3));
  bool use_tanh = false;
  PTERON_CHECK_OK(read_gelu_approximate(a, 1, &use_tanh));
  const Unary f = use_tanh ? Unary::GeluTanh : Unary::GeluErf;
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(self_out(a, 3, &self, &out));
  run_unary(self, out, f, 0.0f, 0.0f);
  return PTERON_OK;
}

// ---- clamp / hardtanh ---------------------------------------------------------

// Scalar bounds of a float32 self: the result type stays float32 (a scalar
// never promotes a floating tensor), bounds must fit float32. A NaN bound
// makes every element NaN (activation.cpp's clamp_one).
int32_t clamp_impl(const Args& a, bool has_lo, const Scalar& lo, bool has_hi, const Scalar& hi,
                   size_t nargs) {
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(self_out(a, nargs, &self, &out));
  if ((has_lo && !lo.fits<float>()) || (has_hi && !hi.fits<float>()))
    return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: a bound cannot be converted to %s without overflow", a.op,
                dtype_name(PTERON_DTYPE_FLOAT32));
  const float inf = std::numeric_limits<float>::infinity();
  const float l = has_lo ? lo.to<float>() : -inf, h = has_hi ? hi.to<float>() : inf;
  if (std::isnan(l) || std::isnan(h)) {
    // A NaN bound is the result of every element (a NaN x stays NaN anyway).
    const pteron_tensor* ins[1] = {self};
    map_elements<float, float>(ins, out,
                               [](float) { return std::numeric_limits<float>::quiet_NaN(); });
    return PTERON_OK;
  }
  run_unary(self, out, Unary::Clamp, l, h);
  return PTERON_OK;
}

int32_t clamp_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::clamp.out"};
  PTERON_CHECK_OK(a.arity(4));
  Scalar lo, hi;
  bool has_lo = false, has_hi = false;
  PTERON_CHECK_OK(read_clamp_bounds(a, &lo, &has_lo, &hi, &has_hi));
  return clamp_impl(a, has_lo, lo, has_hi, hi, 4);
}

int32_t hardtanh_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::hardtanh.out"};
  PTERON_CHECK_OK(a.arity(4));
  Scalar lo, hi;
  PTERON_CHECK_OK(read_scalar(a, 1, "min_val", &lo));
  PTERON_CHECK_OK(read_scalar(a, 2, "max_val", &hi));
  return clamp_impl(a, true, lo, true, hi, 4);
}

// ---- pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) ----

// kernels_portable's checks (read_binary_args, as binary_math.cpp's run_binary): a float32 self
// keeps float32 whatever the exponent's kind; out must be castable.
int32_t pow_tensor_scalar_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::pow.Tensor_Scalar_out"};
  BinaryOperands b;
  int32_t ct = 0;
  PTERON_CHECK_OK(read_binary_args(a, true, false, false, &b, &ct));
  if (b.self->dtype != PTERON_DTYPE_FLOAT32 || ct != PTERON_DTYPE_FLOAT32)
    return unsupported_dtype(ctx, a.op, "self", b.self->dtype);
  if (!can_cast(ct, b.out->dtype)) return cast_error(ctx, a.op, ct, b.out->dtype);
  PTERON_CHECK_OK(resize_binary_out(ctx, a.op, b));
  const float e = b.other_s.to<float>();
  const Unary f = e == 2.0f ? Unary::Square : (e == -1.0f ? Unary::Recip : Unary::Pow);
  run_unary(b.self, b.out, f, e, 0.0f);
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::pow", "Tensor_Scalar_out", PTERON_OPT_KEY, pow_tensor_scalar_out,
     PTERON_KERNEL_PRIORITY, 0},
    {"aten::sigmoid", "out", PTERON_OPT_KEY, sigmoid_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::tanh", "out", PTERON_OPT_KEY, tanh_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::gelu", "out", PTERON_OPT_KEY, gelu_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::exp", "out", PTERON_OPT_KEY, exp_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::neg", "out", PTERON_OPT_KEY, neg_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sqrt", "out", PTERON_OPT_KEY, sqrt_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::rsqrt", "out", PTERON_OPT_KEY, rsqrt_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::clamp", "out", PTERON_OPT_KEY, clamp_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::hardtanh", "out", PTERON_OPT_KEY, hardtanh_out, PTERON_KERNEL_PRIORITY, 0})
