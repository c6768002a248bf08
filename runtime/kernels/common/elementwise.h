// SPDX-License-Identifier: BSD-3-Clause
// elementwise.h - element-wise maps with broadcasting, the operand checks
// of the unary operators and of the binary ones (add, sub, mul, div and the
// rest; Tensor or Scalar other), shared by kernels_portable and kernels_optimized so both
// accept the same programs and report the same errors (header-only, private
// to the kernel libraries).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "arg_reading.h"
#include "dtype_convert.h"
#include "kernel_util.h"
#include "tensor_checks.h"

namespace pteron::kern {

// out = f(in_0, ..., in_{N-1}) element-wise with broadcasting (out already
// resized to the broadcast shape). Inputs are read converted to C, f returns
// R, the result is converted to out's dtype. When every dtype already matches
// the typed pointers are used directly. bool inputs always go through load()
// so a stray byte value in a bool tensor is never read as a bool object.
template <typename C, typename R, size_t N, typename F>
inline void map_elements(const pteron_tensor* const (&ins)[N], pteron_tensor* out, F&& f) {
  static_assert(N >= 1 && N <= 3, "1 to 3 inputs");
  bool direct = !std::is_same_v<C, bool> && out->dtype == dtype_of<R>();
  for (size_t k = 0; k < N; ++k) direct = direct && ins[k]->dtype == dtype_of<C>();
  if (direct) {
    R* o = static_cast<R*>(out->data);
    const C* p[N];
    for (size_t k = 0; k < N; ++k) p[k] = static_cast<const C*>(ins[k]->data);
    if constexpr (N == 1)
      for_each_broadcast(out, ins, [&](int64_t oi, int64_t a) { o[oi] = f(p[0][a]); });
    else if constexpr (N == 2)
      for_each_broadcast(out, ins,
                         [&](int64_t oi, int64_t a, int64_t b) { o[oi] = f(p[0][a], p[1][b]); });
    else
      for_each_broadcast(out, ins, [&](int64_t oi, int64_t a, int64_t b, int64_t c) {
        o[oi] = f(p[0][a], p[1][b], p[2][c]);
      });
    return;
  }
  void* od = out->data;
  const int32_t odt = out->dtype;
  const void* p[N];
  int32_t dt[N];
  for (size_t k = 0; k < N; ++k) {
    p[k] = ins[k]->data;
    dt[k] = ins[k]->dtype;
  }
  if constexpr (N == 1)
    for_each_broadcast(out, ins, [&](int64_t oi, int64_t a) {
      store<R>(od, odt, oi, f(load<C>(p[0], dt[0], a)));
    });
  else if constexpr (N == 2)
    for_each_broadcast(out, ins, [&](int64_t oi, int64_t a, int64_t b) {
      store<R>(od, odt, oi, f(load<C>(p[0], dt[0], a), load<C>(p[1], dt[1], b)));
    });
  else
    for_each_broadcast(out, ins, [&](int64_t oi, int64_t a, int64_t b, int64_t c) {
      store<R>(od, odt, oi,
               f(load<C>(p[0], dt[0], a), load<C>(p[1], dt[1], b), load<C>(p[2], dt[2], c)));
    });
}

// ---- unary operators ----

// self (argument 0) and out (argument nargs - 1) of an element-wise unary
// operator, checked: dtypes kernels_portable computes in (float16 and
// bfloat16 included) and self's metadata.
inline int32_t read_unary_args(const Args& a, size_t nargs, pteron_tensor** self,
                               pteron_tensor** out) {
  PTERON_CHECK_OK(a.arity(nargs));
  PTERON_CHECK_OK(a.tensor(0, "self", self));
  PTERON_CHECK_OK(a.tensor(nargs - 1, "out", out));
  PTERON_CHECK_OK(check_supported_half(a.ctx, a.op, "self", (*self)->dtype));
  PTERON_CHECK_OK(check_supported_half(a.ctx, a.op, "out", (*out)->dtype));
  return check_tensor(a.ctx, a.op, "self", *self);
}

// ---- binary arithmetic (add, sub, mul, div: Tensor or Scalar other) ----

// The operands of add/sub/mul/div(.Scalar)(.out): self, other (a tensor, or
// other_s for the .Scalar overloads), alpha (Int 1 when absent), out.
// div's rounding_mode: None (true division), 'trunc' or 'floor'.
enum class RoundingMode { None, Trunc, Floor };

struct BinaryOperands {
  pteron_tensor *self = nullptr, *other = nullptr, *out = nullptr;
  Scalar other_s, alpha;
  RoundingMode rounding = RoundingMode::None;  // div's rounding_mode
};

// Reads self (argument 0), other (1: tensor, or Scalar when scalar_other)
// and alpha (2, when has_alpha). `out` is left to the caller: its index
// depends on the operator's further arguments (rounding_mode).
inline int32_t read_binary_inputs(const Args& a, bool scalar_other, bool has_alpha,
                                  BinaryOperands* b) {
  b->alpha.kind = ScalarKind::Int;
  b->alpha.i = 1;
  b->alpha.d = 1;
  PTERON_CHECK_OK(a.tensor(0, "self", &b->self));
  if (scalar_other)
    PTERON_CHECK_OK(read_scalar(a, 1, "other", &b->other_s));
  else
    PTERON_CHECK_OK(a.tensor(1, "other", &b->other));
  if (has_alpha) PTERON_CHECK_OK(read_scalar(a, 2, "alpha", &b->alpha));
  return PTERON_OK;
}

// Checks the dtypes and storage of self, other and out, and gives the
// computation dtype: PyTorch's result_type of self and other (a Scalar other
// only by its kind). float16 and bfloat16 are accepted: a caller computes them
// with dispatch_compute (load/store convert them), or refuses them itself.
inline int32_t binary_result_type(pteron_kernel_context* ctx, const char* op,
                                  const BinaryOperands& b, int32_t* ct) {
  PTERON_CHECK_OK(check_supported_half(ctx, op, "self", b.self->dtype));
  if (b.other) PTERON_CHECK_OK(check_supported_half(ctx, op, "other", b.other->dtype));
  PTERON_CHECK_OK(check_supported_half(ctx, op, "out", b.out->dtype));
  PTERON_CHECK_OK(check_tensor(ctx, op, "self", b.self));
  if (b.other) PTERON_CHECK_OK(check_tensor(ctx, op, "other", b.other));
  ResultType rt;
  rt.add_tensor(b.self);
  if (b.other)
    rt.add_tensor(b.other);
  else
    rt.add_scalar(b.other_s.kind);
  *ct = rt.get();
  return PTERON_OK;
}

// Reads and checks every argument of a binary operator: self, other (a
// tensor, or a Scalar when scalar_other), alpha (when has_alpha), div's
// rounding_mode (when has_mode) and out, the last; then binary_result_type
// gives the computation dtype.
inline int32_t read_binary_args(const Args& a, bool scalar_other, bool has_alpha, bool has_mode,
                                BinaryOperands* b, int32_t* ct) {
  const size_t out_i = 2 + (has_alpha ? 1 : 0) + (has_mode ? 1 : 0);
  PTERON_CHECK_OK(a.arity(out_i + 1));
  PTERON_CHECK_OK(read_binary_inputs(a, scalar_other, has_alpha, b));
  if (has_mode) {
    char mode[16];
    bool present = false;
    PTERON_CHECK_OK(read_opt_string(a, 2, "rounding_mode", mode, sizeof mode, &present));
    if (!present)
      b->rounding = RoundingMode::None;
    else if (std::strcmp(mode, "trunc") == 0)
      b->rounding = RoundingMode::Trunc;
    else if (std::strcmp(mode, "floor") == 0)
      b->rounding = RoundingMode::Floor;
    else
      return fail(a.ctx, PTERON_ERROR_INVALID_ARGUMENT,
                  "%s: rounding_mode must be None, 'trunc' or 'floor', got '%s'", a.op, mode);
  }
  PTERON_CHECK_OK(a.tensor(out_i, "out", &b->out));
  return binary_result_type(a.ctx, a.op, *b, ct);
}

// PyTorch's alpha rules for computing in dtype ct: a bool alpha only for
// bool results, a float alpha only for floating ones, and a value that fits
// ct.
inline int32_t check_binary_alpha(pteron_kernel_context* ctx, const char* op,
                                  const BinaryOperands& b, int32_t ct) {
  if (b.alpha.kind == ScalarKind::Bool && ct != PTERON_DTYPE_BOOL)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: boolean alpha only supported for boolean results", op);
  if (b.alpha.kind == ScalarKind::Float && !is_floating(ct))
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: for integral input tensors, alpha must not be a floating point number", op);
  bool fits = true;
  dispatch_compute(ct, [&](auto t) { fits = b.alpha.fits<decltype(t)>(); });
  if (!fits)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: alpha cannot be converted to %s without overflow", op, dtype_name(ct));
  return PTERON_OK;
}

// Python-style floor division of floats (torch.floor_divide, div's
// rounding_mode='floor').
template <typename T>
inline T floor_div_float(T a, T b) {
  if (b == T(0)) return a / b;  // IEEE: +-inf or nan
  const T rem = std::fmod(a, b);
  T quot = (a - rem) / b;
  if (rem != T(0) && ((b < T(0)) != (rem < T(0)))) quot -= T(1);
  if (quot == T(0)) return std::copysign(T(0), a / b);
  T result = std::floor(quot);
  if (quot - result > T(0.5)) result += T(1);
  return result;
}

// Integer division rounded toward zero, or toward -inf when floor; the
// divisor is not 0 (the caller checks). MIN / -1 wraps to MIN.
template <typename T>
inline T int_div(T a, T b, bool floor) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrap_sub<T>(T(0), a);
    T q = static_cast<T>(a / b);
    if (floor && static_cast<T>(a % b) != T(0) && ((a < 0) != (b < 0))) q = static_cast<T>(q - 1);
    return q;
  } else {
    (void)floor;
    return static_cast<T>(a / b);
  }
}

// sub refuses bool operands, as PyTorch does.
inline int32_t reject_bool_subtraction(pteron_kernel_context* ctx, const char* op,
                                       const BinaryOperands& b) {
  const bool other_bool =
      b.other ? b.other->dtype == PTERON_DTYPE_BOOL : b.other_s.kind == ScalarKind::Bool;
  if (b.self->dtype == PTERON_DTYPE_BOOL || other_bool)
    return fail(ctx, PTERON_ERROR_INVALID_ARGUMENT,
                "%s: subtraction with a bool operand is not supported "
                "(use logical_xor / logical_not)",
                op);
  return PTERON_OK;
}

// Resizes out to the broadcast shape of self and other (self's shape for a
// Scalar other); PTERON_ERROR_SHAPE_MISMATCH naming both shapes otherwise.
inline int32_t resize_binary_out(pteron_kernel_context* ctx, const char* op,
                                 const BinaryOperands& b) {
  int64_t shape[PTERON_MAX_DIM];
  int32_t nd = 0;
  if (b.other) {
    if (!broadcast_shape(b.self, b.other, shape, &nd))
      return broadcast_error(ctx, op, b.self, b.other);
  } else {
    nd = b.self->dim;
    for (int32_t i = 0; i < nd; ++i) shape[i] = b.self->sizes[i];
  }
  return resize_out(ctx, op, "out", b.out, shape, nd);
}

}  // namespace pteron::kern
