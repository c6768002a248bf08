// SPDX-License-Identifier: BSD-3-Clause
// unary_math.cpp - portable element-wise unary operators (out variants):
// aten::abs, acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, erf,
// exp, expm1, floor, log, log10, log1p, log2, neg, reciprocal, round, rsqrt,
// sign, sin, sinh, sqrt, tan, trunc, isinf, isnan, bitwise_not, logit, elu,
// leaky_relu, glu and _conj_physical.
//
// Every operator is one call of unary<Dtypes>() with the function of one
// element; the dtype rule of the operator (PyTorch's) is its Dtypes value,
// and compute() holds the one dtype dispatch of this file. Element-wise maps
// honour any dim order (for_each_broadcast); the result is converted to the
// out tensor's dtype when PyTorch's can_cast allows it. float16 / bfloat16
// compute in float (dispatch_compute: read as float, rounded once when
// stored), as PyTorch's CPU kernels do.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernel_util.h"
#include "arg_reading.h"
#include "dtype_convert.h"
#include "elementwise.h"
#include "tensor_checks.h"

namespace {

using namespace pteron::kern;

// The dtypes an operator accepts and the dtype it computes in.
enum class Dtypes {
  Float,      // integers and bool compute in float32, floats in their own dtype (exp, sin ...)
  FloatOnly,  // float32 and float64 only (elu, leaky_relu, glu)
  Real,       // integers and floats keep their dtype; bool is refused (abs, neg, ceil ...)
  All,        // every dtype keeps its dtype (sign, _conj_physical)
  Integral,   // integers and bool keep their dtype; floats are refused (bitwise_not)
  Predicate,  // every dtype; the result is bool (isinf, isnan)
};

// The computation dtype for input dtype `in`, or -1 if the operator refuses it.
template <Dtypes P>
int32_t compute_dtype(int32_t in) {
  switch (P) {
    case Dtypes::Float: return is_floating(in) ? in : PTERON_DTYPE_FLOAT32;
    case Dtypes::FloatOnly: return is_floating(in) ? in : -1;
    case Dtypes::Real: return in == PTERON_DTYPE_BOOL ? -1 : in;
    case Dtypes::Integral: return is_floating(in) ? -1 : in;
    case Dtypes::All:
    case Dtypes::Predicate: return in;
  }
  return -1;
}

// True if C++ type C is a computation type of P (compute_dtype can give it).
template <Dtypes P, typename C>
constexpr bool computes_in() {
  if constexpr (P == Dtypes::Float || P == Dtypes::FloatOnly)
    return std::is_floating_point_v<C>;
  else if constexpr (P == Dtypes::Real)
    return !std::is_same_v<C, bool>;
  else if constexpr (P == Dtypes::Integral)
    return !std::is_floating_point_v<C>;
  else
    return true;
}

// The one dtype dispatch: out = f(ins...) computed in dtype ct (a value of
// compute_dtype<P>), inputs converted to it, the result (bool for
// predicates) converted to out's dtype. out is already resized.
template <Dtypes P, size_t N, typename F>
void compute(int32_t ct, const pteron_tensor* const (&ins)[N], pteron_tensor* out, F&& f) {
  dispatch_compute(ct, [&](auto t) {
    using C = decltype(t);
    if constexpr (computes_in<P, C>()) {
      using R = std::conditional_t<P == Dtypes::Predicate, bool, C>;
      if constexpr (N == 1)
        map_elements<C, R>(ins, out, [&](C x) { return static_cast<R>(f(x)); });
      else
        map_elements<C, R>(ins, out, [&](C x, C y) { return static_cast<R>(f(x, y)); });
    }
  });
}

// Checks self's dtype against P and out's dtype against the result's (can_cast);
// gives the computation dtype.
template <Dtypes P>
int32_t check_dtypes(const Args& a, const pteron_tensor* self, const pteron_tensor* out,
                     int32_t* ct) {
  *ct = compute_dtype<P>(self->dtype);
  if (*ct < 0) return unsupported_dtype(a.ctx, a.op, "self", self->dtype);
  const int32_t rd = P == Dtypes::Predicate ? PTERON_DTYPE_BOOL : *ct;
  if (!can_cast(rd, out->dtype)) return cast_error(a.ctx, a.op, rd, out->dtype);
  return PTERON_OK;
}

// An element-wise unary operator of `nargs` schema arguments (self first,
// out last): out = f(self) element-wise, with P's dtype rule. f is generic
// over the computation type.
template <Dtypes P, typename F>
int32_t unary(const Args& a, size_t nargs, F&& f) {
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, nargs, &self, &out));
  int32_t ct = 0;
  PTERON_CHECK_OK(check_dtypes<P>(a, self, out, &ct));
  PTERON_CHECK_OK(resize_out(a.ctx, a.op, "out", out, self->sizes, self->dim));
  const pteron_tensor* ins[1] = {self};
  compute<P>(ct, ins, out, f);
  return PTERON_OK;
}

// ---- element functions that differ by dtype ----------------------------------

// Integer negation wraps (no signed-overflow UB): neg(INT_MIN) == INT_MIN, as
// in PyTorch; uint8 wraps modulo 256.
template <typename C>
C neg_of(C x) {
  if constexpr (std::is_integral_v<C>)
    return wrap_sub(C(0), x);
  else
    return -x;
}

template <typename C>
C abs_of(C x) {
  if constexpr (std::is_unsigned_v<C>)
    return x;
  else if constexpr (std::is_integral_v<C>)
    return x < C(0) ? wrap_sub(C(0), x) : x;
  else
    return std::fabs(x);
}

// -1, 0 or 1; NaN gives 0 and bool stays itself, as in PyTorch.
template <typename C>
C sign_of(C x) {
  if constexpr (std::is_same_v<C, bool>)
    return x;
  else
    return static_cast<C>((C(0) < x) - (x < C(0)));
}

// Integers are already whole: ceil, floor, round and trunc keep them.
template <typename C, typename G>
C whole(C x, G g) {
  if constexpr (std::is_floating_point_v<C>)
    return g(x);
  else
    return x;
}

template <typename C>
C bitwise_not_of(C x) {
  if constexpr (std::is_same_v<C, bool>)
    return !x;
  else
    return static_cast<C>(~x);
}

template <typename C>
bool is_inf_of(C x) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isinf(x);
  else
    return false;
}

template <typename C>
bool is_nan_of(C x) {
  if constexpr (std::is_floating_point_v<C>)
    return std::isnan(x);
  else
    return false;
}

// ---- the operators without further arguments -----------------------------------

#define PTERON_UNARY_OP(fn_name, op_name, dtypes, expr)                                        \
  int32_t fn_name(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {           \
    return unary<Dtypes::dtypes>(Args{ctx, args, n, op_name}, 2, [](auto x) { return expr; }); \
  }

PTERON_UNARY_OP(abs_out, "aten::abs.out", Real, abs_of(x))
PTERON_UNARY_OP(neg_out, "aten::neg.out", Real, neg_of(x))
PTERON_UNARY_OP(ceil_out, "aten::ceil.out", Real, whole(x, [](auto v) { return std::ceil(v); }))
PTERON_UNARY_OP(floor_out, "aten::floor.out", Real, whole(x, [](auto v) { return std::floor(v); }))
// half to even under the default rounding mode, as PyTorch rounds
PTERON_UNARY_OP(round_out, "aten::round.out", Real,
                whole(x, [](auto v) { return std::nearbyint(v); }))
PTERON_UNARY_OP(trunc_out, "aten::trunc.out", Real, whole(x, [](auto v) { return std::trunc(v); }))
PTERON_UNARY_OP(sign_out, "aten::sign.out", All, sign_of(x))
PTERON_UNARY_OP(conj_physical_out, "aten::_conj_physical.out", All, x)  // real: a copy
PTERON_UNARY_OP(bitwise_not_out, "aten::bitwise_not.out", Integral, bitwise_not_of(x))
PTERON_UNARY_OP(isinf_out, "aten::isinf.out", Predicate, is_inf_of(x))
PTERON_UNARY_OP(isnan_out, "aten::isnan.out", Predicate, is_nan_of(x))

PTERON_UNARY_OP(acos_out, "aten::acos.out", Float, std::acos(x))
PTERON_UNARY_OP(acosh_out, "aten::acosh.out", Float, std::acosh(x))
PTERON_UNARY_OP(asin_out, "aten::asin.out", Float, std::asin(x))
PTERON_UNARY_OP(asinh_out, "aten::asinh.out", Float, std::asinh(x))
PTERON_UNARY_OP(atan_out, "aten::atan.out", Float, std::atan(x))
PTERON_UNARY_OP(atanh_out, "aten::atanh.out", Float, std::atanh(x))
PTERON_UNARY_OP(cos_out, "aten::cos.out", Float, std::cos(x))
PTERON_UNARY_OP(cosh_out, "aten::cosh.out", Float, std::cosh(x))
PTERON_UNARY_OP(erf_out, "aten::erf.out", Float, std::erf(x))
PTERON_UNARY_OP(exp_out, "aten::exp.out", Float, std::exp(x))
PTERON_UNARY_OP(expm1_out, "aten::expm1.out", Float, std::expm1(x))
PTERON_UNARY_OP(log_out, "aten::log.out", Float, std::log(x))
PTERON_UNARY_OP(log10_out, "aten::log10.out", Float, std::log10(x))
PTERON_UNARY_OP(log1p_out, "aten::log1p.out", Float, std::log1p(x))
PTERON_UNARY_OP(log2_out, "aten::log2.out", Float, std::log2(x))
PTERON_UNARY_OP(reciprocal_out, "aten::reciprocal.out", Float, decltype(x)(1) / x)
PTERON_UNARY_OP(rsqrt_out, "aten::rsqrt.out", Float, decltype(x)(1) / std::sqrt(x))
PTERON_UNARY_OP(sin_out, "aten::sin.out", Float, std::sin(x))
PTERON_UNARY_OP(sinh_out, "aten::sinh.out", Float, std::sinh(x))
PTERON_UNARY_OP(sqrt_out, "aten::sqrt.out", Float, std::sqrt(x))
PTERON_UNARY_OP(tan_out, "aten::tan.out", Float, std::tan(x))

#undef PTERON_UNARY_OP

// ---- the operators with scalar arguments -----------------------------------------

// logit(self, float? eps=None, *, out): log(z / (1 - z)), z = self clamped to
// [eps, 1 - eps]; None (or a negative eps) does not clamp.
int32_t logit_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::logit.out"};
  PTERON_CHECK_OK(a.arity(3));
  double eps = -1;
  if (!a.is_none(1)) PTERON_CHECK_OK(a.real(1, "eps", &eps));
  return unary<Dtypes::Float>(a, 3, [eps](auto x) {
    using C = decltype(x);
    const C lo = C(eps), hi = C(1) - C(eps);
    const C z = lo < C(0) ? x : (x < lo ? lo : (x > hi ? hi : x));  // NaN stays NaN
    return std::log(z / (C(1) - z));
  });
}

// elu(self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1, *, out):
// x * scale for x > 0, else (exp(x * input_scale) - 1) * alpha * scale.
int32_t elu_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::elu.out"};
  PTERON_CHECK_OK(a.arity(5));
  Scalar alpha, scale, input_scale;
  PTERON_CHECK_OK(read_scalar(a, 1, "alpha", &alpha));
  PTERON_CHECK_OK(read_scalar(a, 2, "scale", &scale));
  PTERON_CHECK_OK(read_scalar(a, 3, "input_scale", &input_scale));
  return unary<Dtypes::FloatOnly>(a, 5, [&](auto x) {
    using C = decltype(x);
    const C pos = scale.to<C>(), neg = alpha.to<C>() * scale.to<C>(), in = input_scale.to<C>();
    return x > C(0) ? x * pos : std::expm1(x * in) * neg;  // NaN stays NaN
  });
}

// leaky_relu(self, Scalar negative_slope=0.01, *, out).
int32_t leaky_relu_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::leaky_relu.out"};
  PTERON_CHECK_OK(a.arity(3));
  Scalar slope;
  PTERON_CHECK_OK(read_scalar(a, 1, "negative_slope", &slope));
  return unary<Dtypes::FloatOnly>(a, 3, [&](auto x) {
    using C = decltype(x);
    return x > C(0) ? x : x * slope.to<C>();
  });
}

// glu(self, int dim=-1, *, out): a * sigmoid(b), a and b the two halves of
// self along dim (its size must be even).
int32_t glu_out(pteron_kernel_context* ctx, pteron_value* const* args, size_t n) {
  Args a{ctx, args, n, "aten::glu.out"};
  pteron_tensor *self = nullptr, *out = nullptr;
  PTERON_CHECK_OK(read_unary_args(a, 3, &self, &out));
  int64_t d = 0;
  PTERON_CHECK_OK(a.integer(1, "dim", &d));
  if (self->dim == 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT, "%s: glu does not take a 0-dim 'self'", a.op);
  const int64_t given = d;
  if (!wrap_dim(d, self->dim))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: dim %lld is out of range for a tensor of rank %d", a.op,
                static_cast<long long>(given), self->dim);
  if (self->sizes[d] % 2 != 0)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: size %lld of 'self' along dim %lld is not even", a.op,
                static_cast<long long>(self->sizes[d]), static_cast<long long>(given));
  PTERON_CHECK_OK(reject_alias(ctx, a.op, "out", out, self));
  int32_t ct = 0;
  PTERON_CHECK_OK(check_dtypes<Dtypes::FloatOnly>(a, self, out, &ct));
  // The two halves as tensors over self's storage (same strides).
  pteron_tensor first = *self, second = *self;
  const int64_t half = self->sizes[d] / 2;
  first.sizes[d] = second.sizes[d] = half;
  if (numel(self) > 0)
    second.data = static_cast<char*>(self->data) +
                  half * self->strides[d] * static_cast<int64_t>(dtype_size(self->dtype));
  PTERON_CHECK_OK(resize_out(ctx, a.op, "out", out, first.sizes, first.dim));
  const pteron_tensor* ins[2] = {&first, &second};
  compute<Dtypes::FloatOnly>(ct, ins, out, [](auto x, auto y) {
    using C = decltype(x);
    return x * (C(1) / (C(1) + std::exp(-y)));
  });
  return PTERON_OK;
}

}  // namespace

PTERON_REGISTER_KERNELS(
    {"aten::abs", "out", nullptr, abs_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::acos", "out", nullptr, acos_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::acosh", "out", nullptr, acosh_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::asin", "out", nullptr, asin_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::asinh", "out", nullptr, asinh_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::atan", "out", nullptr, atan_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::atanh", "out", nullptr, atanh_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::ceil", "out", nullptr, ceil_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::cos", "out", nullptr, cos_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::cosh", "out", nullptr, cosh_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::erf", "out", nullptr, erf_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::exp", "out", nullptr, exp_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::expm1", "out", nullptr, expm1_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::floor", "out", nullptr, floor_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::log", "out", nullptr, log_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::log10", "out", nullptr, log10_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::log1p", "out", nullptr, log1p_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::log2", "out", nullptr, log2_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::neg", "out", nullptr, neg_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::reciprocal", "out", nullptr, reciprocal_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::round", "out", nullptr, round_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::rsqrt", "out", nullptr, rsqrt_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sign", "out", nullptr, sign_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sin", "out", nullptr, sin_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sinh", "out", nullptr, sinh_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::sqrt", "out", nullptr, sqrt_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::tan", "out", nullptr, tan_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::trunc", "out", nullptr, trunc_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::isinf", "out", nullptr, isinf_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::isnan", "out", nullptr, isnan_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::bitwise_not", "out", nullptr, bitwise_not_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::logit", "out", nullptr, logit_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::elu", "out", nullptr, elu_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::leaky_relu", "out", nullptr, leaky_relu_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::glu", "out", nullptr, glu_out, PTERON_KERNEL_PRIORITY, 0},
    {"aten::_conj_physical", "out", nullptr, conj_physical_out, PTERON_KERNEL_PRIORITY, 0})
